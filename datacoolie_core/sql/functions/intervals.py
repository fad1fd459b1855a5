"""Spark SQL TIMESTAMPADD/DATEADD(unit, n, t) and TIMESTAMPDIFF/DATEDIFF(unit, start, end).

Units up to WEEK are fixed lengths of microseconds (the session time zone is UTC, so a day is
always 24 hours); MONTH, QUARTER and YEAR are calendar months as java.time's ``until`` counts
them: a month is complete only when the end's day and time of day reach the start's.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.ansi import guard_all
from datacoolie_core.sql.functions import calendar_fields
from datacoolie_core.sql.functions.registry import Handler, dtype, number
from datacoolie_core.sql.functions.rounding import round_double
from datacoolie_core.sql.functions.timestamps import as_timestamp, local_to_utc, make_date, zone_name
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

_MICROS = {"MICROSECOND": 1, "MILLISECOND": 1_000, "SECOND": 1_000_000, "MINUTE": 60_000_000,
           "HOUR": 3_600_000_000, "DAY": 86_400_000_000, "DAYOFYEAR": 86_400_000_000,
           "WEEK": 7 * 86_400_000_000}  # fmt: skip
_MONTHS = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}
_MICROS_PER_SECOND = 1_000_000


def _unit(c: Compiler, node: exp.Expression) -> str:
    unit = str(node.args["unit"].name).upper() if node.args.get("unit") else "DAY"
    if unit not in _MICROS and unit not in _MONTHS:
        raise SqlExpressionError(f"time unit {unit} is not supported (in {c.text!r})")
    return unit


def _add(c: Compiler, node: exp.TimestampAdd) -> pl.Expr:
    unit = _unit(c, node)
    found = dtype(c, node.this)
    # a TIMESTAMP_NTZ stays one
    stamp = (
        c.compile(node.this)
        if isinstance(found, pl.Datetime) and found.time_zone is None
        else as_timestamp(c, node.this)
    )
    amount = number(c, node.args["expression"], "BIGINT")
    if unit in _MONTHS:
        months = (amount * _MONTHS[unit]).cast(pl.String)
        return stamp.dt.offset_by(pl.concat_str([months, pl.lit("mo")]))
    return stamp + pl.duration(microseconds=amount * _MICROS[unit])


def _unwrapped(node: exp.Expression) -> exp.Expression:
    # sqlglot wraps DATEDIFF's arguments in a date conversion; with a unit, Spark keeps the time of day
    if isinstance(node, exp.TsOrDsToDate) and node.args.get("format") is None:
        return node.this
    return node


def timestamp_diff(c: Compiler, node: exp.Expression) -> pl.Expr:
    """Whole ``unit``s from ``expression`` (start) to ``this`` (end), truncated toward zero, as BIGINT."""
    unit = _unit(c, node)
    end = as_timestamp(c, _unwrapped(node.this))
    start = as_timestamp(c, _unwrapped(node.args["expression"]))
    if unit in _MICROS:
        micros = end.dt.epoch("us") - start.dt.epoch("us")
        return micros.cast(pl.Int64).truncdiv(_MICROS[unit])
    # java.time's LocalDateTime.until: move the end date one day towards the start when its time
    # of day has not reached the start's, then count months of 32 "day slots" (LocalDate.monthsUntil)
    start_day, end_day = start.dt.date(), end.dt.date()
    start_time, end_time = (t - t.dt.truncate("1d") for t in (start, end))
    end_day = (
        pl.when((end_day > start_day) & (end_time < start_time)).then(end_day - pl.duration(days=1))
        .when((end_day < start_day) & (end_time > start_time)).then(end_day + pl.duration(days=1))
        .otherwise(end_day)
    )  # fmt: skip
    slots = [_month_number(d) * 32 + d.dt.day().cast(pl.Int64) for d in (start_day, end_day)]
    return (slots[1] - slots[0]).truncdiv(32).truncdiv(_MONTHS[unit])


def make_timestamp(c: Compiler, node: exp.TimestampFromParts, name: str = "MAKE_TIMESTAMP") -> pl.Expr:
    """MAKE_TIMESTAMP(y, mo, d, h, mi, sec[, zone]): NULL for an invalid field (ANSI off), java.time's
    error with ANSI on (:mod:`~datacoolie_core.sql.functions.calendar_fields`); ``name`` as spelled."""
    keys = ("year", "month", "day", "hour", "min", "sec")
    if any(node.args.get(k) is None for k in keys):
        raise SqlExpressionError(f"MAKE_TIMESTAMP takes 6 or 7 arguments (in {c.text!r})")
    year, month, day, hour, minute = (number(c, node.args[k], "INT") for k in keys[:5])
    micros = _micros(c, node.args["sec"])
    # seconds may be 60 (exactly): the next minute, as Spark allows
    valid = (hour.is_between(0, 23)) & (minute.is_between(0, 59)) & (micros.is_between(0, 60_000_000))
    day_start = make_date(year, month, day).cast(pl.Datetime("us"))
    wall = day_start + pl.duration(hours=hour, minutes=minute, microseconds=micros)
    zone = node.args.get("nano")  # sqlglot keeps the 7th argument (the time zone) under this key
    stamp = wall.dt.replace_time_zone("UTC") if zone is None else local_to_utc(wall, zone_name(c, zone))
    made = pl.when(valid).then(stamp).otherwise(pl.lit(None, dtype=pl.Datetime("us", "UTC")))
    if not c.ansi:
        return made
    # Spark reads the seconds as DECIMAL(16,6) (an ANSI cast: too wide raises) and their micros as an INT
    seconds = c.cast(node.args["sec"], pl.Decimal(16, 6))
    whole_micros = calendar_fields.as_int((seconds * pl.lit(Decimal(_MICROS_PER_SECOND))).cast(pl.Int64))
    fields = (year, month, day, hour, minute)
    checks = calendar_fields.timestamp_checks(fields, whole_micros)
    checks = calendar_fields.only_where_given(checks, [*fields, seconds])
    return guard_all(made, pl.Datetime("us", "UTC"), checks, c.text, where=name)


def _micros(c: Compiler, node: exp.Expression) -> pl.Expr:
    # Spark reads the seconds as DECIMAL(8,6): round half up to whole microseconds
    found = dtype(c, node)
    if isinstance(found, pl.Decimal):
        scaled = c.compile(node) * pl.lit(Decimal(1_000_000))
        return scaled.round(0, mode="half_away_from_zero").cast(pl.Int64, strict=False)
    if found is not None and found.is_integer():
        return c.compile(node).cast(pl.Int64) * 1_000_000
    return round_double(number(c, node) * 1_000_000.0, 0, even=False).cast(pl.Int64, strict=False)


def _month_number(stamp: pl.Expr) -> pl.Expr:
    return stamp.dt.year().cast(pl.Int64) * 12 + stamp.dt.month().cast(pl.Int64)


NODES: dict[type[exp.Expression], Handler] = {
    exp.TimestampAdd: _add,
    exp.TimestampDiff: timestamp_diff,
    exp.TimestampFromParts: make_timestamp,
}
SUPPORTED = ("MAKE_TIMESTAMP", "TIMESTAMPADD", "TIMESTAMPDIFF")
