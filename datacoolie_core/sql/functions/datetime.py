"""Spark SQL date and time functions: fields, date arithmetic and truncation (session time zone UTC).

Arguments are cast the way Spark casts them implicitly (a string or a timestamp given where a DATE
is expected, a DATE where a TIMESTAMP is), through the compiler's ``CAST``.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.ansi import guard_all
from datacoolie_core.sql.functions import calendar_fields, intervals, timestamps, timezones
from datacoolie_core.sql.functions.registry import Handler, arity, cast, dtype, literal, number
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

_DATE_FIELDS: dict[str, Callable[[pl.Expr], pl.Expr]] = {
    "YEAR": lambda d: d.dt.year(),
    "QUARTER": lambda d: d.dt.quarter(),
    "MONTH": lambda d: d.dt.month(),
    "WEEK": lambda d: d.dt.week(),
    "DAY": lambda d: d.dt.day(),
    "DAYOFWEEK": lambda d: d.dt.weekday() % 7 + 1,  # Spark: 1 = Sunday
    "DAYOFWEEK_ISO": lambda d: d.dt.weekday(),
    "WEEKDAY": lambda d: d.dt.weekday() - 1,  # Spark: 0 = Monday
    "DOY": lambda d: d.dt.ordinal_day(),
}
_TIME_FIELDS: dict[str, Callable[[pl.Expr], pl.Expr]] = {
    "HOUR": lambda t: t.dt.hour(),
    "MINUTE": lambda t: t.dt.minute(),
    "SECOND": lambda t: t.dt.second(),
}
_FIELD_ALIASES = {
    "Y": "YEAR", "YEARS": "YEAR", "YR": "YEAR", "YRS": "YEAR", "QTR": "QUARTER", "MON": "MONTH", "MONS": "MONTH",
    "MONTHS": "MONTH", "W": "WEEK", "WEEKS": "WEEK", "D": "DAY", "DAYS": "DAY", "DAYOFMONTH": "DAY",
    "DOW": "DAYOFWEEK", "DOW_ISO": "DAYOFWEEK_ISO", "DAYOFYEAR": "DOY", "H": "HOUR", "HOURS": "HOUR", "HR": "HOUR",
    "HRS": "HOUR", "M": "MINUTE", "MIN": "MINUTE", "MINS": "MINUTE", "MINUTES": "MINUTE", "S": "SECOND",
    "SEC": "SECOND", "SECONDS": "SECOND", "SECS": "SECOND",
}  # fmt: skip
_TRUNC_DATE = {"YEAR": "1y", "YYYY": "1y", "YY": "1y", "QUARTER": "1q", "MONTH": "1mo", "MM": "1mo", "MON": "1mo",
               "WEEK": "1w"}  # fmt: skip
_TRUNC_TIME = {**_TRUNC_DATE, "DAY": "1d", "DD": "1d", "HOUR": "1h", "MINUTE": "1m", "SECOND": "1s",
               "MILLISECOND": "1ms", "MICROSECOND": "1us"}  # fmt: skip
_WEEKDAYS = ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY")
# NEXT_DAY accepts 'MO', 'MON' or 'MONDAY' (any case)
_DAY_NAMES = {alias: k for k, day in enumerate(_WEEKDAYS, start=1) for alias in (day[:2], day[:3], day)}


def as_date(c: Compiler, node: exp.Expression) -> pl.Expr:
    """``node`` as a DATE, cast as Spark casts it implicitly."""
    found = dtype(c, node)
    if found == pl.Date:
        return c.compile(node)
    if found is not None and (found == pl.Boolean or found.is_numeric()):
        raise SqlExpressionError(f"'{node.sql()}' is {found}, not a date (in {c.text!r})")
    return cast(c, node, "DATE")


def strict(c: Compiler, node: exp.Expression, wanted: pl.DataType, name: str) -> pl.Expr:
    """An argument Spark accepts only as ``name`` (no implicit cast)."""
    found = dtype(c, node)
    if found is not None and found not in (wanted, pl.Null()):
        raise SqlExpressionError(f"'{node.sql()}' is {found}, but Spark requires a {name} here (in {c.text!r})")
    return c.compile(node).cast(wanted)


def _field(name: str) -> Handler:
    def handler(c: Compiler, node: exp.Expression) -> pl.Expr:
        value = node.this if not isinstance(node, exp.Anonymous) else arity(c, node, 1)[0]
        if name in _TIME_FIELDS:
            return _TIME_FIELDS[name](timestamps.as_timestamp(c, value)).cast(pl.Int32)
        return _DATE_FIELDS[name](as_date(c, value)).cast(pl.Int32)

    return handler


def _extract(c: Compiler, field: str, source: exp.Expression) -> pl.Expr:
    name = _FIELD_ALIASES.get(field.upper(), field.upper())
    if name == "SECOND":
        # EXTRACT(SECOND ...) keeps the fraction: DECIMAL(8,6)
        stamp = timestamps.as_timestamp(c, source)
        micros = stamp.dt.second().cast(pl.Int64) * 1_000_000 + stamp.dt.microsecond().cast(pl.Int64)
        return (micros.cast(pl.Decimal(38, 0)) * pl.lit(Decimal("0.000001"))).cast(pl.Decimal(8, 6))
    if name in _TIME_FIELDS:
        return _TIME_FIELDS[name](timestamps.as_timestamp(c, source)).cast(pl.Int32)
    if name in _DATE_FIELDS and name != "WEEKDAY":
        return _DATE_FIELDS[name](as_date(c, source)).cast(pl.Int32)
    raise SqlExpressionError(f"EXTRACT field '{field}' is not supported (in {c.text!r})")


def _date_part(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    field, source = arity(c, node, 2)
    return _extract(c, str(literal(c, field, "DATE_PART field")), source)


def _date_add(c: Compiler, node: exp.Expression) -> pl.Expr:
    unit = str(node.args["unit"].name).upper() if node.args.get("unit") else "DAY"
    if unit != "DAY":
        raise SqlExpressionError(f"DATE_ADD with unit {unit} is not supported (in {c.text!r})")
    days = number(c, node.args["expression"], "INT")
    return as_date(c, node.this) + pl.duration(days=days)


def _date_diff(c: Compiler, node: exp.DateDiff) -> pl.Expr:
    if node.args.get("unit") is not None:
        return intervals.timestamp_diff(c, node)  # DATEDIFF(unit, start, end) is TIMESTAMPDIFF
    return (as_date(c, node.this) - as_date(c, node.args["expression"])).dt.total_days().cast(pl.Int32)


def _add_months(c: Compiler, node: exp.AddMonths) -> pl.Expr:
    months = number(c, node.args["expression"], "INT")
    offset = pl.concat_str([months.cast(pl.String), pl.lit("mo")])
    return as_date(c, node.this).dt.offset_by(offset)


def _months_between(c: Compiler, node: exp.MonthsBetween) -> pl.Expr:
    first, second = (timestamps.as_timestamp(c, node.args[k]) for k in ("this", "expression"))
    round_off = literal(c, node.args["roundoff"], "MONTHS_BETWEEN roundOff") if node.args.get("roundoff") else True
    months = (first.dt.year() * 12 + first.dt.month()).cast(pl.Int64) - (
        second.dt.year() * 12 + second.dt.month()
    ).cast(pl.Int64)
    day1, day2 = first.dt.day().cast(pl.Int64), second.dt.day().cast(pl.Int64)
    both_last = (first.dt.date() == first.dt.month_end().dt.date()) & (
        second.dt.date() == second.dt.month_end().dt.date()
    )
    seconds = [(t - t.dt.truncate("1d")).dt.total_seconds().cast(pl.Int64) for t in (first, second)]
    # Spark counts a month as 31 days past the whole months, seconds within the day included
    fraction = ((day1 - day2) * 86_400 + seconds[0] - seconds[1]).cast(pl.Float64) / 2_678_400.0
    diff = months.cast(pl.Float64) + fraction
    if round_off:
        diff = (diff * 1e8 + 0.5).floor() / 1e8
    return pl.when((day1 == day2) | both_last).then(months.cast(pl.Float64)).otherwise(diff)


def _next_day(c: Compiler, node: exp.NextDay) -> pl.Expr:
    name = literal(c, node.args["expression"], "NEXT_DAY day of week")
    day = as_date(c, node.this)
    target = _DAY_NAMES.get(str(name).strip().upper()) if name is not None else None
    if target is None and c.ansi and name is not None and not isinstance(node.this, exp.Null):
        raise SqlExpressionError(
            f"NEXT_DAY: {name!r} is not a day of the week; Spark stops the query on it with "
            f"spark.sql.ansi.enabled on (in {c.text!r})"
        )
    if target is None:
        return pl.lit(None, dtype=pl.Date)  # Spark (ANSI off): NULL for an unknown day name
    ahead = (pl.lit(target) - day.dt.weekday().cast(pl.Int32) - 1) % 7 + 1
    return day + pl.duration(days=ahead)


def _trunc_unit(c: Compiler, node: exp.Expression, units: dict[str, str]) -> str | None:
    unit = node.args.get("unit")
    name = literal(c, unit, "the truncation unit") if isinstance(unit, exp.Literal) else getattr(unit, "name", None)
    return units.get(str(name).upper()) if name is not None else None


def _trunc(c: Compiler, node: exp.DateTrunc) -> pl.Expr:
    unit = _trunc_unit(c, node, _TRUNC_DATE)
    if unit is None:
        return pl.lit(None, dtype=pl.Date)
    return as_date(c, node.this).dt.truncate(unit)


def _date_trunc(c: Compiler, node: exp.TimestampTrunc) -> pl.Expr:
    unit = _trunc_unit(c, node, _TRUNC_TIME)
    if unit is None:
        return pl.lit(None, dtype=pl.Datetime("us", "UTC"))
    return timestamps.as_timestamp(c, node.this).dt.truncate(unit)


def _make_date(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    year, month, day = (number(c, a, "INT") for a in arity(c, node, 3))
    made = timestamps.make_date(year, month, day)
    if not c.ansi:
        return made
    checks = calendar_fields.only_where_given(calendar_fields.date_checks(year, month, day), [year, month, day])
    return guard_all(made, pl.Date(), checks, c.text, where="MAKE_DATE")


NODES: dict[type[exp.Expression], Handler] = {
    exp.Year: _field("YEAR"),
    exp.Quarter: _field("QUARTER"),
    exp.Month: _field("MONTH"),
    exp.Day: _field("DAY"),
    exp.DayOfMonth: _field("DAY"),
    exp.DayOfWeek: _field("DAYOFWEEK"),
    exp.DayOfYear: _field("DOY"),
    exp.WeekOfYear: _field("WEEK"),
    exp.Hour: _field("HOUR"),
    exp.Minute: _field("MINUTE"),
    exp.Second: _field("SECOND"),
    exp.Extract: lambda c, n: _extract(c, str(n.this.name), n.args["expression"]),
    exp.TsOrDsAdd: _date_add,
    exp.DateAdd: _date_add,
    exp.DateDiff: _date_diff,
    exp.AddMonths: _add_months,
    exp.MonthsBetween: _months_between,
    exp.LastDay: lambda c, n: as_date(c, n.this).dt.month_end(),
    exp.NextDay: _next_day,
    exp.DateTrunc: _trunc,
    exp.TimestampTrunc: _date_trunc,
    exp.CurrentTimestamp: lambda c, n: pl.lit(c.now, dtype=pl.Datetime("us", "UTC")),
    exp.CurrentDate: lambda c, n: pl.lit(c.now.date(), dtype=pl.Date),
    exp.CurrentTimezone: lambda c, n: pl.lit("UTC", dtype=pl.String),  # the session time zone
    exp.UnixDate: lambda c, n: strict(c, n.this, pl.Date(), "DATE").cast(pl.Int32),
    exp.DateFromUnixDate: lambda c, n: number(c, n.this, "INT").cast(pl.Date),
    **timestamps.NODES,
    **intervals.NODES,
    **timezones.NODES,
}
NAMES: dict[str, Handler] = {
    "NOW": lambda c, n: pl.lit(c.now, dtype=pl.Datetime("us", "UTC")),
    "WEEKDAY": _field("WEEKDAY"),
    "DATE_PART": _date_part,
    "DATEPART": _date_part,
    "MAKE_DATE": _make_date,
    **timestamps.NAMES,
    **timezones.NAMES,
}
SUPPORTED = ("ADD_MONTHS", "CURDATE", "CURRENT_DATE", "CURRENT_TIMESTAMP", "CURRENT_TIMEZONE", "DATE_ADD", "DATE_DIFF", "DATE_FROM_UNIX_DATE",
             "DATE_PART", "DATE_SUB", "DATE_TRUNC", "DATEADD", "DATEDIFF", "DATEPART", "DAY", "DAYOFMONTH",
             "DAYOFWEEK", "DAYOFYEAR", "EXTRACT", "HOUR", "LAST_DAY", "MAKE_DATE", "MINUTE", "MONTH",
             "MONTHS_BETWEEN", "NEXT_DAY", "NOW", "QUARTER", "SECOND", "TRUNC", "UNIX_DATE", "WEEKDAY", "WEEKOFYEAR",
             "YEAR", *timestamps.SUPPORTED, *intervals.SUPPORTED,
             *timezones.SUPPORTED)  # fmt: skip
