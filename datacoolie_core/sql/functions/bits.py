"""Spark SQL bit functions on INT and BIGINT, with Java's shift semantics (the count is masked)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions.registry import Handler, arity, dtype, literal, number
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

_POWERS = {k: 2**k for k in range(64)}


def _integer(c: Compiler, node: exp.Expression, name: str) -> tuple[pl.Expr, int]:
    """The argument and its width in bits: BIGINT stays 64, smaller integers widen to INT."""
    found = dtype(c, node)
    if found is not None and not found.is_integer() and found != pl.Null:
        raise SqlExpressionError(f"{name} takes an INT or BIGINT, got {found} (in {c.text!r})")
    bits = 64 if found == pl.Int64 else 32
    return c.compile(node).cast(pl.Int64 if bits == 64 else pl.Int32), bits


def _wrap(value: pl.Expr, bits: int) -> pl.Expr:
    half = 2 ** (bits - 1)
    return (((value + half) % (2 * half)) - half).cast(pl.Int64 if bits == 64 else pl.Int32)


def _shift(direction: str) -> Handler:
    def handler(c: Compiler, node: exp.Expression) -> pl.Expr:
        value_node, count_node = (
            arity(c, node, 2) if isinstance(node, exp.Anonymous) else (node.this, node.args["expression"])
        )
        value, bits = _integer(c, value_node, f"SHIFT{direction.upper()}")
        # Java masks the shift count to the type's width (x << 33 == x << 1 for an INT)
        power = (number(c, count_node, "INT") % bits).replace_strict(_POWERS, return_dtype=pl.Int128)
        wide = value.cast(pl.Int128)
        if direction == "left":
            return _wrap(wide * power, bits)
        if direction == "right":
            return (wide // power).cast(pl.Int64 if bits == 64 else pl.Int32)
        return _wrap((wide % 2**bits) // power, bits)

    return handler


def _bit_get(c: Compiler, node: exp.Getbit) -> pl.Expr:
    value, bits = _integer(c, node.this, "BIT_GET")
    position = literal(c, node.args["expression"], "the BIT_GET position")
    if position is None:
        return pl.lit(None, dtype=pl.Int8)
    if not 0 <= int(position) < bits:
        raise SqlExpressionError(f"BIT_GET position {position} is outside 0..{bits - 1} (in {c.text!r})")
    return (value.cast(pl.Int128) % 2**bits // 2 ** int(position) % 2).cast(pl.Int8)


def _not(c: Compiler, node: exp.BitwiseNot) -> pl.Expr:
    # ~x is -1 - x in two's complement, in the argument's own integer type (no overflow possible)
    found = dtype(c, node.this)
    if found is not None and not found.is_integer() and found != pl.Null:
        raise SqlExpressionError(f"~ takes an integer, got {found} (in {c.text!r})")
    value = c.compile(node.this)
    return (pl.lit(-1).cast(found) - value) if found is not None and found != pl.Null else -1 - value


NODES: dict[type[exp.Expression], Handler] = {
    exp.BitwiseNot: _not,
    exp.BitwiseLeftShift: _shift("left"),
    exp.BitwiseRightShift: _shift("right"),
    exp.Getbit: _bit_get,
}
NAMES: dict[str, Handler] = {"SHIFTRIGHTUNSIGNED": _shift("unsigned")}
SUPPORTED = ("BIT_GET", "GETBIT", "SHIFTLEFT", "SHIFTRIGHT", "SHIFTRIGHTUNSIGNED")
