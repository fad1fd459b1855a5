"""Finding metadata's column names in the data, and the errors transformers raise when they can't.

Metadata is written by people (``Customer_ID``) and data comes from files and databases
(``customer_id``): every lookup ignores case. An exact match wins over a case-insensitive one, so a
frame holding both ``ID`` and ``id`` still resolves ``id``; two case-insensitive candidates and no
exact one is ambiguous and an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import polars as pl

from datacoolie_core.errors import TransformError
from datacoolie_core.models.coerce import did_you_mean
from datacoolie_core.sql import SqlExpressionError, compile_expression
from datacoolie_core.transforms.base import TransformContext

_IGNORE_HINT = "fix the name, or set transform.configure.missing_column_policy to 'ignore' to skip it"
_STRICT_HINT = "fix the name; this column must exist whatever missing_column_policy says"


def transform_error(ctx: TransformContext, message: str, hint: str) -> TransformError:
    """A :class:`TransformError` naming the dataflow, saying what is wrong and ending with a hint."""
    return TransformError(f"dataflow '{ctx.dataflow.name}': {message}; {hint}")


def find_column(names: Sequence[str], wanted: str) -> str | None:
    """The data's column named ``wanted`` ignoring case (exact spelling first), or ``None``.

    Raises:
        TransformError: no exact match and several columns differ from ``wanted`` only by case.
    """
    if wanted in names:
        return wanted
    matches = [name for name in names if name.lower() == wanted.lower()]
    if len(matches) > 1:
        raise TransformError(
            f"column '{wanted}' matches {matches} ignoring case; rename the source columns or spell the name exactly"
        )
    return matches[0] if matches else None


def missing_column_error(
    ctx: TransformContext, key: str, column: str, names: Sequence[str], *, hint: str = _IGNORE_HINT
) -> TransformError:
    """The error for metadata ``key`` naming ``column``, which the data lacks."""
    return transform_error(
        ctx,
        f"{key} names column '{column}', which is not in the data{did_you_mean(column, names)} "
        f"(columns: {', '.join(names)})",
        hint,
    )


def ignores_missing(ctx: TransformContext) -> bool:
    """True when ``transform.configure.missing_column_policy`` is ``ignore``."""
    return ctx.dataflow.transform.configure.missing_column_policy == "ignore"


def resolve_columns(
    ctx: TransformContext, names: Sequence[str], wanted: Iterable[str], *, key: str, strict: bool = False
) -> list[str]:
    """The data's names of ``wanted``, in order; missing ones skipped when the policy is ``ignore``.

    Args:
        ctx: the execution context (for the policy and the dataflow name).
        names: the frame's column names.
        wanted: column names as written in metadata.
        key: the metadata key the names come from, for the error (``transform.value_rules[0].columns``).
        strict: a missing column is an error whatever the policy (dedup keys and order columns).

    Raises:
        TransformError: a column is missing and the policy is ``error`` (or ``strict``).
    """
    resolved: list[str] = []
    for column in wanted:
        found = find_column(names, column)
        if found is not None:
            resolved.append(found)
        elif strict:
            raise missing_column_error(ctx, key, column, names, hint=_STRICT_HINT)
        elif not ignores_missing(ctx):
            raise missing_column_error(ctx, key, column, names)
    return resolved


def column_names(frame: pl.LazyFrame) -> list[str]:
    """The frame's column names (resolving the schema only; nothing is computed)."""
    return frame.collect_schema().names()


def reserved_match(name: str, reserved: Iterable[str]) -> str | None:
    """The member of ``reserved`` equal to ``name`` ignoring case, or ``None``."""
    return next((r for r in reserved if r.lower() == name.lower()), None)


def compile_sql(ctx: TransformContext, sql: str, schema: pl.Schema, *, key: str) -> pl.Expr:
    """``sql`` from metadata ``key`` compiled against the frame's current ``schema``.

    ``NOW()``/``CURRENT_TIMESTAMP`` evaluate to ``ctx.run_time``, the instant of the system columns.

    Raises:
        TransformError: the expression names a column the data lacks or uses unsupported SQL.
    """
    try:
        return compile_expression(sql, schema=schema, now=ctx.run_time)
    except SqlExpressionError as e:
        raise transform_error(ctx, f"{key}: {e}", "fix the expression in the metadata") from e


def dtype_of(frame: pl.LazyFrame, expr: pl.Expr) -> pl.DataType:
    """The dtype ``expr`` has over ``frame`` (schema resolution only; nothing is computed)."""
    return frame.select(expr.alias("value")).collect_schema()["value"]
