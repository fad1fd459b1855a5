"""Finding metadata's column names in the data: ONE rule for every metadata key that names a column.

Metadata is written by people against the source (``Order ID``, ``Customer_ID``), while the
column-name sanitizer (slot 90) makes the written table's names (``order_id``). A name in metadata
may use either spelling, and it is resolved the same way wherever it is used, by three tiers:

1. **exactly** as spelled;
2. else **ignoring case** (DataCoolie and Spark resolve names case-insensitively);
3. else **through the sanitizer**: the column whose sanitized name equals the wanted name's
   sanitized name, in the run's ``column_name_mode`` (``Order ID``, ``order id`` and ``order_id``
   all name one column; in ``snake`` mode so do ``OrderDate`` and ``order_date``).

The first tier that finds anything decides; two candidates in that tier are an error (never a
guess). Slots before 90 see source names, the writer sees sanitized names: with this rule the same
metadata works on both sides of the sanitizer. SQL expressions are not names: their identifiers
resolve as Spark resolves them (ignoring case), against the columns of their slot.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import polars as pl

from datacoolie_core.errors import TransformError
from datacoolie_core.models.dataflow import Destination
from datacoolie_core.suggestions import did_you_mean
from datacoolie_core.transforms.base import ColumnNameMode, TransformContext
from datacoolie_core.transforms.column_names import sanitize_name

if TYPE_CHECKING:
    from datacoolie_core.destinations.base import ReplaceWindow

_IGNORE_HINT = "fix the name, or set transform.configure.missing_column_policy to 'ignore' to skip it"
_STRICT_HINT = "fix the name; this column must exist whatever missing_column_policy says"


def transform_error(ctx: TransformContext, message: str, hint: str) -> TransformError:
    """A :class:`TransformError` naming the dataflow, saying what is wrong and ending with a hint."""
    return TransformError(f"dataflow '{ctx.dataflow.name}': {message}; {hint}")


@lru_cache(maxsize=8192)
def name_key(name: str, mode: ColumnNameMode = "lower") -> str:
    """What two spellings of one column have in common: the sanitized name, ignoring case.

    Cached: the reserved-name checks of every slot ask it for every column against every system
    column (~200 regex passes a dataflow otherwise); a run sees few distinct names.
    """
    return sanitize_name(name, mode).lower()


def same_column(a: str, b: str, mode: ColumnNameMode = "lower") -> bool:
    """Whether two metadata names name one column (they sanitize to the same name)."""
    return name_key(a, mode) == name_key(b, mode)


def find_column(names: Sequence[str], wanted: str, mode: ColumnNameMode = "lower") -> str | None:
    """The data's column that ``wanted`` names (exact, else ignoring case, else sanitized), or ``None``.

    Args:
        names: the frame's column names.
        wanted: a column name as metadata spells it.
        mode: the run's ``column_name_mode``.

    Raises:
        TransformError: the first tier that matches finds several columns.

    Example:
        >>> find_column(["Order ID", "Unit Price (€)"], "order_id")
        'Order ID'
        >>> find_column(["order_id", "unit_price"], "Unit Price (€)")
        'unit_price'
    """
    if wanted in names:
        return wanted
    tiers = (
        ("ignoring case", lambda name: name.lower() == wanted.lower()),
        (f"after sanitizing ({mode})", lambda name: name_key(name, mode) == name_key(wanted, mode)),
    )
    for how, matches_wanted in tiers:
        matches = [name for name in names if matches_wanted(name)]
        if len(matches) > 1:
            raise TransformError(
                f"column '{wanted}' matches {matches} {how}; rename the source columns or spell the name exactly"
            )
        if matches:
            return matches[0]
    return None


def final_names(names: Sequence[str], wanted: Iterable[str], mode: ColumnNameMode = "lower") -> list[str]:
    """``wanted`` in the data's spelling, duplicates dropped; a name not found is kept as written."""
    return list(dict.fromkeys(find_column(names, name, mode) or name for name in wanted))


def final_destination(destination: Destination, names: Sequence[str], mode: ColumnNameMode = "lower") -> Destination:
    """``destination`` with its merge keys and partition columns spelled as the (sanitized) data has them.

    The writer matches names only ignoring case; this gives it the names the sanitizer produced,
    so ``merge_keys: ["Order ID"]`` writes against the column ``order_id``. Names the data lacks stay
    as written, for the writer's own error.
    """
    partitions = [p.model_copy(update={"column": find_column(names, p.column, mode) or p.column})
                  for p in destination.partition_columns]  # fmt: skip
    return destination.model_copy(
        update={"merge_keys": final_names(names, destination.merge_keys, mode), "partition_columns": partitions}
    )


def final_window(
    window: ReplaceWindow | None, names: Sequence[str], mode: ColumnNameMode = "lower"
) -> ReplaceWindow | None:
    """A ``replace_by_watermark`` window keyed by the (sanitized) data's column names, not the watermark's keys."""
    if window is None:
        return None
    bounds = {find_column(names, column, mode) or column: bound for column, bound in window.bounds.items()}
    return dataclasses.replace(window, bounds=bounds)


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
        found = find_column(names, column, ctx.column_name_mode)
        if found is not None:
            resolved.append(found)
        elif strict:
            raise missing_column_error(ctx, key, column, names, hint=_STRICT_HINT)
        elif not ignores_missing(ctx):
            raise missing_column_error(ctx, key, column, names)
    return list(dict.fromkeys(resolved))  # two spellings of one column name it once


def column_names(frame: pl.LazyFrame) -> list[str]:
    """The frame's column names (resolving the schema only; nothing is computed)."""
    return frame.collect_schema().names()


def reserved_match(name: str, reserved: Iterable[str], mode: ColumnNameMode = "lower") -> str | None:
    """The member of ``reserved`` naming the same column as ``name`` (see :func:`same_column`), or ``None``."""
    return next((r for r in reserved if same_column(r, name, mode)), None)


def compile_sql(ctx: TransformContext, sql: str, schema: pl.Schema, *, key: str) -> pl.Expr:
    """``sql`` from metadata ``key`` compiled against the frame's current ``schema``.

    ``NOW()``/``CURRENT_TIMESTAMP`` evaluate to ``ctx.run_time``, the instant of the system columns;
    ``spark.sql.ansi.enabled`` in the dataflow's or a connection's ``configure`` turns ANSI mode on.

    Raises:
        TransformError: the expression names a column the data lacks or uses unsupported SQL.
    """
    # sqlglot loads with the first expression compiled: a dataflow without SQL never pays for it
    from datacoolie_core.sql.ansi import enabled_for
    from datacoolie_core.sql.parse import SqlExpressionError
    from datacoolie_core.sql.to_polars import compile_expression

    try:
        return compile_expression(sql, schema=schema, now=ctx.run_time, ansi=enabled_for(ctx.dataflow))
    except SqlExpressionError as e:
        raise transform_error(ctx, f"{key}: {e}", "fix the expression in the metadata") from e


def dtype_of(frame: pl.LazyFrame, expr: pl.Expr) -> pl.DataType:
    """The dtype ``expr`` has over ``frame`` (schema resolution only; nothing is computed)."""
    return frame.select(expr.alias("value")).collect_schema()["value"]
