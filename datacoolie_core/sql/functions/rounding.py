"""Spark's ROUND (HALF_UP), BROUND (HALF_EVEN), CEIL/FLOOR and RINT, type by type.

Spark rounds a DOUBLE as the decimal it prints (``BigDecimal(d.toString)``): ``ROUND(2.675, 2)`` is
2.68 although the binary value is just below. Polars rounds the binary value, so a double that is
the nearest double to a tie (``t + 0.5`` units) is rounded as the tie itself here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions.registry import Handler, arity, dtype, literal, number
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

_MODES: dict[bool, Literal["half_away_from_zero", "half_to_even"]] = {
    False: "half_away_from_zero",
    True: "half_to_even",
}
_MAX_PRECISION = 38
_LONG = 2**63


def round_double(x: pl.Expr, scale: int, *, even: bool) -> pl.Expr:
    """ROUND/BROUND of a Float64 as Spark rounds its decimal form."""
    if scale < 0:
        unit = 10.0 ** (-scale)
        return round_double(x / unit, 0, even=even) * unit
    scaled = (x * 10.0**scale).cast(pl.Int64, strict=False).cast(pl.Float64)
    sign = x.sign()
    # a column-valued divisor keeps Polars from turning the division into an inexact reciprocal product
    divisor = scaled * 0.0 + 10.0**scale
    tie = (scaled + sign * 0.5) / divisor
    away = ((scaled + sign) / divisor).round(scale)
    if even:
        away = pl.when(scaled % 2 == 0).then((scaled / divisor).round(scale)).otherwise(away)
    return pl.when(tie == x).then(away).otherwise(x.round(scale, mode=_MODES[even]))


def _round_integer(x: pl.Expr, scale: int, bits: int, *, even: bool) -> pl.Expr:
    if scale >= 0:
        return x
    unit = 10 ** (-scale)
    wide = x.cast(pl.Int128)
    magnitude = wide.abs()
    whole, rest = magnitude // unit, magnitude % unit
    up = (rest * 2 > unit) | ((rest * 2 == unit) & (~pl.lit(even) | (whole % 2 == 1)))
    rounded = (whole + up.cast(pl.Int128)) * unit * wide.sign()
    # Spark narrows the rounded BigDecimal with intValue/longValue: two's complement wrap-around
    if bits == 128:
        return rounded
    half = 2 ** (bits - 1)
    return (((rounded + half) % (2 * half)) - half).cast(pl.Int32 if bits == 32 else pl.Int64)


def _round_decimal(x: pl.Expr, found: pl.Decimal, scale: int, *, even: bool) -> pl.Expr:
    precision, digits = found.precision or _MAX_PRECISION, found.scale or 0
    integral = precision - digits + 1
    if scale < 0:
        # round the unscaled integer to a multiple of 10^(digits - scale), then drop the fraction
        target = pl.Decimal(min(max(integral, 1 - scale), _MAX_PRECISION), 0)
        unscaled = _round_integer(x.to_physical().cast(pl.Int128), scale - digits, 128, even=even)
        return (unscaled // 10**digits).cast(target)
    kept = min(digits, scale)
    target = pl.Decimal(min(integral + kept, _MAX_PRECISION), kept)
    return x.round(kept, mode=_MODES[even]).cast(target)


def _rounder(*, even: bool) -> Handler:
    def handler(c: Compiler, node: exp.Expression) -> pl.Expr:
        value, *rest = [node.this, node.args["decimals"]] if node.args.get("decimals") else [node.this]
        if isinstance(node, exp.Anonymous):
            value, *rest = arity(c, node, 1, 2)
        scale = literal(c, rest[0], "ROUND scale") if rest else 0
        if scale is None or not isinstance(scale, int):
            raise SqlExpressionError(f"the ROUND/BROUND scale must be an integer literal (in {c.text!r})")
        found = dtype(c, value)
        if found is not None and found.is_integer():
            return _round_integer(c.compile(value), scale, 32 if found == pl.Int32 else 64, even=even)
        if isinstance(found, pl.Decimal):
            try:
                return _round_decimal(c.compile(value), found, scale, even=even)
            except SqlExpressionError as e:
                raise SqlExpressionError(f"{e} (in {c.text!r})") from None
        return round_double(number(c, value), scale, even=even)

    return handler


def _java_long(x: pl.Expr) -> pl.Expr:
    """A whole Float64 as Java's ``(long)`` cast: NaN is 0, out-of-range values saturate."""
    return (
        pl.when(x.is_nan()).then(pl.lit(0, dtype=pl.Int64))
        .when(x >= 2.0**63).then(pl.lit(_LONG - 1, dtype=pl.Int64))
        .when(x <= -(2.0**63)).then(pl.lit(-_LONG, dtype=pl.Int64))
        .otherwise(x.cast(pl.Int64, strict=False))
    )  # fmt: skip


def _ceil_floor(name: str) -> Handler:
    def handler(c: Compiler, node: exp.Expression) -> pl.Expr:
        if node.args.get("decimals") is not None:
            raise SqlExpressionError(f"{name.upper()} with a scale is not supported (in {c.text!r})")
        found = dtype(c, node.this)
        if found is not None and found.is_integer():
            return c.compile(node.this).cast(pl.Int64)
        if isinstance(found, pl.Decimal):
            precision, digits = found.precision or _MAX_PRECISION, found.scale or 0
            target = pl.Decimal(min(precision - digits + 1, _MAX_PRECISION), 0)
            return getattr(c.compile(node.this), name)().cast(target)
        return _java_long(getattr(number(c, node.this), name)())

    return handler


NODES: dict[type[exp.Expression], Handler] = {
    exp.Round: _rounder(even=False),
    exp.Ceil: _ceil_floor("ceil"),
    exp.Floor: _ceil_floor("floor"),
    exp.Rint: lambda c, n: number(c, n.this).round(0, mode="half_to_even"),
}
NAMES: dict[str, Handler] = {"BROUND": _rounder(even=True)}
SUPPORTED = ("BROUND", "CEIL", "CEILING", "FLOOR", "RINT", "ROUND")
