"""Spark SQL operators (ANSI off) as native Polars expressions, with Spark's implicit type coercion.

Arithmetic wraps on integer overflow and gives NULL on a zero divisor (``/``, ``%``, ``DIV``);
``%`` keeps the dividend's sign and ``DIV`` truncates toward zero (Java semantics, not Polars' floor
ones); ``/`` is DOUBLE or DECIMAL. Comparisons cast both sides to Spark's common type (a string
compared with a number is cast to that number's type). AND/OR/NOT are three-valued.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl
from sqlglot import exp

from datacoolie_core.sql import ansi
from datacoolie_core.sql.casts import spark_cast
from datacoolie_core.sql.coercion import (
    CoercionError,
    ansi_arithmetic_operands,
    as_decimal,
    common_type,
    comparison_type,
    decimal_result,
    is_integral,
    is_null,
    is_numeric,
    numeric_operands,
    spark_name,
)
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

Handler = Callable[["Compiler", Any], pl.Expr]
_SIGN = {"+": 1, "-": -1}
_INTEGERS: list[pl.DataType] = [pl.Int8(), pl.Int16(), pl.Int32(), pl.Int64()]
_BITS: dict[pl.DataType, int] = {pl.Int8(): 8, pl.Int16(): 16, pl.Int32(): 32, pl.Int64(): 64}
_OFFSET_UNITS = {"YEAR": "y", "MONTH": "mo", "WEEK": "w", "DAY": "d", "HOUR": "h", "MINUTE": "m", "SECOND": "s"}


def arithmetic(op: str) -> Handler:
    """``+ - * / % DIV`` (and MOD), typed as Spark types them."""
    return lambda c, n: arithmetic_of(c, op, n.this, n.args["expression"], guarded=id(n) not in c.unguarded)


def arithmetic_of(
    c: Compiler, op: str, left_node: exp.Expression, right_node: exp.Expression, *, guarded: bool = True
) -> pl.Expr:
    """``left op right`` for two parsed operands (also PMOD and MOD); ``guarded``: raising in ANSI mode."""
    if isinstance(right_node, exp.Interval) and op in _SIGN:
        return _interval(c, left_node, right_node, _SIGN[op])
    left_type, right_type = c.dtype(left_node), c.dtype(right_node)
    if op in _SIGN and pl.Date() in (left_type, right_type):
        return _date_plus_days(c, op, (left_node, left_type), (right_node, right_type))
    if left_type is None or right_type is None:  # validation without a schema
        return _apply(op, c.compile(left_node), c.compile(right_node), pl.Float64())
    if not (op == "/" and is_null(left_type)):  # Spark: NULL / decimal is DOUBLE, decimal / NULL is not
        left_type, right_type = (
            _literal_decimal(left_node, left_type, right_type),
            _literal_decimal(right_node, right_type, left_type),
        )
    checks: list[ansi.Check] = []
    if c.ansi:
        left, right, checks = _ansi_operands(c, op, (left_node, left_type), (right_node, right_type))
    else:
        left, right = (c.compile(left_node), left_type), (c.compile(right_node), right_type)
    result = binary_numeric(c, op, left, right)
    if c.ansi and guarded and c.schema is not None:
        return ansi_arithmetic(c, op, left, right, result, checks)
    return result


def _ansi_operands(
    c: Compiler, op: str, left: tuple[exp.Expression, pl.DataType], right: tuple[exp.Expression, pl.DataType]
) -> tuple[tuple[pl.Expr, pl.DataType], tuple[pl.Expr, pl.DataType], list[ansi.Check]]:
    """The operands of ``op`` in ANSI mode and the checks of their casts: a STRING is cast to BIGINT next to
    an integer, to DOUBLE next to a DOUBLE or DECIMAL (Spark's ``AnsiTypeCoercion.PromoteStrings``)."""
    try:
        types = ansi_arithmetic_operands(op, left[1], right[1])
    except CoercionError as e:
        raise SqlExpressionError(f"{e} (in {c.text!r})") from None
    (left_value, left_checks), (right_value, right_checks) = (
        c.cast_checked(node, promoted) if dtype == pl.String() else (c.compile(node), [])
        for (node, dtype), promoted in zip((left, right), types, strict=True)
    )
    checks = operand_checks(c, (left[0], left_value, left_checks), (right[0], right_value, right_checks))
    return (left_value, types[0]), (right_value, types[1]), checks


Operand = tuple[exp.Expression, pl.Expr, list[ansi.Check]]
"""An operand's node, its value cast to the operator's type, and the ANSI checks of that cast."""


def operand_checks(c: Compiler, left: Operand, right: Operand, *, null_safe: bool = False) -> list[ansi.Check]:
    """The cast checks of a binary operator's operands, on the rows Spark evaluates each: the left always,
    the right where the left is not NULL; none when a side is a constant NULL (folded to NULL first).
    ``null_safe`` (``<=>``): both sides always, a NULL folds nothing."""
    if null_safe:
        return [*left[2], *right[2]]
    if c.constant_null(left[0]) or c.constant_null(right[0]):
        return []
    return [*left[2], *ansi.masked(right[2], left[1].is_not_null())]


def ansi_arithmetic(
    c: Compiler,
    op: str,
    left: tuple[pl.Expr, pl.DataType],
    right: tuple[pl.Expr, pl.DataType],
    result: pl.Expr,
    first: list[ansi.Check] | None = None,
) -> pl.Expr:
    """``result``, raising where Spark's ANSI mode raises: a zero divisor, an integer or decimal overflow.

    ``first``: the checks of the operands' casts, which Spark meets first on a row (one guard keeps the
    row order: the first failing row decides the error).
    """
    dtype = pl.LazyFrame(schema=c.schema).select(result.alias("r")).collect_schema()["r"]
    both = left[0].is_not_null() & right[0].is_not_null()
    checks = list(first or [])
    if op in ("/", "%", "DIV", "PMOD"):
        divisor = right[0] if is_numeric(right[1]) else spark_cast(right[0], right[1], pl.Float64())
        checks.append((both & (divisor == 0), left[0], "DIVIDE_BY_ZERO", "Division by zero."))
    elif is_integral(dtype):
        exact = _apply(op, left[0].cast(pl.Int128), right[0].cast(pl.Int128), pl.Int128())
        overflow = both & (exact != result.cast(pl.Int128))
        detail = (
            f"{'integer' if dtype != pl.Int64() else 'long'} overflow ({{value}} does not fit {spark_name(dtype)})."
        )
        checks.append((overflow, exact, "ARITHMETIC_OVERFLOW", detail))
    elif isinstance(dtype, pl.Decimal):
        detail = f"The result of {{value}} {op} ... cannot be represented as {spark_name(dtype)}."
        checks.append((both & result.is_null(), left[0], "NUMERIC_VALUE_OUT_OF_RANGE", detail))
    return ansi.guard_all(result, dtype, checks, c.text) if checks else result


def _date_plus_days(
    c: Compiler,
    op: str,
    left: tuple[exp.Expression, pl.DataType | None],
    right: tuple[exp.Expression, pl.DataType | None],
) -> pl.Expr:
    """DATE + INT is DATE_ADD (INT + DATE too), DATE - INT is DATE_SUB; other operand types are errors."""
    date, days = (left, right) if left[1] == pl.Date() else (right, left)
    if (op == "-" and date is right) or not (days[1] in _INTEGERS[:3] or is_null(days[1])):
        raise SqlExpressionError(f"'{op}' with a DATE needs an INT number of days (in {c.text!r})")
    count = c.cast(days[0], pl.Int32()).cast(pl.Int64) * _SIGN[op]
    return c.compile(date[0]) + pl.duration(days=count)


def _literal_decimal(node: exp.Expression, dtype: pl.DataType, other: pl.DataType | None) -> pl.DataType:
    # Spark widens an integer literal next to a decimal to just its digits (1 -> DECIMAL(1,0))
    literal = node.this if isinstance(node, exp.Neg) else node
    # sqlglot reads 3L as a cast without the "format" arg; an explicit CAST(1e10 AS INT) is no literal
    # to Spark: it widens to the type's full DECIMAL(10,0)
    if isinstance(literal, (exp.Cast, exp.TryCast)) and "format" not in literal.args:
        literal = literal.this
    if isinstance(other, pl.Decimal) and is_integral(dtype) and isinstance(literal, exp.Literal):
        return pl.Decimal(max(len(str(literal.this).lstrip("-")), 1), 0)
    if is_null(dtype) and isinstance(other, pl.Decimal):
        return other
    return dtype


def binary_numeric(
    c: Compiler, op: str, left: tuple[pl.Expr, pl.DataType], right: tuple[pl.Expr, pl.DataType]
) -> pl.Expr:
    """``left op right`` after Spark's coercion; the result has Spark's result type."""
    try:
        operand = numeric_operands(op, left[1], right[1])
    except CoercionError as e:
        raise SqlExpressionError(f"{e} (in {c.text!r})") from None
    if op == "DIV":
        return _int_divide(c, left, right, operand)
    if isinstance(operand, pl.Decimal):
        return _decimal(op, left, right)
    a, b = (spark_cast(value, dtype, operand) for value, dtype in (left, right))
    return _apply(op, a, b, operand)


def _apply(op: str, a: pl.Expr, b: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    if op in _SIGN and dtype.is_float():
        return _float_sum(op, a, b, dtype)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return a / nonzero(_exact_divisor(b) if dtype.is_float() else b)
    if op == "PMOD":
        remainder = java_remainder(a, b, dtype)
        return pl.when(remainder < 0).then(java_remainder(remainder + b, b, dtype)).otherwise(remainder)
    return java_remainder(a, b, dtype)


def _float_sum(op: str, a: pl.Expr, b: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """``a + b`` or ``a - b`` in IEEE arithmetic, as Spark computes it, also when a side is a constant zero.

    Polars' optimizer rewrites ``x + 0.0``, ``0.0 + x`` and ``x - (-0.0)`` to ``x``, and ``0.0 - x`` to
    ``-x``: wrong for a zero ``x`` (IEEE gives ``0.0``, the rewrite keeps or makes ``-0.0``), so
    ``-0.0 + 0`` would print as ``-0.0`` where Spark prints ``0.0``. Those forms add ``0.0`` explicitly.
    """
    if op == "+" and _is_zero(b, negative=False):
        return _plus_zero(a, dtype)
    if op == "+" and _is_zero(a, negative=False):
        return _plus_zero(b, dtype)
    if op == "-" and _is_zero(b, negative=True):
        return _plus_zero(a, dtype)
    if op == "-" and _is_zero(a, negative=False):
        return _plus_zero(-b, dtype)
    return a + b if op == "+" else a - b


def _is_zero(value: pl.Expr, *, negative: bool) -> bool:
    """Whether ``value`` is a constant (no column) equal to ``-0.0`` (``negative``) or ``0.0``."""
    if value.meta.root_names():
        return False
    try:
        constant = pl.select(value).to_series()
    except Exception:  # a constant Polars cannot evaluate alone: not a zero it would fold away
        return False
    if len(constant) != 1 or not isinstance(zero := constant[0], float) or zero != 0:
        return False
    return math.copysign(1.0, zero) < 0 if negative else math.copysign(1.0, zero) > 0


def _plus_zero(value: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """``value + 0.0`` that no optimizer drops: a zero of either sign becomes ``0.0``, the rest is kept."""
    return pl.when(value == 0).then(pl.lit(0.0, dtype)).otherwise(value)


def _exact_divisor(divisor: pl.Expr) -> pl.Expr:
    """A constant divisor as a column: Polars divides by a scalar by multiplying with its reciprocal
    (``7 / 1e10`` gave 7.000000000000001E-10, Spark 7.0E-10); a column divides exactly."""
    if divisor.meta.root_names():
        return divisor
    return pl.int_range(pl.len()).cast(pl.Float64) * 0 + divisor


def nonzero(divisor: pl.Expr) -> pl.Expr:
    """The divisor, NULL where it is zero: Spark gives NULL there, and Polars must never divide by it."""
    return pl.when(divisor != 0).then(divisor)


def java_remainder(a: pl.Expr, b: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """``a % b`` with the dividend's sign (Java), NULL for a zero divisor; Polars' ``%`` floors."""
    b = nonzero(b)
    if dtype in (pl.Float32(), pl.Float64()):
        # no exact fmod in Polars: a - b*trunc(a/b) is exact while |a/b| < 2**53 (docs/sql.md)
        quotient = a / b
        whole = pl.when(quotient >= 0).then(quotient.floor()).otherwise(quotient.ceil())
        remainder = a - b * whole
        return pl.when(a.is_finite() & (b.is_infinite() | (a.abs() < b.abs()))).then(a).otherwise(remainder)
    floored = a % b
    return pl.when((floored != 0) & ((a < 0) != (b < 0))).then(floored - b).otherwise(floored).cast(dtype)


def _int_divide(
    c: Compiler, left: tuple[pl.Expr, pl.DataType], right: tuple[pl.Expr, pl.DataType], operand: pl.DataType
) -> pl.Expr:
    if isinstance(operand, pl.Decimal):
        quotient = _decimal("/", left, right)
        return spark_cast(quotient, c_dtype_of_decimal_quotient(left[1], right[1]), pl.Int64())
    a, b = (_as_long(value, dtype) for value, dtype in (left, right))
    b = nonzero(b)
    floored = a.floordiv(b)
    return pl.when(((a % b) != 0) & ((a < 0) != (b < 0))).then(floored + 1).otherwise(floored)


def c_dtype_of_decimal_quotient(left: pl.DataType, right: pl.DataType) -> pl.DataType:
    return decimal_result("/", as_decimal(_decimal_operand(left)), as_decimal(_decimal_operand(right)))


def _as_long(value: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    if dtype == pl.String():
        return spark_cast(spark_cast(value, dtype, pl.Float64()), pl.Float64(), pl.Int64())
    return spark_cast(value, dtype, pl.Int64())


def _decimal_operand(dtype: pl.DataType) -> pl.DataType:
    return pl.Decimal(1, 0) if is_null(dtype) else dtype


def _decimal(op: str, left: tuple[pl.Expr, pl.DataType], right: tuple[pl.Expr, pl.DataType]) -> pl.Expr:
    """Decimal arithmetic at Spark's result precision and scale; overflow gives NULL."""
    lt, rt = as_decimal(_decimal_operand(left[1])), as_decimal(_decimal_operand(right[1]))
    result = decimal_result("%" if op == "PMOD" else op, lt, rt)
    scale = result.scale if op == "/" else max(lt.scale, rt.scale)
    if op == "*":
        scale = lt.scale + rt.scale
    a = left[0].cast(pl.Decimal(38, scale), strict=False)
    b = right[0].cast(pl.Decimal(38, rt.scale if op in ("/", "*") else scale), strict=False)
    return _apply(op, a, b, pl.Decimal(38, scale)).cast(result, strict=False)


def _interval(c: Compiler, value: exp.Expression, interval: exp.Interval, sign: int) -> pl.Expr:
    count = interval.this
    if not (isinstance(count, exp.Literal) and str(count.this).lstrip("-").isdigit()):
        raise SqlExpressionError(f"INTERVAL needs a whole number, got {count.sql()!r} (in {c.text!r})")
    amount = int(str(count.this)) * sign
    unit = str(interval.unit.this).upper().rstrip("S") if interval.unit else "DAY"
    if unit not in _OFFSET_UNITS:
        raise SqlExpressionError(f"INTERVAL unit '{unit}' is not supported (in {c.text!r})")
    start = c.compile(value)
    if c.dtype(value) == pl.Date() and unit in ("HOUR", "MINUTE", "SECOND"):  # Spark: a timestamp then
        start = c.cast(value, pl.Datetime("us", "UTC"))
    return start.dt.offset_by(f"{amount}{_OFFSET_UNITS[unit]}")


def comparison(op: Callable[[pl.Expr, pl.Expr], pl.Expr], *, equality: bool = False) -> Handler:
    """``= <> < <= > >= <=>``: both sides cast to Spark's common comparison type."""
    null_safe = op in (pl.Expr.eq_missing, pl.Expr.ne_missing)
    return lambda c, n: op(*coerced_pair(c, n.this, n.args["expression"], equality=equality, null_safe=null_safe))


def coerced_pair(
    c: Compiler, left: exp.Expression, right: exp.Expression, *, equality: bool = False, null_safe: bool = False
) -> tuple[pl.Expr, pl.Expr]:
    """Both operands cast to the type Spark compares them in.

    ``equality``: ``=``/``<=>`` also compare a BOOLEAN with a number (as 1/0; Spark's BooleanEquality).
    """
    left_type, right_type = c.dtype(left), c.dtype(right)
    if equality and pl.Boolean() in (left_type, right_type):
        other_node, other = (right, right_type) if left_type == pl.Boolean() else (left, left_type)
        if is_numeric(other):
            flag = _zero_or_one(other_node)
            if flag is not None:  # b = 1 is b, b = 0 is NOT b (a cast of TRUE to DECIMAL(2,2) would overflow)
                pair = (
                    (c.compile(left), pl.lit(flag)) if left_type == pl.Boolean() else (pl.lit(flag), c.compile(right))
                )
                return pair
            return c.cast(left, other), c.cast(right, other)  # type: ignore[arg-type]
    try:
        common = comparison_type(left_type, right_type, ansi=c.ansi)
    except CoercionError as e:
        raise SqlExpressionError(f"{e} (in {c.text!r})") from None
    if common is None or is_null(common):
        return c.compile(left), c.compile(right)
    if c.ansi and pl.String() in (left_type, right_type):  # the STRING's cast raises on the rows Spark reads
        (left_value, left_checks), (right_value, right_checks) = (c.cast_checked(n, common) for n in (left, right))
        checks = operand_checks(
            c, (left, left_value, left_checks), (right, right_value, right_checks), null_safe=null_safe
        )
        return (ansi.guard_all(left_value, common, checks, c.text) if checks else left_value), right_value
    return c.cast(left, common), c.cast(right, common)


def _zero_or_one(node: exp.Expression) -> bool | None:
    literal = node.this if isinstance(node, (exp.Cast, exp.TryCast)) else node
    if isinstance(literal, exp.Literal) and not literal.is_string:
        value = float(str(literal.this))
        return bool(value) if value in (0.0, 1.0) else None
    return None


def null_safe_equal(a: pl.Expr, b: pl.Expr) -> pl.Expr:
    return a.eq_missing(b)


def boolean(c: Compiler, node: exp.Expression, key: str = "this", *, strict: bool = False) -> pl.Expr:
    """An operand of AND/OR/NOT/IF: BOOLEAN or NULL (``strict``, a CASE condition: BOOLEAN only)."""
    child = node.args[key]
    dtype = c.dtype(child)
    if dtype is None or dtype == pl.Boolean():
        return c.compile(child)
    if is_null(dtype) and not strict:
        return c.cast(child, pl.Boolean())
    raise SqlExpressionError(f"'{child.sql(dialect='spark')}' is {spark_name(dtype)}, not BOOLEAN (in {c.text!r})")


def like(c: Compiler, node: exp.Like | exp.ILike) -> pl.Expr:
    """``[NOT] LIKE`` / ``[NOT] ILIKE`` with a literal pattern (``\\`` escapes ``%`` and ``_``)."""
    c.allow_args(node, "this", "expression", "negate")
    pattern = node.args.get("expression")
    if isinstance(pattern, exp.Null):
        return pl.lit(None, pl.Boolean())
    regex = like_regex(c.literal_str(pattern))
    flags = "(?si)" if isinstance(node, exp.ILike) else "(?s)"
    matched = c.cast(node.this, pl.String()).str.contains(flags + regex)
    return ~matched if node.args.get("negate") else matched


def like_regex(pattern: str) -> str:
    """A LIKE pattern as an anchored regular expression."""
    parts, escaped = [], False
    for ch in pattern:
        if escaped:
            parts.append(re.escape(ch))
            escaped = False
        elif ch == "\\":
            escaped = True
        else:
            parts.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
    if escaped:
        raise SqlExpressionError(f"the LIKE pattern {pattern!r} ends with the escape character")
    return "^" + "".join(parts) + "$"


def rlike(c: Compiler, node: exp.RegexpLike) -> pl.Expr:
    """``RLIKE``/``REGEXP``: a regex found anywhere in the string (Java ``find``)."""
    c.allow_args(node, "this", "expression")
    pattern = c.literal_str(node.args.get("expression"))
    try:
        re.compile(pattern)
    except re.error as e:
        raise SqlExpressionError(f"RLIKE pattern {pattern!r} is not a valid regex: {e} (in {c.text!r})") from None
    return c.cast(node.this, pl.String()).str.contains(pattern)


def in_list(c: Compiler, node: exp.In) -> pl.Expr:
    """``x IN (v1, ...)``: TRUE on a match, else NULL when x or any value is NULL, else FALSE."""
    c.allow_args(node, "this", "expressions")
    values = node.expressions
    if not values:
        raise SqlExpressionError(f"IN needs a list of values (in {c.text!r})")
    try:
        common = common_type([c.dtype(node.this), *(c.dtype(v) for v in values)], ansi=c.ansi)
    except CoercionError as e:
        raise SqlExpressionError(f"{e} (in {c.text!r})") from None
    if common is None or is_null(common):
        subject, items = c.compile(node.this), [c.compile(v) for v in values]
    elif c.ansi and not c.constant_null(node.this):  # the items are read where the value is not NULL
        subject, first = c.cast_checked(node.this, common)
        casts = [c.cast_checked(v, common) for v in values]
        items = [item for item, _ in casts]
        checks = first + ansi.masked([check for _, found in casts for check in found], subject.is_not_null())
        subject = ansi.guard_all(subject, common, checks, c.text) if checks else subject
    elif c.ansi:  # NULL IN (...): Spark folds it to NULL, casting nothing
        subject, items = c.compile(node.this).cast(common), [c.cast_checked(v, common)[0] for v in values]
    else:
        subject, items = c.cast(node.this, common), [c.cast(v, common) for v in values]
    result = subject == items[0]
    for item in items[1:]:
        result = result | (subject == item)  # Kleene OR: TRUE wins, else NULL if any NULL, else FALSE
    return result


def between(c: Compiler, node: exp.Between) -> pl.Expr:
    c.allow_args(node, "this", "low", "high")
    low = pl.Expr.__ge__(*coerced_pair(c, node.this, node.args["low"]))
    high = pl.Expr.__le__(*coerced_pair(c, node.this, node.args["high"]))
    return low & high


def is_(c: Compiler, node: exp.Is) -> pl.Expr:
    """``IS NULL``, ``IS TRUE``, ``IS FALSE`` (never NULL themselves)."""
    target = node.args["expression"]
    if isinstance(target, exp.Null):
        return c.arg(node).is_null()
    if isinstance(target, exp.Boolean):  # Spark: x IS TRUE is x <=> TRUE
        return pl.Expr.eq_missing(*coerced_pair(c, node.this, target, equality=True, null_safe=True))
    raise SqlExpressionError(f"IS {target.sql(dialect='spark')} is not supported (in {c.text!r})")


def negate(c: Compiler, node: exp.Neg) -> pl.Expr:
    dtype = c.dtype(node.this)
    if is_null(dtype):
        return pl.lit(None, pl.Float64())
    if dtype == pl.String():
        return -c.cast(node.this, pl.Float64())
    if dtype is not None and not (
        is_integral(dtype) or dtype in (pl.Float64(), pl.Float32()) or isinstance(dtype, pl.Decimal) or is_null(dtype)
    ):
        raise SqlExpressionError(f"cannot negate {spark_name(dtype)} (in {c.text!r})")
    value = c.compile(node.this)
    # -(-2147483648) overflows; '-9223372036854775808L' (sqlglot: the negation of a cast literal) does not
    literal = isinstance(node.this, exp.Cast) and isinstance(node.this.this, exp.Literal)
    if c.ansi and dtype is not None and is_integral(dtype) and not literal:
        lowest = value == -(2 ** (_BITS[dtype] - 1))
        detail = f"{spark_name(dtype).lower()} overflow ({{value}} cannot be negated)."
        return ansi.guard(-value, dtype, lowest, value, "ARITHMETIC_OVERFLOW", detail, c.text)
    return -value


def bitwise(op: Callable[[pl.Expr, pl.Expr], pl.Expr]) -> Handler:
    """``& | ^`` on integers of the wider integer type."""

    def handler(c: Compiler, node: exp.Expression) -> pl.Expr:
        left, right = node.this, node.args["expression"]
        types = [c.dtype(left), c.dtype(right)]
        if any(t is not None and not (is_integral(t) or is_null(t)) for t in types):
            raise SqlExpressionError(f"bitwise operators need integers (in {c.text!r})")
        known = [t for t in types if t is not None and not is_null(t)]
        common = max(known, key=lambda t: _INTEGERS.index(t), default=pl.Int32())
        return op(c.cast(left, common), c.cast(right, common))

    return handler


def concat_pipe(c: Compiler, node: exp.DPipe) -> pl.Expr:
    """``a || b``: both as strings; NULL if either is NULL."""
    return pl.concat_str([c.cast(node.this, pl.String()), c.cast(node.args["expression"], pl.String())])
