"""Spark SQL math functions: DOUBLE results unless Spark keeps the input type (ABS, GREATEST, ...).

Functions Spark defines through other expressions (``PMOD``, ``NVL2``, ``TRY_DIVIDE``) are compiled
as those expressions, so types and NULL/overflow rules are the compiler's Spark operators.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.ansi import guard
from datacoolie_core.sql.coercion import spark_name
from datacoolie_core.sql.functions import bits, rounding
from datacoolie_core.sql.functions.registry import Handler, arity, dtype, expr_dtype, number
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

_FACTORIALS = {n: math.factorial(n) for n in range(21)}


def _double(op: Callable[[pl.Expr], pl.Expr]) -> Handler:
    return lambda c, n: op(number(c, n.this))


def _positive_only(op: Callable[[pl.Expr], pl.Expr], low: float = 0.0) -> Callable[[pl.Expr], pl.Expr]:
    # Spark's logarithms are NULL (not NaN) outside their domain
    return lambda x: pl.when(x > low).then(op(x)).otherwise(pl.lit(None, dtype=pl.Float64))


def _log(c: Compiler, node: exp.Log) -> pl.Expr:
    if node.args.get("expression") is None:
        return _positive_only(lambda x: x.log())(number(c, node.this))
    base, value = number(c, node.this), number(c, node.args["expression"])
    if isinstance(node.this, exp.Literal) and str(node.this.this) == "10":
        return _positive_only(lambda x: x.log10())(value)
    ratio = value.log() / base.log()
    return pl.when((base > 0) & (value > 0)).then(ratio).otherwise(pl.lit(None, dtype=pl.Float64))


def _expm1(x: pl.Expr) -> pl.Expr:
    # exp(x) - 1 cancels for tiny x; there the series x + x²/2 + x³/6 is exact to double precision
    return pl.when(x.abs() < 1e-5).then(x + x * x / 2 + x * x * x / 6).otherwise(x.exp() - 1)


def _no_negative_zero(x: pl.Expr) -> pl.Expr:
    # Spark adds 0.0 to ATAN2's arguments so that -0.0 counts as 0.0 (Polars folds a literal ``+ 0.0`` away)
    return pl.when(x == 0).then(pl.lit(0.0)).otherwise(x)


def _hypot(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    left, right = (number(c, a).abs() for a in arity(c, node, 2))
    top = pl.max_horizontal(left, right)
    low = pl.min_horizontal(left, right)
    # scaled by the larger side so squares cannot overflow (Java's Math.hypot does the same)
    scaled = top * (1 + (low / top) ** 2).sqrt()
    return (
        pl.when(left.is_null() | right.is_null()).then(pl.lit(None, dtype=pl.Float64))
        .when(left.is_infinite() | right.is_infinite()).then(pl.lit(math.inf))
        .when(left.is_nan() | right.is_nan()).then(pl.lit(math.nan))
        .when(top == 0).then(pl.lit(0.0))
        .otherwise(scaled)
    )  # fmt: skip


_BITS: dict[pl.DataType, int] = {pl.Int8(): 8, pl.Int16(): 16, pl.Int32(): 32, pl.Int64(): 64}


def _abs(c: Compiler, node: exp.Abs) -> pl.Expr:
    """ABS: the smallest integer of its type stays negative with ANSI off (Java wraps) and raises
    ``ARITHMETIC_OVERFLOW`` with ANSI on."""
    found = dtype(c, node.this)
    if found is None or not found.is_numeric():
        return number(c, node.this).abs()
    value = c.compile(node.this)
    if c.ansi and found.is_integer():
        lowest = value == -(2 ** (_BITS[found] - 1))
        detail = f"{spark_name(found).lower()} overflow ({{value}} has no absolute value of its type)."
        return guard(value.abs(), found, lowest, value, "ARITHMETIC_OVERFLOW", detail, c.text)
    return value.abs()


def _sign(c: Compiler, node: exp.Sign) -> pl.Expr:
    return number(c, node.this).sign()


_INTEGER_DIGITS: dict[type[pl.DataType], int] = {pl.Int8: 3, pl.Int16: 5, pl.Int32: 10, pl.Int64: 20}


def wider_decimal(dtypes: list[pl.DataType]) -> pl.DataType | None:
    """Spark's common type of DECIMALs and integers (an INT is DECIMAL(10,0)), else ``None``."""
    if not any(isinstance(t, pl.Decimal) for t in dtypes):
        return None
    integral, scale = 0, 0
    for t in dtypes:
        if isinstance(t, pl.Decimal):
            integral, scale = max(integral, (t.precision or 38) - (t.scale or 0)), max(scale, t.scale or 0)
        elif type(t) in _INTEGER_DIGITS:
            integral = max(integral, _INTEGER_DIGITS[type(t)])
        elif t != pl.Null:
            return None
    return pl.Decimal(min(integral + scale, 38), scale)


def _extreme(horizontal: Callable[..., pl.Expr], nan_wins: bool) -> Handler:
    def handler(c: Compiler, node: exp.Expression) -> pl.Expr:
        nodes = [node.this, *node.expressions]
        values = [c.compile(e) for e in nodes]
        found = expr_dtype(c, horizontal(values))
        if found is None:
            return horizontal(values)
        target = wider_decimal([expr_dtype(c, v) for v in values]) or found  # type: ignore[misc]
        values = [v.cast(target) for v in values]
        result = horizontal(values)
        if not target.is_float():
            return result
        # Spark orders NaN above every number: GREATEST returns it, LEAST skips it
        nan = pl.any_horizontal([v.is_nan() for v in values])
        if nan_wins:
            return pl.when(nan).then(pl.lit(math.nan)).otherwise(result)
        return horizontal([pl.when(v.is_nan()).then(None).otherwise(v) for v in values]).fill_null(
            pl.when(nan).then(pl.lit(math.nan))
        )

    return handler


def _signed(c: Compiler, node: exp.Expression, negate: bool) -> pl.Expr:
    value = node.this if isinstance(node, exp.Negative) else arity(c, node, 1)[0]
    found = dtype(c, value)
    if found is not None and not found.is_numeric():
        value = exp.Cast(this=value.copy(), to=exp.DataType.build("DOUBLE"))  # Spark casts strings to DOUBLE
    return c.compile(exp.Neg(this=value.copy())) if negate else c.compile(value)


def _try_divide(c: Compiler, node: exp.SafeDivide) -> pl.Expr:
    spelled = exp.Div(this=node.this.copy(), expression=node.args["expression"].copy())
    c.unguarded.add(id(spelled))  # NULL for a zero divisor, also in ANSI mode
    return c.compile(spelled)


def _checked(operator: type[exp.Expression]) -> Handler:
    """TRY_ADD/TRY_SUBTRACT/TRY_MULTIPLY: the operator, NULL where Spark's integer result would overflow."""

    def handler(c: Compiler, node: exp.Expression) -> pl.Expr:
        left, right = node.this, node.args["expression"]
        spelled = operator(this=left.copy(), expression=right.copy())
        c.unguarded.add(id(spelled))  # TRY_: NULL where the operator would raise in ANSI mode
        result = c.compile(spelled)
        found = dtype(c, spelled)
        if found is None or not found.is_integer():
            return result  # without ANSI, the other types already give NULL where TRY_ does
        exact = _EXACT[operator](c.compile(left).cast(pl.Int128), c.compile(right).cast(pl.Int128))
        return pl.when(exact == result.cast(pl.Int128)).then(result).otherwise(None)

    return handler


_EXACT: dict[type[exp.Expression], Callable[[pl.Expr, pl.Expr], pl.Expr]] = {
    exp.Add: lambda a, b: a + b,
    exp.Sub: lambda a, b: a - b,
    exp.Mul: lambda a, b: a * b,
}


def _width_bucket(c: Compiler, node: exp.WidthBucket) -> pl.Expr:
    value, low, high = (number(c, node.args[k]) for k in ("this", "min_value", "max_value"))
    buckets = number(c, node.args["num_buckets"], "BIGINT")
    lower, upper = pl.min_horizontal(low, high), pl.max_horizontal(low, high)
    count = buckets.cast(pl.Float64)
    ascending = (
        pl.when(value < lower).then(0)
        .when(value >= upper).then(buckets + 1)
        .otherwise((count * (value - lower) / (upper - lower)).cast(pl.Int64, strict=False) + 1)
    )  # fmt: skip
    descending = (
        pl.when(value > upper).then(0)
        .when(value <= lower).then(buckets + 1)
        .otherwise((count * (upper - value) / (upper - lower)).cast(pl.Int64, strict=False) + 1)
    )  # fmt: skip
    # Spark gives NULL for a degenerate range or bucket count, NaN and infinite bounds
    invalid = (
        pl.any_horizontal(value.is_null(), low.is_null(), high.is_null(), buckets.is_null()) | (buckets <= 0) | (buckets == 2**63 - 1) | value.is_nan() | low.is_nan() | high.is_nan()
        | low.is_infinite() | high.is_infinite() | (low == high)
    )  # fmt: skip
    result = pl.when(low < high).then(ascending).otherwise(descending)
    return pl.when(invalid).then(None).otherwise(result).cast(pl.Int64)


def _factorial(c: Compiler, node: exp.Factorial) -> pl.Expr:
    value = number(c, node.this, "INT")
    return value.replace_strict(_FACTORIALS, default=None, return_dtype=pl.Int64)


def _bit_count(c: Compiler, node: exp.BitwiseCount) -> pl.Expr:
    found = dtype(c, node.this)
    if found == pl.Null:
        return pl.lit(None, dtype=pl.Int32)
    if found is not None and not found.is_integer():
        raise SqlExpressionError(f"BIT_COUNT needs an integer argument (in {c.text!r})")
    # Spark counts the bits of the value widened to 64 bits (a negative INT has 32 more)
    return c.compile(node.this).cast(pl.Int64).bitwise_count_ones().cast(pl.Int32)


_TRIG: dict[type[exp.Expression], Callable[[pl.Expr], pl.Expr]] = {
    exp.Sqrt: lambda x: x.sqrt(),
    exp.Cbrt: lambda x: x.cbrt(),
    exp.Exp: lambda x: x.exp(),
    exp.Ln: _positive_only(lambda x: x.log()),
    exp.Acos: lambda x: x.arccos(),
    # Spark's own formulas (not the libm functions), so large arguments overflow as in Spark
    exp.Acosh: lambda x: (x + (x * x - 1.0).sqrt()).log(),
    exp.Asin: lambda x: x.arcsin(),
    exp.Asinh: lambda x: pl.when(x == -math.inf).then(x).otherwise((x + (x * x + 1.0).sqrt()).log()),
    exp.Atan: lambda x: x.arctan(),
    exp.Atanh: lambda x: 0.5 * ((x.log1p()) - (-x).log1p()),
    exp.Cos: lambda x: x.cos(),
    exp.Cosh: lambda x: x.cosh(),
    exp.Sin: lambda x: x.sin(),
    exp.Sinh: lambda x: x.sinh(),
    exp.Tan: lambda x: x.tan(),
    exp.Tanh: lambda x: x.tanh(),
    exp.Cot: lambda x: 1.0 / x.tan(),
    exp.Csc: lambda x: 1.0 / x.sin(),
    exp.Sec: lambda x: 1.0 / x.cos(),
    exp.Degrees: lambda x: x.degrees(),
    exp.Radians: lambda x: x.radians(),
}
NODES: dict[type[exp.Expression], Handler] = {
    **{node: _double(op) for node, op in _TRIG.items()},
    exp.Log: _log,
    exp.Pow: lambda c, n: number(c, n.this).pow(number(c, n.args["expression"])),
    exp.Atan2: lambda c, n: pl.arctan2(
        _no_negative_zero(number(c, n.this)), _no_negative_zero(number(c, n.args["expression"]))
    ),
    exp.Abs: _abs,
    exp.Sign: _sign,
    exp.Negative: lambda c, n: _signed(c, n, negate=True),
    exp.Greatest: _extreme(pl.max_horizontal, nan_wins=True),
    exp.Least: _extreme(pl.min_horizontal, nan_wins=False),
    exp.Pi: lambda c, n: pl.lit(math.pi, dtype=pl.Float64),
    exp.Factorial: _factorial,
    exp.BitwiseCount: _bit_count,
    exp.SafeAdd: _checked(exp.Add),
    exp.SafeSubtract: _checked(exp.Sub),
    exp.SafeMultiply: _checked(exp.Mul),
    exp.SafeDivide: _try_divide,
    exp.WidthBucket: _width_bucket,
    **rounding.NODES,
    **bits.NODES,
}
NAMES: dict[str, Handler] = {
    "E": lambda c, n: pl.lit(math.e, dtype=pl.Float64),
    "EXPM1": lambda c, n: _expm1(number(c, arity(c, n, 1)[0])),
    "LOG1P": lambda c, n: _positive_only(lambda x: x.log1p(), -1.0)(number(c, arity(c, n, 1)[0])),
    "HYPOT": _hypot,
    "POSITIVE": lambda c, n: _signed(c, n, negate=False),
    **rounding.NAMES,
    **bits.NAMES,
}
SUPPORTED = ("ABS", "ACOS", "ACOSH", "ASIN", "ASINH", "ATAN", "ATAN2", "ATANH", "BIT_COUNT", "CBRT", "COS", "COSH",
             "COT", "CSC", "DEGREES", "E", "EXP", "EXPM1", "FACTORIAL", "GREATEST", "HYPOT", "LEAST", "LN", "LOG",
             "LOG10", "LOG1P", "LOG2", "NEGATIVE", "PI", "POSITIVE", "POW", "POWER", "RADIANS",
             "SEC", "SIGN", "SIGNUM", "SIN", "SINH", "SQRT", "TAN", "TANH", "TRY_ADD", "TRY_DIVIDE",
             "TRY_MULTIPLY", "TRY_SUBTRACT", "WIDTH_BUCKET", *bits.SUPPORTED,
             *rounding.SUPPORTED)  # fmt: skip
