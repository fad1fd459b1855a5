"""Spark SQL LEVENSHTEIN and FORMAT_NUMBER: computed row by row in Python, as Polars has neither.

Exact (the oracle compares them with Spark) but far slower than native expressions on large loads,
like the digests.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Context, Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions.registry import Handler, arity, dtype, literal, number, text
from datacoolie_core.sql.parse import READ_DIALECT, SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler


def _rows(columns: list[pl.Expr], function: Callable[..., Any], out: pl.DataType) -> pl.Expr:
    """``function`` over each row's values (NULL when any is NULL), as a Polars expression."""

    def batch(rows: pl.Series) -> pl.Series:
        values = []
        for row in rows.to_list():
            items = list(row.values())
            values.append(None if any(v is None for v in items) else function(*items))
        return pl.Series(rows.name, values, dtype=out)

    named = [column.alias(f"a{k}") for k, column in enumerate(columns)]
    return pl.struct(named).map_batches(batch, return_dtype=out, is_elementwise=True)


def levenshtein_distance(left: str, right: str) -> int:
    """Edits (insert, delete, substitute one code point) from ``left`` to ``right``."""
    if len(left) < len(right):
        left, right = right, left
    previous = list(range(len(right) + 1))
    for i, a in enumerate(left, 1):
        current = [i]
        for j, b in enumerate(right, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        previous = current
    return previous[-1]


def _levenshtein(c: Compiler, node: exp.Levenshtein) -> pl.Expr:
    # sqlglot files Spark's third argument, the threshold, under ins_cost
    c.allow_args(node, "this", "expression", "ins_cost")
    left, right = text(c, node.this), text(c, node.args["expression"])
    if node.args.get("ins_cost") is None:
        return _rows([left, right], levenshtein_distance, pl.Int32())
    if isinstance(node.args["ins_cost"], exp.Null):
        return pl.lit(None, dtype=pl.Int32)
    # Spark reads a NULL threshold from a column as 0 (its unboxing of NULL)
    threshold = number(c, node.args["ins_cost"], "INT").fill_null(0)

    def bounded(a: str, b: str, limit: int) -> int:
        distance = levenshtein_distance(a, b)
        return -1 if distance > limit else distance

    return _rows([left, right, threshold], bounded, pl.Int32())


_MAX_DIGITS = 100
_WIDE = Context(prec=1000)  # every digit of a double up to 1.8e308, plus the decimal places


def format_number_text(value: Any, digits: int) -> str:
    """Java's ``DecimalFormat('#,##0.00…')``: grouping, HALF_EVEN on the exact value, a kept minus sign."""
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "∞" if value > 0 else "-∞"
    # a double's shortest digits (Java's DigitList), except at a tie of those digits, where the exact
    # binary value decides (DecimalFormat since JDK 8: 1.005 is below the tie, 0.125 is the tie)
    exact = Decimal(value)
    shown = Decimal(repr(value)) if isinstance(value, float) else exact
    if _WIDE.remainder(abs(shown.scaleb(digits, context=_WIDE)), Decimal(1)) == Decimal("0.5"):
        shown = exact
    rounded = shown.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_EVEN, context=_WIDE)
    text = f"{abs(rounded):,.{digits}f}"
    return "-" + text if rounded.is_signed() else text


def _format_number(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    value_node, digits_node = arity(c, node, 2)
    digits = literal(c, digits_node, "the FORMAT_NUMBER decimal places")
    if isinstance(digits, str):
        raise SqlExpressionError(
            f"FORMAT_NUMBER with a DecimalFormat pattern ({digits!r}) is not supported; give the number of "
            f"decimal places (in {c.text!r})"
        )
    found = dtype(c, value_node)
    if found is not None and not found.is_numeric() and found != pl.Null():  # Spark casts no STRING here
        raise SqlExpressionError(
            f"FORMAT_NUMBER takes a number, got {found} in '{value_node.sql(dialect=READ_DIALECT)}' (in {c.text!r})"
        )
    if digits is None or digits < 0:  # Spark: NULL for a negative count
        return pl.lit(None, dtype=pl.String)
    if not isinstance(digits, int) or digits > _MAX_DIGITS:
        raise SqlExpressionError(f"FORMAT_NUMBER decimal places must be an integer up to {_MAX_DIGITS} (in {c.text!r})")
    value = c.compile(value_node)

    def render(v: Any) -> str | None:
        try:
            return format_number_text(v, digits)
        except InvalidOperation:
            return None

    return _rows([value], render, pl.String())


NODES: dict[type[exp.Expression], Handler] = {exp.Levenshtein: _levenshtein}
NAMES: dict[str, Handler] = {"FORMAT_NUMBER": _format_number}
SUPPORTED = ("FORMAT_NUMBER", "LEVENSHTEIN")
