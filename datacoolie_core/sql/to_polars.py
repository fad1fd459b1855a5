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
    return _Compiler(schema, now or datetime.now(UTC), node.sql(dialect=READ_DIALECT)).compile(node)


def validate_expression(sql: str) -> str:
    """Check ``sql`` parses and compiles; return it unchanged (for model validators)."""
    compile_expression(sql)
    return sql


class _Compiler:
    def __init__(self, schema: Schema | None, now: datetime, text: str) -> None:
        self.schema = dict(schema) if schema is not None else None
        self.by_lower = {name.lower(): name for name in self.schema or {}}
        self.now = now
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


def _literal(c: _Compiler, node: exp.Literal) -> pl.Expr:
    if node.is_string:
        return pl.lit(str(node.this), dtype=pl.String)
    text = str(node.this)
    return pl.lit(float(text)) if any(ch in text for ch in ".eE") else pl.lit(int(text))


def _binary(op: Callable[[pl.Expr, pl.Expr], pl.Expr]) -> Callable[[_Compiler, exp.Expression], pl.Expr]:
    return lambda c, n: op(c.arg(n), c.arg(n, "expression"))


def _unary(op: Callable[[pl.Expr], pl.Expr]) -> Callable[[_Compiler, exp.Expression], pl.Expr]:
    return lambda c, n: op(c.arg(n))


def _add_or_sub(sign: int) -> Callable[[_Compiler, exp.Expression], pl.Expr]:
    def handler(c: _Compiler, node: exp.Expression) -> pl.Expr:
        right = node.args["expression"]
        if isinstance(right, exp.Interval):
            amount = int(str(right.this.this)) * sign
            unit = str(right.unit.this).upper() if right.unit else "DAY"
            return c.arg(node).dt.offset_by(f"{amount}{_OFFSET_UNITS[unit.rstrip('S')]}")
        left = c.arg(node)
        return left + c.compile(right) if sign > 0 else left - c.compile(right)

    return handler


def _in(c: _Compiler, node: exp.In) -> pl.Expr:
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


def _like(case_insensitive: bool) -> Callable[[_Compiler, exp.Expression], pl.Expr]:
    def handler(c: _Compiler, node: exp.Expression) -> pl.Expr:
        pattern = c.literal_str(node.args.get("expression"))
        regex = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern)
        return c.arg(node).str.contains(("(?is)" if case_insensitive else "(?s)") + f"^{regex}$")

    return handler


def _case(c: _Compiler, node: exp.Case) -> pl.Expr:
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


def _if(c: _Compiler, node: exp.If) -> pl.Expr:
    otherwise = node.args.get("false")
    return (
        pl.when(c.arg(node))
        .then(c.arg(node, "true"))
        .otherwise(c.compile(otherwise) if otherwise is not None else pl.lit(None))
    )


def _cast(c: _Compiler, node: exp.Cast) -> pl.Expr:
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


def _trim(c: _Compiler, node: exp.Trim) -> pl.Expr:
    chars = c.literal_str(node.args["expression"]) if node.args.get("expression") else " "
    position = str(node.args.get("position") or "BOTH").upper()
    value = c.arg(node)
    if position == "LEADING":
        return value.str.strip_chars_start(chars)
    if position == "TRAILING":
        return value.str.strip_chars_end(chars)
    return value.str.strip_chars(chars)


def _substring(c: _Compiler, node: exp.Substring) -> pl.Expr:
    start = c.literal_int(node.args.get("start"))
    length = node.args.get("length")
    return c.arg(node).str.slice(max(start - 1, 0), c.literal_int(length) if length is not None else None)


def _strftime_format(c: _Compiler, node: exp.Expression) -> str:
    # sqlglot translates Java/Spark patterns to strftime and marks fixed-width fields "strict"
    return c.literal_str(node.args.get("format")).replace("strict", "")


def _time_to_str(c: _Compiler, node: exp.TimeToStr) -> pl.Expr:
    return c.temporal(node.this, pl.Datetime).dt.to_string(_strftime_format(c, node))


def _to_date(c: _Compiler, node: exp.Expression) -> pl.Expr:
    if node.args.get("format") is not None:
        return c.arg(node).cast(pl.String).str.to_date(_strftime_format(c, node), strict=False)
    return c.temporal(node, pl.Date)


def _to_time(c: _Compiler, node: exp.Expression) -> pl.Expr:
    if node.args.get("format") is not None:
        return c.arg(node).cast(pl.String).str.to_datetime(_strftime_format(c, node), strict=False)
    return c.temporal(node, pl.Datetime)


def _part(name: str) -> Callable[[_Compiler, exp.Expression], pl.Expr]:
    return lambda c, n: getattr(c.temporal(n.this, pl.Datetime).dt, name)()


def _extract(c: _Compiler, node: exp.Extract) -> pl.Expr:
    unit = str(node.this.name).upper()
    if unit not in _EXTRACT:
        raise SqlExpressionError(f"EXTRACT({unit} ...) is not supported (in {c.text!r})")
    return getattr(c.temporal(node.args["expression"], pl.Datetime).dt, _EXTRACT[unit])()


def _truncate(c: _Compiler, node: exp.Expression) -> pl.Expr:
    unit = str(node.args["unit"].name).upper()
    if unit not in _TRUNC_UNITS:
        raise SqlExpressionError(f"DATE_TRUNC unit '{unit}' is not supported (in {c.text!r})")
    return c.temporal(node.this, pl.Datetime).dt.truncate(_TRUNC_UNITS[unit])


def _date_add(c: _Compiler, node: exp.Expression) -> pl.Expr:
    unit = str(node.args["unit"].name).upper() if node.args.get("unit") else "DAY"
    return c.temporal(node.this, pl.Date).dt.offset_by(f"{c.literal_int(node.args['expression'])}{_OFFSET_UNITS[unit]}")


def _pad(c: _Compiler, node: exp.Pad) -> pl.Expr:
    fill = c.literal_str(node.args["fill_pattern"]) if node.args.get("fill_pattern") else " "
    if len(fill) != 1:
        raise SqlExpressionError(f"LPAD/RPAD fill must be one character (in {c.text!r})")
    width = c.literal_int(node.args["expression"])
    value = c.arg(node)
    padded = value.str.pad_start(width, fill) if node.args.get("is_left") else value.str.pad_end(width, fill)
    return padded.str.slice(0, width)


def _concat_ws(c: _Compiler, node: exp.ConcatWs) -> pl.Expr:
    separator, *parts = node.expressions
    return pl.concat_str([c.compile(p) for p in parts], separator=c.literal_str(separator), ignore_nulls=True)


def _anonymous(c: _Compiler, node: exp.Anonymous) -> pl.Expr:
    name = str(node.name).upper()
    if name in ("NOW", "GETDATE", "SYSDATE", "LOCALTIMESTAMP"):
        return pl.lit(c.now)
    raise SqlExpressionError(
        f"SQL function '{name}' is not supported (in {c.text!r}); supported functions: {', '.join(SUPPORTED_FUNCTIONS)}"
    )


_HANDLERS: dict[type[exp.Expression], Callable[[_Compiler, Any], pl.Expr]] = {
    exp.Column: _Compiler.column,
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
    exp.Coalesce: lambda c, n: pl.coalesce([c.arg(n), *(c.compile(e) for e in n.expressions)]),
    exp.Nullif: lambda c, n: pl.when(c.arg(n) == c.arg(n, "expression")).then(None).otherwise(c.arg(n)),
    exp.Nvl2: lambda c, n: pl.when(c.arg(n).is_not_null()).then(c.arg(n, "true")).otherwise(c.arg(n, "false")),
    exp.Cast: _cast,
    exp.TryCast: _cast,
    exp.Upper: _unary(lambda a: a.str.to_uppercase()),
    exp.Lower: _unary(lambda a: a.str.to_lowercase()),
    exp.Trim: _trim,
    exp.Length: _unary(lambda a: a.str.len_chars()),
    exp.Substring: _substring,
    exp.Left: lambda c, n: c.arg(n).str.head(c.literal_int(n.args["expression"])),
    exp.Right: lambda c, n: c.arg(n).str.tail(c.literal_int(n.args["expression"])),
    exp.Concat: lambda c, n: pl.concat_str([c.compile(e) for e in n.expressions]),
    exp.ConcatWs: _concat_ws,
    exp.Pad: _pad,
    exp.RegexpReplace: lambda c, n: c.arg(n).str.replace_all(
        c.literal_str(n.args["expression"]), c.literal_str(n.args["replacement"]) if n.args.get("replacement") else ""
    ),
    exp.Round: lambda c, n: c.arg(n).round(c.literal_int(n.args["decimals"]) if n.args.get("decimals") else 0),
    exp.Floor: _unary(lambda a: a.floor()),
    exp.Ceil: _unary(lambda a: a.ceil()),
    exp.Abs: _unary(lambda a: a.abs()),
    exp.Greatest: lambda c, n: pl.max_horizontal([c.arg(n), *(c.compile(e) for e in n.expressions)]),
    exp.Least: lambda c, n: pl.min_horizontal([c.arg(n), *(c.compile(e) for e in n.expressions)]),
    exp.Year: _part("year"),
    exp.Quarter: _part("quarter"),
    exp.Month: _part("month"),
    exp.Day: _part("day"),
    exp.Hour: _part("hour"),
    exp.Minute: _part("minute"),
    exp.Second: _part("second"),
    exp.Extract: _extract,
    exp.TimestampTrunc: _truncate,
    exp.DateTrunc: _truncate,
    exp.TimeToStr: _time_to_str,
    exp.TsOrDsToDate: _to_date,
    exp.StrToDate: _to_date,
    exp.StrToTime: _to_time,
    exp.TimeStrToTime: lambda c, n: c.temporal(n, pl.Datetime),
    exp.TsOrDsAdd: _date_add,
    exp.DateAdd: _date_add,
    exp.DateDiff: lambda c, n: (
        c.temporal(n.this, pl.Date) - c.temporal(n.args["expression"], pl.Date)
    ).dt.total_days(),
    exp.CurrentTimestamp: lambda c, n: pl.lit(c.now),
    exp.CurrentDate: lambda c, n: pl.lit(c.now.date()),
    exp.Anonymous: _anonymous,
}

SUPPORTED_FUNCTIONS: tuple[str, ...] = (
    "ABS", "CASE", "CAST", "CEIL", "COALESCE/NVL/IFNULL", "CONCAT", "CONCAT_WS", "CURRENT_DATE",
    "CURRENT_TIMESTAMP/NOW", "DATEDIFF", "DATE_ADD", "DATE_FORMAT", "DATE_TRUNC", "DAY", "EXTRACT", "FLOOR",
    "GREATEST", "HOUR", "IF", "LEAST", "LEFT", "LENGTH", "LOWER", "LPAD", "LTRIM", "MINUTE", "MONTH", "NULLIF",
    "NVL2", "QUARTER", "REGEXP_REPLACE", "RIGHT", "ROUND", "RPAD", "RTRIM", "SECOND", "SUBSTRING", "TO_DATE",
    "TO_TIMESTAMP", "TRIM", "UPPER", "YEAR",
)  # fmt: skip
