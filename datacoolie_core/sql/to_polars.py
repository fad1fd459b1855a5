"""Compile a validated SQL expression (sqlglot AST, Spark dialect) into a Polars expression.

DataCoolie metadata is written for Spark SQL: ``DATE_FORMAT(ts, 'yyyy-MM')``, ``YEAR(d)``,
``CAST(x AS DECIMAL(12,2))``. Polars' own SQL lacks many of these, so expressions are compiled from
sqlglot's AST with an explicit allow-list. Anything outside it is a :class:`SqlExpressionError`
at validation time, never a surprise mid-write.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions import FUNCTION_NAMES, FUNCTION_NODES, SUPPORTED_FUNCTIONS
from datacoolie_core.sql.parse import READ_DIALECT, SqlExpressionError, parse_expression
from datacoolie_core.types import polars_dtype

Schema = Mapping[str, pl.DataType]
_TRUNC_UNITS = {"YEAR": "1y", "QUARTER": "1q", "MONTH": "1mo", "WEEK": "1w", "DAY": "1d", "HOUR": "1h",
                "MINUTE": "1m", "SECOND": "1s"}  # fmt: skip
_OFFSET_UNITS = {"YEAR": "y", "MONTH": "mo", "WEEK": "w", "DAY": "d", "HOUR": "h", "MINUTE": "m", "SECOND": "s"}
_EXTRACT = {"YEAR": "year", "QUARTER": "quarter", "MONTH": "month", "WEEK": "week", "DAY": "day",
            "DAYOFWEEK": "weekday", "DOW": "weekday", "DAYOFYEAR": "ordinal_day", "DOY": "ordinal_day",
            "HOUR": "hour", "MINUTE": "minute", "SECOND": "second"}  # fmt: skip


def compile_expression(
    sql: str | exp.Expression, *, schema: Schema | None = None, now: datetime | None = None
) -> pl.Expr:
    """A Polars expression computing ``sql`` row by row.

    Args:
        sql: SQL text (parsed with :func:`parse_expression`) or an already parsed node.
        schema: the frame's columns and dtypes. With it, identifiers resolve case-insensitively and
            date/time functions adapt to string or temporal inputs; without it (validation only)
            names are used as written.
        now: the instant ``CURRENT_TIMESTAMP``/``NOW()``/``CURRENT_DATE`` evaluate to, fixed for a
            batch like the system columns; default: now in UTC.

    Raises:
        SqlExpressionError: an unsupported function/construct, or an unknown column (with a schema).
    """
    node = parse_expression(sql) if isinstance(sql, str) else sql
    return Compiler(schema, now or datetime.now(UTC), node.sql(dialect=READ_DIALECT)).compile(node)


def validate_expression(sql: str) -> str:
    """Check ``sql`` parses and compiles; return it unchanged (for model validators)."""
    compile_expression(sql)
    return sql


class Compiler:
    def __init__(self, schema: Schema | None, now: datetime, text: str) -> None:
        self.schema = dict(schema) if schema is not None else None
        self.by_lower = {name.lower(): name for name in self.schema or {}}
        self.now: datetime = now
        self.text = text

    def compile(self, node: exp.Expression) -> pl.Expr:
        handler = _HANDLERS.get(type(node))
        if handler is None:
            name = node.sql_name() if isinstance(node, exp.Func) else type(node).__name__
            if isinstance(node, exp.Anonymous):
                name = str(node.name).upper()
            raise SqlExpressionError(
                f"SQL function or construct '{name}' is not supported (in {self.text!r}); "
                f"supported functions: {', '.join(SUPPORTED_FUNCTIONS)}"
            )
        return handler(self, node)

    def arg(self, node: exp.Expression, key: str = "this") -> pl.Expr:
        child = node.args.get(key)
        if child is None:
            raise SqlExpressionError(f"'{node.sql(dialect=READ_DIALECT)}' is missing an argument (in {self.text!r})")
        return self.compile(child)

    def column(self, node: exp.Column) -> pl.Expr:
        name = node.name
        if self.schema is None:
            return pl.col(name)
        resolved = name if name in self.schema else self.by_lower.get(name.lower())
        if resolved is None:
            raise SqlExpressionError(
                f"column '{name}' in {self.text!r} does not exist (columns: {', '.join(self.schema)})"
            )
        return pl.col(resolved)

    def dtype_of(self, node: exp.Expression) -> pl.DataType | None:
        """The input dtype when ``node`` is a plain column and the schema is known."""
        if isinstance(node, exp.Column) and self.schema is not None:
            name = node.name if node.name in self.schema else self.by_lower.get(node.name.lower())
            return self.schema.get(name) if name else None
        return None

    def temporal(self, node: exp.Expression, target: type[pl.DataType]) -> pl.Expr:
        """``node`` as a Date/Datetime: strings are parsed (ISO), temporals pass through."""
        inner = (
            node.this
            if isinstance(node, (exp.TsOrDsToDate, exp.TimeStrToTime)) and not node.args.get("format")
            else node
        )
        expr = self.compile(inner)
        dtype = self.dtype_of(inner)
        if dtype is not None and dtype.is_temporal():
            return expr.dt.date() if target is pl.Date and isinstance(dtype, pl.Datetime) else expr
        if target is pl.Date:
            return expr.cast(pl.String).str.to_date(strict=False)
        return expr.cast(pl.String).str.to_datetime(strict=False, time_zone="UTC")

    def literal_int(self, node: exp.Expression | None) -> int:
        if isinstance(node, exp.Literal) and not node.is_string:
            return int(node.this)
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
            return -int(node.this.this)
        raise SqlExpressionError(
            f"expected an integer literal, got {node.sql() if node else None!r} (in {self.text!r})"
        )

    def literal_str(self, node: exp.Expression | None) -> str:
        if isinstance(node, exp.Literal) and node.is_string:
            return str(node.this)
        raise SqlExpressionError(f"expected a string literal, got {node.sql() if node else None!r} (in {self.text!r})")


def _literal(c: Compiler, node: exp.Literal) -> pl.Expr:
    if node.is_string:
        return pl.lit(str(node.this), dtype=pl.String)
    text = str(node.this)
    return pl.lit(float(text)) if any(ch in text for ch in ".eE") else pl.lit(int(text))


def _binary(op: Callable[[pl.Expr, pl.Expr], pl.Expr]) -> Callable[[Compiler, exp.Expression], pl.Expr]:
    return lambda c, n: op(c.arg(n), c.arg(n, "expression"))


def _unary(op: Callable[[pl.Expr], pl.Expr]) -> Callable[[Compiler, exp.Expression], pl.Expr]:
    return lambda c, n: op(c.arg(n))


def _add_or_sub(sign: int) -> Callable[[Compiler, exp.Expression], pl.Expr]:
    def handler(c: Compiler, node: exp.Expression) -> pl.Expr:
        right = node.args["expression"]
        if isinstance(right, exp.Interval):
            amount = int(str(right.this.this)) * sign
            unit = str(right.unit.this).upper() if right.unit else "DAY"
            return c.arg(node).dt.offset_by(f"{amount}{_OFFSET_UNITS[unit.rstrip('S')]}")
        left = c.arg(node)
        return left + c.compile(right) if sign > 0 else left - c.compile(right)

    return handler


def _in(c: Compiler, node: exp.In) -> pl.Expr:
    values = node.expressions
    if not values:
        raise SqlExpressionError(f"IN needs a list of values (in {c.text!r})")
    left = c.arg(node)
    if all(isinstance(v, (exp.Literal, exp.Boolean)) for v in values):
        return left.is_in([_python_value(v) for v in values])
    result = left == c.compile(values[0])
    for value in values[1:]:
        result = result | (left == c.compile(value))
    return result


def _python_value(node: exp.Expression) -> Any:
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if node.is_string:
        return str(node.this)
    text = str(node.this)
    return float(text) if any(ch in text for ch in ".eE") else int(text)


def _like(case_insensitive: bool) -> Callable[[Compiler, exp.Expression], pl.Expr]:
    def handler(c: Compiler, node: exp.Expression) -> pl.Expr:
        pattern = c.literal_str(node.args.get("expression"))
        regex = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern)
        return c.arg(node).str.contains(("(?is)" if case_insensitive else "(?s)") + f"^{regex}$")

    return handler


def _case(c: Compiler, node: exp.Case) -> pl.Expr:
    subject = node.args.get("this")
    chain: Any = pl
    for branch in node.args.get("ifs") or []:
        condition = c.arg(branch)
        if subject is not None:
            condition = c.compile(subject) == condition
        chain = chain.when(condition).then(c.arg(branch, "true"))
    if chain is pl:
        raise SqlExpressionError(f"CASE needs at least one WHEN (in {c.text!r})")
    default = node.args.get("default")
    return chain.otherwise(c.compile(default) if default is not None else pl.lit(None))


def _if(c: Compiler, node: exp.If) -> pl.Expr:
    otherwise = node.args.get("false")
    return (
        pl.when(c.arg(node))
        .then(c.arg(node, "true"))
        .otherwise(c.compile(otherwise) if otherwise is not None else pl.lit(None))
    )


def _cast(c: Compiler, node: exp.Cast) -> pl.Expr:
    to = node.args["to"]
    try:
        dtype = polars_dtype(to.sql(dialect=READ_DIALECT))
    except ValueError as e:
        raise SqlExpressionError(f"{e} (in {c.text!r})") from None
    source = node.this
    if (
        isinstance(dtype, (pl.Date, pl.Datetime))
        and (c.dtype_of(source) in (None, pl.String))
        and isinstance(source, exp.Literal)
    ):
        return c.temporal(source, type(dtype)).cast(dtype)
    if isinstance(dtype, (pl.Date, pl.Datetime)) and c.dtype_of(source) == pl.String:
        return c.temporal(source, type(dtype)).cast(dtype)
    return c.compile(source).cast(dtype, strict=False)


def _anonymous(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    name = str(node.name).upper()
    handler = FUNCTION_NAMES.get(name)
    if handler is None:
        raise SqlExpressionError(
            f"SQL function '{name}' is not supported (in {c.text!r}); "
            f"supported functions: {', '.join(SUPPORTED_FUNCTIONS)}"
        )
    return handler(c, node)


_HANDLERS: dict[type[exp.Expression], Callable[[Compiler, Any], pl.Expr]] = {
    exp.Column: Compiler.column,
    exp.Literal: _literal,
    exp.Boolean: lambda c, n: pl.lit(bool(n.this)),
    exp.Null: lambda c, n: pl.lit(None),
    exp.Paren: lambda c, n: c.arg(n),
    exp.Neg: _unary(lambda a: -a),
    exp.Not: _unary(lambda a: ~a),
    exp.Add: _add_or_sub(1),
    exp.Sub: _add_or_sub(-1),
    exp.Mul: _binary(lambda a, b: a * b),
    exp.Div: _binary(lambda a, b: a / b),
    exp.IntDiv: _binary(lambda a, b: a // b),
    exp.Mod: _binary(lambda a, b: a % b),
    exp.EQ: _binary(lambda a, b: a == b),
    exp.NEQ: _binary(lambda a, b: a != b),
    exp.NullSafeEQ: _binary(lambda a, b: a.eq_missing(b)),
    exp.LT: _binary(lambda a, b: a < b),
    exp.LTE: _binary(lambda a, b: a <= b),
    exp.GT: _binary(lambda a, b: a > b),
    exp.GTE: _binary(lambda a, b: a >= b),
    exp.And: _binary(lambda a, b: a & b),
    exp.Or: _binary(lambda a, b: a | b),
    exp.DPipe: _binary(lambda a, b: pl.concat_str([a, b])),
    exp.Is: lambda c, n: (
        c.arg(n).is_null()
        if isinstance(n.args["expression"], exp.Null)
        else c.arg(n).eq_missing(c.arg(n, "expression"))
    ),
    exp.In: _in,
    exp.Between: lambda c, n: (c.arg(n) >= c.arg(n, "low")) & (c.arg(n) <= c.arg(n, "high")),
    exp.Like: _like(False),
    exp.ILike: _like(True),
    exp.Case: _case,
    exp.If: _if,
    exp.Cast: _cast,
    exp.TryCast: _cast,
    exp.Anonymous: _anonymous,
    **FUNCTION_NODES,
}
