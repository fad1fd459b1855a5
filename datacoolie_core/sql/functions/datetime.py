"""Spark SQL date and time functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions.registry import Handler
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

_TRUNC_UNITS = {"YEAR": "1y", "QUARTER": "1q", "MONTH": "1mo", "WEEK": "1w", "DAY": "1d", "HOUR": "1h",
                "MINUTE": "1m", "SECOND": "1s"}  # fmt: skip
_OFFSET_UNITS = {"YEAR": "y", "MONTH": "mo", "WEEK": "w", "DAY": "d", "HOUR": "h", "MINUTE": "m", "SECOND": "s"}
_EXTRACT = {"YEAR": "year", "QUARTER": "quarter", "MONTH": "month", "WEEK": "week", "DAY": "day",
            "DAYOFWEEK": "weekday", "DOW": "weekday", "DAYOFYEAR": "ordinal_day", "DOY": "ordinal_day",
            "HOUR": "hour", "MINUTE": "minute", "SECOND": "second"}  # fmt: skip


def _strftime_format(c: Compiler, node: exp.Expression) -> str:
    # sqlglot translates Java/Spark patterns to strftime and marks fixed-width fields "strict"
    return c.literal_str(node.args.get("format")).replace("strict", "")


def _time_to_str(c: Compiler, node: exp.TimeToStr) -> pl.Expr:
    return c.temporal(node.this, pl.Datetime).dt.to_string(_strftime_format(c, node))


def _to_date(c: Compiler, node: exp.Expression) -> pl.Expr:
    if node.args.get("format") is not None:
        return c.arg(node).cast(pl.String).str.to_date(_strftime_format(c, node), strict=False)
    return c.temporal(node, pl.Date)


def _to_time(c: Compiler, node: exp.Expression) -> pl.Expr:
    if node.args.get("format") is not None:
        return c.arg(node).cast(pl.String).str.to_datetime(_strftime_format(c, node), strict=False)
    return c.temporal(node, pl.Datetime)


def _part(name: str) -> Callable[[Compiler, exp.Expression], pl.Expr]:
    return lambda c, n: getattr(c.temporal(n.this, pl.Datetime).dt, name)()


def _extract(c: Compiler, node: exp.Extract) -> pl.Expr:
    unit = str(node.this.name).upper()
    if unit not in _EXTRACT:
        raise SqlExpressionError(f"EXTRACT({unit} ...) is not supported (in {c.text!r})")
    return getattr(c.temporal(node.args["expression"], pl.Datetime).dt, _EXTRACT[unit])()


def _truncate(c: Compiler, node: exp.Expression) -> pl.Expr:
    unit = str(node.args["unit"].name).upper()
    if unit not in _TRUNC_UNITS:
        raise SqlExpressionError(f"DATE_TRUNC unit '{unit}' is not supported (in {c.text!r})")
    return c.temporal(node.this, pl.Datetime).dt.truncate(_TRUNC_UNITS[unit])


def _date_add(c: Compiler, node: exp.Expression) -> pl.Expr:
    unit = str(node.args["unit"].name).upper() if node.args.get("unit") else "DAY"
    return c.temporal(node.this, pl.Date).dt.offset_by(f"{c.literal_int(node.args['expression'])}{_OFFSET_UNITS[unit]}")


NODES: dict[type[exp.Expression], Handler] = {
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
}
_NOW: Handler = lambda c, n: pl.lit(c.now)  # noqa: E731
NAMES: dict[str, Handler] = {"NOW": _NOW, "GETDATE": _NOW, "SYSDATE": _NOW, "LOCALTIMESTAMP": _NOW}
SUPPORTED = ("CURRENT_DATE", "CURRENT_TIMESTAMP", "NOW", "DATEDIFF", "DATE_ADD", "DATE_FORMAT", "DATE_TRUNC", "DAY",
             "EXTRACT", "HOUR", "MINUTE", "MONTH", "QUARTER", "SECOND", "TO_DATE", "TO_TIMESTAMP", "YEAR")  # fmt: skip
