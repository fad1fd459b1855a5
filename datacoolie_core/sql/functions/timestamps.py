"""Spark SQL timestamp functions: formatting and parsing with Java patterns, epochs, time zones."""

from __future__ import annotations

import zoneinfo
from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.ansi import guard
from datacoolie_core.sql.functions import javatime
from datacoolie_core.sql.functions.registry import Handler, arity, cast, dtype, literal, number
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

UTC_TIMESTAMP = pl.Datetime("us", "UTC")
_DEFAULT_PATTERN = "yyyy-MM-dd HH:mm:ss"


def as_timestamp(c: Compiler, node: exp.Expression) -> pl.Expr:
    """``node`` as a TIMESTAMP (UTC), cast as Spark casts it implicitly."""
    if isinstance(node, exp.TimeStrToTime) and node.args.get("format") is None:
        node = node.this  # sqlglot wraps DATE_FORMAT's argument; Spark casts it the same way
    found = dtype(c, node)
    if found == UTC_TIMESTAMP:
        return c.compile(node)
    if isinstance(found, pl.Datetime) and found.time_zone is None:
        return c.compile(node).dt.cast_time_unit("us").dt.replace_time_zone("UTC")
    if found is not None and (found == pl.Boolean or found.is_numeric()):
        raise SqlExpressionError(f"'{node.sql()}' is {found}, not a timestamp (in {c.text!r})")
    return cast(c, node, "TIMESTAMP")


def _pattern(c: Compiler, node: exp.Expression, default: str | None = None) -> javatime.Pattern:
    try:
        java = javatime.java_pattern(node) or default
        if java is None:
            raise SqlExpressionError("a datetime pattern is required")
        return javatime.translate(java)
    except SqlExpressionError as e:
        raise SqlExpressionError(f"{e} (in {c.text!r})") from None


def _parse_pattern(c: Compiler, node: exp.Expression, default: str | None = None) -> javatime.Pattern:
    return parsing_pattern(c, _pattern(c, node, default))


def parsing_pattern(c: Compiler, pattern: javatime.Pattern) -> javatime.Pattern:
    """``pattern``, checked to be one Spark (and we) can parse with."""
    if pattern.has_zone or any(letter in pattern.java.replace("''", "") for letter in "ED"):
        # Spark 3 refuses to parse with day-of-week or day-of-year fields (DATETIME_PATTERN_RECOGNITION);
        # zone fields would need offsets parsed, which are not supported
        raise SqlExpressionError(f"datetime pattern {pattern.java!r} cannot be used for parsing (in {c.text!r})")
    return pattern


def parse_timestamp(text: pl.Expr, pattern: javatime.Pattern) -> pl.Expr:
    """Strings parsed with a Java pattern, NULL where Spark's strict parser fails."""
    chrono = pattern.chrono.replace("%-", "%")
    if pattern.has_time:
        parsed = text.str.to_datetime(chrono, time_unit="us", strict=False).dt.replace_time_zone("UTC")
    else:
        parsed = text.str.to_date(chrono, strict=False).cast(UTC_TIMESTAMP)
    return pl.when(text.str.contains(pattern.regex)).then(parsed).otherwise(pl.lit(None, dtype=UTC_TIMESTAMP))


def ansi_parsed(c: Compiler, source: pl.Expr, parsed: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """``parsed`` (of ``dtype``), raising ``CANNOT_PARSE_TIMESTAMP`` in ANSI mode where text did not parse
    (Spark's TO_TIMESTAMP, TO_DATE and UNIX_TIMESTAMP with a pattern; TRY_TO_TIMESTAMP stays NULL)."""
    if not c.ansi:
        return parsed
    bad = source.is_not_null() & parsed.is_null()
    detail = "Text '{value}' could not be parsed."
    return guard(parsed, dtype, bad, source, "CANNOT_PARSE_TIMESTAMP", detail, c.text)


def _format(c: Compiler, node: exp.TimeToStr) -> pl.Expr:
    return as_timestamp(c, node.this).dt.to_string(_pattern(c, node).chrono)


def _to_date(c: Compiler, node: exp.Expression) -> pl.Expr:
    if node.args.get("format") is None:
        return cast(c, node.this, "DATE")
    return _parse(c, node).dt.date()


def _parse(c: Compiler, node: exp.Expression) -> pl.Expr:
    found = dtype(c, node.this)
    if found is not None and found.is_temporal():
        return as_timestamp(c, node.this)  # Spark ignores the pattern for a date/timestamp argument
    source = cast(c, node.this, "STRING")
    return ansi_parsed(c, source, parse_timestamp(source, _parse_pattern(c, node)), UTC_TIMESTAMP)


def _unix_timestamp(c: Compiler, node: exp.StrToUnix) -> pl.Expr:
    source = node.this
    found = dtype(c, source) if source is not None else None
    if source is None or isinstance(source, exp.CurrentTimestamp):
        stamp = pl.lit(c.now, dtype=UTC_TIMESTAMP)
    elif found is not None and found.is_temporal():
        stamp = as_timestamp(c, source)
    else:
        text_value = cast(c, source, "STRING")
        parsed = parse_timestamp(text_value, _parse_pattern(c, node, _DEFAULT_PATTERN))
        stamp = ansi_parsed(c, text_value, parsed, UTC_TIMESTAMP)
    # Spark divides the microseconds with Java's '/', which truncates toward zero: 23:59:59.5 on the
    # last day before the epoch is second 0 (UNIX_SECONDS and CAST floor it to -1)
    micros = stamp.dt.epoch("us")
    return pl.when(micros < 0).then(-((-micros) // 1_000_000)).otherwise(micros // 1_000_000)


def _from_unixtime(c: Compiler, node: exp.UnixToStr) -> pl.Expr:
    seconds = number(c, node.this, "BIGINT")
    stamp = pl.from_epoch(seconds, time_unit="s").cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    return stamp.dt.to_string(_pattern(c, node, _DEFAULT_PATTERN).chrono)


def _from_epoch(unit: str) -> Handler:
    def handler(c: Compiler, node: exp.Anonymous) -> pl.Expr:
        value = arity(c, node, 1)[0]
        found = dtype(c, value)
        if unit == "s" and found is not None and (found.is_float() or isinstance(found, pl.Decimal)):
            micros = (number(c, value) * 1_000_000).cast(pl.Int64, strict=False)
        else:
            micros = number(c, value, "BIGINT") * {"s": 1_000_000, "ms": 1_000, "us": 1}[unit]
        return pl.from_epoch(micros, time_unit="us").dt.replace_time_zone("UTC")

    return handler


def _to_epoch(per_second: int) -> Handler:
    def handler(c: Compiler, node: exp.Expression) -> pl.Expr:
        # Spark floors (Math.floorDiv) the microseconds, also before 1970; TIMESTAMP only
        found = dtype(c, node.this)
        if found is not None and found not in (UTC_TIMESTAMP, pl.Null()):
            raise SqlExpressionError(f"'{node.this.sql()}' is {found}, but Spark requires a TIMESTAMP (in {c.text!r})")
        return as_timestamp(c, node.this).dt.epoch("us") // (1_000_000 // per_second)

    return handler


def _zone(c: Compiler, node: exp.Expression) -> str:
    return zone_name(c, node.args.get("zone"))


def zone_name(c: Compiler, node: exp.Expression | None) -> str:
    """A literal time zone argument, checked to be a region name Polars knows."""
    zone = literal(c, node, "the time zone")
    try:
        zoneinfo.ZoneInfo(str(zone))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise SqlExpressionError(
            f"time zone {zone!r} is not a region name such as 'Europe/Paris' (in {c.text!r})"
        ) from None
    return str(zone)


def _from_utc(c: Compiler, node: exp.AtTimeZone) -> pl.Expr:
    wall = as_timestamp(c, node.this).dt.convert_time_zone(_zone(c, node)).dt.replace_time_zone(None)
    return wall.dt.replace_time_zone("UTC")


def _to_utc(c: Compiler, node: exp.FromTimeZone) -> pl.Expr:
    return local_to_utc(as_timestamp(c, node.this).dt.replace_time_zone(None), _zone(c, node))


def local_to_utc(wall: pl.Expr, zone: str) -> pl.Expr:
    """A naive wall-clock time in ``zone`` as a UTC instant, the way java.time resolves it."""
    local = wall.dt.replace_time_zone(zone, ambiguous="earliest", non_existent="null")
    # a wall time in a DST gap moves forward by the gap, as java.time does
    shifted = (wall + pl.duration(hours=1)).dt.replace_time_zone(zone, ambiguous="earliest", non_existent="null")
    return pl.coalesce([local, shifted]).dt.convert_time_zone("UTC")


def make_date(year: pl.Expr, month: pl.Expr, day: pl.Expr) -> pl.Expr:
    """A DATE from its fields, NULL where they do not form a valid date (Spark, ANSI off)."""
    parts = [year.cast(pl.String).str.zfill(4), month.cast(pl.String).str.zfill(2), day.cast(pl.String).str.zfill(2)]
    text = pl.concat_str(parts, separator="-")
    valid = (year >= 1) & (year <= 9999) & text.str.contains(r"^\d{4}-\d{2}-\d{2}$")
    return pl.when(valid).then(text.str.to_date("%Y-%m-%d", strict=False)).otherwise(pl.lit(None, dtype=pl.Date))


NODES: dict[type[exp.Expression], Handler] = {
    exp.TimeToStr: _format,
    exp.TimeStrToTime: as_timestamp,
    exp.TsOrDsToDate: _to_date,
    exp.StrToDate: _to_date,
    exp.StrToTime: _parse,
    exp.StrToUnix: _unix_timestamp,
    exp.UnixToStr: _from_unixtime,
    exp.UnixSeconds: _to_epoch(1),
    exp.UnixMillis: _to_epoch(1_000),
    exp.UnixMicros: _to_epoch(1_000_000),
    exp.AtTimeZone: _from_utc,
    exp.FromTimeZone: _to_utc,
}
NAMES: dict[str, Handler] = {
    "TIMESTAMP_SECONDS": _from_epoch("s"),
    "TIMESTAMP_MILLIS": _from_epoch("ms"),
    "TIMESTAMP_MICROS": _from_epoch("us"),
}
SUPPORTED = ("DATE_FORMAT", "FROM_UNIXTIME", "FROM_UTC_TIMESTAMP", "TIMESTAMP_MICROS", "TIMESTAMP_MILLIS",
             "TIMESTAMP_SECONDS", "TO_DATE", "TO_TIMESTAMP", "TO_UNIX_TIMESTAMP", "TO_UTC_TIMESTAMP", "UNIX_MICROS",
             "UNIX_MILLIS", "UNIX_SECONDS", "UNIX_TIMESTAMP")  # fmt: skip
