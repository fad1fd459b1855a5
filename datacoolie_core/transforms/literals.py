"""Literal values from metadata (``fill_null`` values, ``redact`` replacements) checked against a column's dtype.

A literal never changes a column's type and is never silently converted into something else: a
string for an integer column, ``300`` for an ``Int8`` column or a naive timestamp for a UTC column
is an error, so a typo in metadata cannot write wrong values.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo

import polars as pl

_INT_BITS: dict[type[pl.DataType], tuple[int, bool]] = {
    pl.Int8: (8, True),
    pl.Int16: (16, True),
    pl.Int32: (32, True),
    pl.Int64: (64, True),
    pl.Int128: (128, True),
    pl.UInt8: (8, False),
    pl.UInt16: (16, False),
    pl.UInt32: (32, False),
    pl.UInt64: (64, False),
    pl.UInt128: (128, False),
}


def typed_literal(value: Any, dtype: pl.DataType) -> pl.Expr:
    """``value`` as a Polars literal of exactly ``dtype``.

    Raises:
        ValueError: ``value`` does not fit ``dtype`` (wrong kind, out of range, not finite, too many
            decimal digits, not ISO, time-zone awareness differs) or ``dtype`` takes no literals.
    """
    return pl.lit(coerce_literal(value, dtype), dtype=dtype)


def coerce_literal(value: Any, dtype: pl.DataType) -> Any:
    """The Python value of ``value`` for a column of ``dtype`` (see :func:`typed_literal`)."""
    if value is None:
        raise ValueError("the value is null")
    if dtype == pl.String:
        return _expect(value, str, dtype)
    if dtype == pl.Boolean:
        return _expect(value, bool, dtype)
    if dtype.is_integer():
        return _integer(value, dtype)
    if dtype.is_float():
        return _float(value, dtype)
    if isinstance(dtype, pl.Decimal):
        return _decimal(value, dtype)
    if dtype == pl.Date:
        return date.fromisoformat(_expect(value, str, dtype))
    if isinstance(dtype, pl.Datetime):
        return _datetime(value, dtype)
    raise ValueError(f"a column of type {dtype} cannot take a literal value")


def _expect(value: Any, kind: type, dtype: pl.DataType) -> Any:
    # bool is an int subclass: True must not pass as 1, nor 1 as True
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ValueError(f"{value!r} is a {type(value).__name__}, but the column is {dtype}")
    return value


def _integer(value: Any, dtype: pl.DataType) -> int:
    number = _expect(value, int, dtype)
    bits, signed = _INT_BITS[type(dtype)]
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    if not low <= number <= high:
        raise ValueError(f"{number} is outside the range of {dtype} ({low}..{high})")
    return int(number)


def _float(value: Any, dtype: pl.DataType) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{value!r} is a {type(value).__name__}, but the column is {dtype}")
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is not a finite number")
    return float(value)


def _decimal(value: Any, dtype: pl.Decimal) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{value!r} is a {type(value).__name__}, but the column is {dtype}")
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"{value!r} is not a decimal number") from None
    if not number.is_finite():
        raise ValueError(f"{value!r} is not a finite number")
    precision, scale = dtype.precision or 38, dtype.scale or 0
    exponent = number.normalize().as_tuple().exponent
    if isinstance(exponent, int) and -exponent > scale:
        raise ValueError(f"{value!r} has more than {scale} decimal places for {dtype}")
    quantized = number.quantize(Decimal(1).scaleb(-scale))
    if len(quantized.as_tuple().digits) > precision:
        raise ValueError(f"{value!r} has more than {precision - scale} integer digits for {dtype}")
    return quantized


def _datetime(value: Any, dtype: pl.Datetime) -> datetime:
    moment = datetime.fromisoformat(_expect(value, str, dtype))
    if (moment.tzinfo is None) != (dtype.time_zone is None):
        aware = "has a time zone" if moment.tzinfo else "has no time zone"
        raise ValueError(f"{value!r} {aware}, but the column is {dtype}")
    return moment.astimezone(ZoneInfo(dtype.time_zone)) if dtype.time_zone else moment
