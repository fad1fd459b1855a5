"""The shape of a function handler, shared by the function families and the compiler.

A handler compiles one sqlglot node to a Polars expression. It receives the :class:`Compiler`
(``c.compile(node)``, ``c.dtype(node)``, ``c.now``, ``c.text``) and the node; the helpers below
read arguments the way Spark does (:func:`text`, :func:`number`, :func:`literal`). A family module
exports ``NODES`` (handlers by sqlglot node type) and ``NAMES`` (handlers for functions sqlglot
parses as ``exp.Anonymous``, by upper name), plus ``SUPPORTED`` (the Spark names it implements, for
the docs and the error message).

Spark's implicit casts (a number given to a string function, a string given to a math function)
are compiled as the compiler's own ``CAST`` (:func:`cast`), so they follow its Spark semantics.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.parse import READ_DIALECT, SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

Handler = Callable[["Compiler", Any], pl.Expr]


def unary(op: Callable[[pl.Expr], pl.Expr]) -> Handler:
    """A handler applying ``op`` to the node's only argument."""
    return lambda c, n: op(c.arg(n))


def args(node: exp.Expression) -> list[exp.Expression]:
    """The positional arguments of a function node (``this`` then ``expressions``)."""
    first = node.args.get("this")
    rest = list(node.expressions)
    return ([first] if isinstance(first, exp.Expression) else []) + rest


def arity(c: Compiler, node: exp.Expression, low: int, high: int | None = None) -> list[exp.Expression]:
    """The arguments of ``node``, checked to number between ``low`` and ``high``."""
    given = args(node)
    top = low if high is None else high
    if not low <= len(given) <= top:
        name = str(node.name).upper() if isinstance(node, exp.Anonymous) else type(node).__name__.upper()
        count = str(low) if top == low else f"{low} to {top}"
        raise SqlExpressionError(f"{name} takes {count} arguments, got {len(given)} (in {c.text!r})")
    return given


def dtype(c: Compiler, node: exp.Expression) -> pl.DataType | None:
    """The Polars dtype ``node`` compiles to, when the schema is known (``None`` while validating)."""
    if c.schema is None:
        return None
    return c.dtype(node)


def expr_dtype(c: Compiler, expr: pl.Expr) -> pl.DataType | None:
    """The dtype of a compiled expression over the schema (``None`` while validating)."""
    if c.schema is None:
        return None
    try:
        return pl.LazyFrame(schema=c.schema).select(expr.alias("_")).collect_schema()["_"]
    except pl.exceptions.PolarsError as e:
        raise SqlExpressionError(f"an argument has no valid type: {e} (in {c.text!r})") from None


def cast(c: Compiler, node: exp.Expression, to: str) -> pl.Expr:
    """``node`` as Spark type ``to``: the compiler's ``CAST`` unless it already is of that type."""
    target = exp.DataType.build(to, dialect=READ_DIALECT)
    if isinstance(node, exp.Cast) and node.to == target:
        return c.compile(node)
    return c.compile(exp.Cast(this=node.copy(), to=target))


def text(c: Compiler, node: exp.Expression) -> pl.Expr:
    """A string argument: strings as they are, anything else cast the way Spark casts it."""
    if isinstance(node, exp.Literal) and node.is_string:
        return c.compile(node)
    found = dtype(c, node)
    if found is None or found == pl.String:
        return c.compile(node)
    return cast(c, node, "STRING")


def number(c: Compiler, node: exp.Expression, to: str = "DOUBLE") -> pl.Expr:
    """A numeric argument of Spark type ``to`` (``DOUBLE``, ``INT``, ``BIGINT``).

    Raises:
        SqlExpressionError: a BOOLEAN or date/time argument, which Spark does not cast implicitly.
    """
    found = dtype(c, node)
    if found is not None and (found == pl.Boolean or found.is_temporal()):
        raise SqlExpressionError(f"'{node.sql(dialect=READ_DIALECT)}' is {found}, not a number (in {c.text!r})")
    return cast(c, node, to)


def literal(c: Compiler, node: exp.Expression | None, what: str) -> Any:
    """The Python value of a literal argument (string, number, or NULL as ``None``)."""
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        return str(node.this) if node.is_string else _number(str(node.this))
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return -_number(str(node.this.this))
    raise SqlExpressionError(
        f"{what} must be a literal, got {node.sql(dialect=READ_DIALECT) if node else None!r} (in {c.text!r})"
    )


def _number(text: str) -> int | float:
    return float(text) if any(ch in text for ch in ".eE") else int(text)
