"""Spark's ROUND (HALF_UP), BROUND (HALF_EVEN), CEIL/FLOOR and RINT, type by type.

Spark rounds a DOUBLE as the decimal it prints (``BigDecimal(d.toString)``): ``ROUND(2.675, 2)`` is
2.68 although the binary value is just below. Polars rounds the binary value, so a double that is
the nearest double to a tie (``t + 0.5`` units) is rounded as the tie itself here.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Literal

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.ansi import guard
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


def _ansi_overflow(c: Compiler, x: pl.Expr, rounded: pl.Expr, scale: int, bits: int, *, even: bool) -> pl.Expr:
    """``rounded``, raising ``ARITHMETIC_OVERFLOW`` in ANSI mode where Spark's ANSI rounding overflows the
    integer type (ANSI off wraps around)."""
    if not c.ansi or scale >= 0:
        return rounded
    exact, half = _round_integer(x, scale, 128, even=even), 2 ** (bits - 1)
    bad = (exact >= half) | (exact < -half)
    target = pl.Int32() if bits == 32 else pl.Int64()
    detail = "Overflow in rounding {value}."
    return guard(rounded, target, bad, x, "ARITHMETIC_OVERFLOW", detail, c.text)


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
            bits = 32 if found == pl.Int32 else 64
            rounded = _round_integer(c.compile(value), scale, bits, even=even)
            return _ansi_overflow(c, c.compile(value), rounded, scale, bits, even=even)
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
            return _ceil_floor_to_scale(c, node, up=name == "ceil")
        found = dtype(c, node.this)
        if found is not None and found.is_integer():
            return c.compile(node.this).cast(pl.Int64)
        if isinstance(found, pl.Decimal):
            precision, digits = found.precision or _MAX_PRECISION, found.scale or 0
            target = pl.Decimal(min(precision - digits + 1, _MAX_PRECISION), 0)
            return getattr(c.compile(node.this), name)().cast(target)
        return _java_long(getattr(number(c, node.this), name)())

    return handler


_DECIMAL_OF: dict[type[pl.DataType] | type[None], tuple[int, int]] = {
    pl.Int8: (3, 0),
    pl.Int16: (5, 0),
    pl.Int32: (10, 0),
    pl.Int64: (20, 0),
    pl.Float64: (30, 15),
}
"""Spark's DECIMAL image of each numeric type (DecimalType.forType)."""


def _ceil_floor_to_scale(c: Compiler, node: exp.Expression, *, up: bool) -> pl.Expr:
    """CEIL/FLOOR(x, d): the value as Spark's DECIMAL of its type, rounded toward +/- infinity at d."""
    scale = literal(c, node.args["decimals"], "the CEIL/FLOOR scale")
    found = dtype(c, node.this)
    if not isinstance(scale, int) or (found is not None and not found.is_numeric()):
        raise SqlExpressionError(f"CEIL/FLOOR with a scale takes a number and an integer literal (in {c.text!r})")
    if isinstance(found, pl.Decimal):
        precision, digits = found.precision or _MAX_PRECISION, found.scale or 0
    else:
        precision, digits = _DECIMAL_OF.get(type(found), (_MAX_PRECISION, 0))
    kept = min(digits, scale) if scale >= 0 else 0
    integral = precision - digits + 1
    target = pl.Decimal(min(integral + kept if scale >= 0 else max(integral, 1 - scale), _MAX_PRECISION), kept)
    value = c.compile(node.this)
    if found is not None and found.is_float():
        unscaled = _double_unscaled(value.cast(pl.Float64))
    elif isinstance(found, pl.Decimal):
        unscaled = value.to_physical().cast(pl.Int128)
    else:
        unscaled = value.cast(pl.Int128)
    unit = 10 ** (digits - (kept if scale >= 0 else scale))
    whole = (unscaled + (unit - 1)) // unit if up else unscaled // unit
    if scale < 0:
        result = (whole * 10 ** (-scale)).cast(pl.Decimal(_MAX_PRECISION, 0)).cast(target)
    else:
        result = (whole.cast(pl.Decimal(_MAX_PRECISION, 0)) * pl.lit(Decimal(1).scaleb(-kept))).cast(target)
    if c.ansi and found is not None and found.is_float():
        # ANSI: a finite double beyond DECIMAL(30,15) raises (NaN and infinities stay NULL)
        bad = value.is_finite() & unscaled.is_null()
        detail = "{value} cannot be represented as DECIMAL(30,15)."
        return guard(result, target, bad, value, "NUMERIC_VALUE_OUT_OF_RANGE", detail, c.text)
    return result


def _double_unscaled(x: pl.Expr) -> pl.Expr:
    """A double as Spark's DECIMAL(30,15) of its printed form, unscaled (NULL when it does not fit)."""
    # the shortest printed digits (as Java's Double.toString), read exactly, then rounded half up to 15
    exact = x.cast(pl.String).str.to_decimal(scale=20).to_physical().cast(pl.Int128)
    unscaled = _round_integer(exact, -5, 128, even=False) // 10**5
    return pl.when(x.is_finite() & (x.abs() < 1e15)).then(unscaled).otherwise(None)


NODES: dict[type[exp.Expression], Handler] = {
    exp.Round: _rounder(even=False),
    exp.Ceil: _ceil_floor("ceil"),
    exp.Floor: _ceil_floor("floor"),
    exp.Rint: lambda c, n: number(c, n.this).round(0, mode="half_to_even"),
}
NAMES: dict[str, Handler] = {"BROUND": _rounder(even=True)}
SUPPORTED = ("BROUND", "CEIL", "CEILING", "FLOOR", "RINT", "ROUND")
