"""Spark 3.5 (ANSI off) types in Polars: literal types, implicit coercion, and result types of operators.

Spark types are modelled by their natural Polars image: INT->Int32, BIGINT->Int64, DOUBLE->Float64,
DECIMAL(p,s)->Decimal(p,s), STRING->String, BOOLEAN->Boolean, DATE->Date, TIMESTAMP->Datetime('us',
'UTC'), TIMESTAMP_NTZ->Datetime('us'), the untyped NULL->Null. The rules below are Spark's
``TypeCoercion`` (non-ANSI) and ``DecimalPrecision`` rules, restricted to these types; with ``ansi``,
``AnsiTypeCoercion``'s for a STRING next to another type (it is cast to that type, not the reverse).
"""

from __future__ import annotations

from decimal import Decimal

import polars as pl

MAX_PRECISION = 38
_INTEGRAL: tuple[pl.DataType, ...] = (pl.Int8(), pl.Int16(), pl.Int32(), pl.Int64())
_INTEGRAL_DIGITS: dict[pl.DataType, int] = {pl.Int8(): 3, pl.Int16(): 5, pl.Int32(): 10, pl.Int64(): 20}


class CoercionError(TypeError):
    """Spark's analyzer rejects these operand types (the compiler words it as a SqlExpressionError)."""


def is_integral(dtype: pl.DataType | None) -> bool:
    return dtype in _INTEGRAL


def is_numeric(dtype: pl.DataType | None) -> bool:
    return is_integral(dtype) or dtype in (pl.Float32(), pl.Float64()) or isinstance(dtype, pl.Decimal)


def is_null(dtype: pl.DataType | None) -> bool:
    return dtype == pl.Null()


def literal_number(text: str) -> tuple[object, pl.DataType]:
    """The value and Spark type of a numeric literal: INT, BIGINT, DECIMAL(p,s) or DOUBLE (exponent)."""
    if any(ch in text for ch in "eE"):
        return float(text), pl.Float64()
    if "." in text:
        value = Decimal(text)
        digits = value.as_tuple()
        scale = -int(digits.exponent)
        return value, pl.Decimal(max(len(digits.digits), scale, 1), scale)
    number = int(text)
    if -(2**31) <= number < 2**31:
        return number, pl.Int32()
    if -(2**63) <= number < 2**63:
        return number, pl.Int64()
    return Decimal(number), pl.Decimal(len(text.lstrip("-")), 0)


def as_decimal(dtype: pl.DataType) -> pl.Decimal:
    """An integral or decimal type as the decimal Spark widens it to (INT -> DECIMAL(10,0))."""
    if isinstance(dtype, pl.Decimal):
        return dtype
    return pl.Decimal(_INTEGRAL_DIGITS[dtype], 0)


def bounded(precision: int, scale: int) -> pl.Decimal:
    """Spark's ``DecimalType.adjustPrecisionScale`` (precision loss allowed, the default)."""
    if precision <= MAX_PRECISION:
        return pl.Decimal(precision, scale)
    whole = precision - scale
    return pl.Decimal(MAX_PRECISION, max(MAX_PRECISION - whole, min(scale, 6)))


def wider(left: pl.DataType, right: pl.DataType) -> pl.DataType:
    """The common type of two numeric types (Spark's ``findWiderTypeForTwo``)."""
    if left == right:
        return left
    if is_null(left) or is_null(right):
        return right if is_null(left) else left
    if left in (pl.Float32(), pl.Float64()) or right in (pl.Float32(), pl.Float64()):
        return (
            pl.Float32() if left in (pl.Float32(), *_INTEGRAL) and right in (pl.Float32(), *_INTEGRAL) else pl.Float64()
        )
    if isinstance(left, pl.Decimal) or isinstance(right, pl.Decimal):
        a, b = as_decimal(left), as_decimal(right)
        scale = max(a.scale, b.scale)
        return bounded(max(a.precision - a.scale, b.precision - b.scale) + scale, scale)
    return max(left, right, key=_INTEGRAL.index)


def ansi_arithmetic_operands(op: str, left: pl.DataType, right: pl.DataType) -> tuple[pl.DataType, pl.DataType]:
    """The operand types of ``op`` once ANSI mode has cast a STRING operand (``PromoteStrings``): to
    BIGINT next to an integer, to DOUBLE next to a DOUBLE or DECIMAL.

    Raises:
        CoercionError: a STRING next to a STRING, a NULL or a non-number (Spark's analyzer refuses it).
    """
    if pl.String() not in (left, right):
        return left, right
    other = right if left == pl.String() else left
    if not is_numeric(other):
        raise CoercionError(
            f"'{op}' of {spark_name(left)} and {spark_name(right)}: with spark.sql.ansi.enabled on, Spark casts "
            f"a STRING operand to the other operand's type only when that is a number"
        )
    promoted = ansi_string_type(other) or other
    return (promoted, right) if left == pl.String() else (left, promoted)


def numeric_operands(op: str, left: pl.DataType | None, right: pl.DataType | None) -> pl.DataType:
    """The type both operands of ``op`` (+ - * / % DIV) are cast to before computing.

    Strings are read as DOUBLE (Spark's ``PromoteStrings``); ``/`` works on DOUBLE or DECIMAL only.
    """
    types = [_arithmetic_operand(op, t) for t in (left, right)]
    if op == "/" and is_null(types[0]):
        return pl.Float64()
    common = wider(types[0], types[1])
    if is_null(common):
        common = pl.Float64() if op == "/" else (pl.Int64() if op == "DIV" else pl.Float64())
    if op == "/" and (is_integral(common) or common == pl.Float32()):
        return pl.Float64()
    return common


def _arithmetic_operand(op: str, dtype: pl.DataType | None) -> pl.DataType:
    if dtype is None:
        raise CoercionError(f"the operand type of {op} is unknown")
    if op == "DIV" and dtype in (pl.String(), pl.Float32(), pl.Float64()):
        raise CoercionError(f"DIV needs integers or decimals, got {spark_name(dtype)}")
    if dtype == pl.String():
        return pl.Float64()
    if is_numeric(dtype) or is_null(dtype):
        return dtype
    raise CoercionError(f"'{op}' needs numbers, got {spark_name(dtype)}")


def decimal_result(op: str, left: pl.Decimal, right: pl.Decimal) -> pl.Decimal:
    """Spark's result type of a decimal operation (``DecimalPrecision``)."""
    p1, s1, p2, s2 = left.precision, left.scale, right.precision, right.scale
    if op in ("+", "-"):
        scale = max(s1, s2)
        return bounded(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if op == "*":
        return bounded(p1 + p2 + 1, s1 + s2)
    if op == "/":
        scale = max(6, s1 + p2 + 1)
        return bounded(p1 - s1 + s2 + scale, scale)
    scale = max(s1, s2)  # %
    return bounded(min(p1 - s1, p2 - s2) + scale, scale)


def ansi_string_type(other: pl.DataType) -> pl.DataType | None:
    """The type a STRING meets ``other`` (not a STRING) in with ANSI on (``AnsiTypeCoercion.findWiderTypeForString``).

    The STRING is cast to it (an ANSI cast: malformed text raises): an integer makes it BIGINT, a
    DOUBLE or DECIMAL makes it DOUBLE, a NULL leaves it STRING, a BOOLEAN, DATE or TIMESTAMP makes it
    that type; ``None``: no common type (an array).
    """
    if is_integral(other):
        return pl.Int64()
    if is_numeric(other):
        return pl.Float64()
    if is_null(other):
        return pl.String()
    if other in (pl.Boolean(), pl.Date()) or isinstance(other, pl.Datetime):
        return other
    return None


def _ansi_with_string(left: pl.DataType, right: pl.DataType) -> pl.DataType:
    other = right if left == pl.String() else left
    promoted = ansi_string_type(other)
    if promoted is None:
        raise CoercionError(f"STRING and {spark_name(other)} have no common type")
    return promoted


def comparison_type(left: pl.DataType | None, right: pl.DataType | None, *, ansi: bool = False) -> pl.DataType | None:
    """The type both sides of a comparison are cast to (Spark's ``findCommonTypeForBinaryComparison``;
    ``ansi``: ``AnsiTypeCoercion``'s, where a STRING next to an integer is read as BIGINT).

    ``None`` when the types are unknown (validation without a schema): compare as they are.
    """
    if left is None or right is None:
        return None
    if left == right:
        return left
    if is_null(left) or is_null(right):
        return right if is_null(left) else left
    if ansi and pl.String() in (left, right):
        return _ansi_with_string(left, right)
    if is_numeric(left) and is_numeric(right):
        return wider(left, right)
    if pl.String() in (left, right):
        other = right if left == pl.String() else left
        return pl.Float64() if isinstance(other, pl.Decimal) else other
    temporal = {type(left), type(right)}
    if temporal == {pl.Date, pl.Datetime}:
        return right if isinstance(right, pl.Datetime) else left
    if isinstance(left, pl.Datetime) and isinstance(right, pl.Datetime):
        return pl.Datetime("us", "UTC")
    raise CoercionError(f"cannot compare {spark_name(left)} with {spark_name(right)}")


def common_type(types: list[pl.DataType | None], *, ansi: bool = False) -> pl.DataType | None:
    """The type of CASE/IF/COALESCE/IN branches (Spark's ``findWiderCommonType``).

    ``ansi``: ``AnsiTypeCoercion``'s, which takes the STRING types first and casts a STRING to the
    other type (:func:`ansi_string_type`) where ANSI off casts the other type to STRING.
    """
    known = [t for t in types if t is not None]
    if len(known) != len(types):
        return None
    if ansi:  # Spark folds the STRING types first, then the rest
        known = [t for t in known if t == pl.String()] + [t for t in known if t != pl.String()]
    result: pl.DataType = pl.Null()
    for dtype in known:
        if is_null(result) or is_null(dtype) or result == dtype:
            result = result if is_null(dtype) else dtype
        elif is_numeric(result) and is_numeric(dtype):
            result = wider(result, dtype)
        elif ansi and pl.String() in (result, dtype):
            result = _ansi_with_string(result, dtype)
        elif pl.String() in (result, dtype) and pl.Boolean() not in (result, dtype):
            result = pl.String()
        elif {type(result), type(dtype)} <= {pl.Date, pl.Datetime}:
            result = comparison_type(result, dtype) or result
        else:
            raise CoercionError(f"{spark_name(result)} and {spark_name(dtype)} have no common type")
    return result


_NAMES = {pl.Int8(): "TINYINT", pl.Int16(): "SMALLINT", pl.Int32(): "INT", pl.Int64(): "BIGINT",
          pl.Float32(): "FLOAT", pl.Float64(): "DOUBLE", pl.String(): "STRING", pl.Boolean(): "BOOLEAN",
          pl.Date(): "DATE", pl.Datetime("us", "UTC"): "TIMESTAMP", pl.Datetime("us"): "TIMESTAMP_NTZ",
          pl.Null(): "NULL"}  # fmt: skip


def spark_name(dtype: pl.DataType | None) -> str:
    """The Spark SQL name of a Polars dtype (for error messages)."""
    if isinstance(dtype, pl.Decimal):
        return f"DECIMAL({dtype.precision},{dtype.scale})"
    return _NAMES.get(dtype, str(dtype)) if dtype is not None else "unknown"
