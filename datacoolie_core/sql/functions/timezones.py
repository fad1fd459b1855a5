"""Spark SQL functions between TIMESTAMP (an instant, shown in UTC) and TIMESTAMP_NTZ (a wall time).

``TO_TIMESTAMP_NTZ``, ``MAKE_TIMESTAMP_NTZ`` and ``LOCALTIMESTAMP`` give wall times,
``CONVERT_TIMEZONE`` moves a wall time from one zone to another; the ``_LTZ`` forms and
``TRY_TO_TIMESTAMP`` are TIMESTAMP as ``TO_TIMESTAMP``/``MAKE_TIMESTAMP`` (ANSI off never fails).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions import intervals, javatime
from datacoolie_core.sql.functions.registry import Handler, arity, cast, dtype, literal, text
from datacoolie_core.sql.functions.timestamps import (
    ansi_parsed,
    local_to_utc,
    parse_timestamp,
    parsing_pattern,
    zone_name,
)
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

_WALL = pl.Datetime("us")


def _parse(*, wall: bool) -> Handler:
    def handler(c: Compiler, node: exp.Anonymous) -> pl.Expr:
        value, *pattern = arity(c, node, 1, 2)
        tolerant = str(node.name).upper().startswith("TRY_")  # TRY_TO_TIMESTAMP: NULL also in ANSI mode
        if not pattern:
            target = exp.DataType.build("TIMESTAMP_NTZ" if wall else "TIMESTAMP")
            spelled = (
                exp.TryCast(this=value.copy(), to=target, safe=True)
                if tolerant
                else exp.Cast(this=value.copy(), to=target)
            )
            return c.compile(spelled)
        java = literal(c, pattern[0], "the datetime pattern")
        if java is None:
            return pl.lit(None, dtype=_WALL if wall else pl.Datetime("us", "UTC"))
        try:
            translated = javatime.translate(str(java))
        except SqlExpressionError as e:
            raise SqlExpressionError(f"{e} (in {c.text!r})") from None
        source = text(c, value)
        parsed = parse_timestamp(source, parsing_pattern(c, translated))
        if not tolerant:
            parsed = ansi_parsed(c, source, parsed, pl.Datetime("us", "UTC"))
        return parsed.dt.replace_time_zone(None) if wall else parsed

    return handler


def _make(*, wall: bool) -> Handler:
    def handler(c: Compiler, node: exp.Anonymous) -> pl.Expr:
        given = arity(c, node, 6, 6 if wall else 7)
        keys = ("year", "month", "day", "hour", "min", "sec", "nano")
        parts = exp.TimestampFromParts(**{k: v.copy() for k, v in zip(keys, given, strict=False)})
        stamp = intervals.make_timestamp(c, parts, str(node.name).upper())
        return stamp.dt.replace_time_zone(None) if wall else stamp

    return handler


def _wall_time(c: Compiler, node: exp.Expression) -> pl.Expr:
    """A TIMESTAMP_NTZ argument: a TIMESTAMP shows its UTC wall time, strings are cast."""
    found = dtype(c, node)
    if isinstance(found, pl.Datetime):
        return c.compile(node).dt.cast_time_unit("us").dt.replace_time_zone(None)
    return cast(c, node, "TIMESTAMP_NTZ")


def _convert_timezone(c: Compiler, node: exp.ConvertTimezone) -> pl.Expr:
    source = zone_name(c, node.args["source_tz"]) if node.args.get("source_tz") else "UTC"
    target = zone_name(c, node.args.get("target_tz"))
    instant = local_to_utc(_wall_time(c, node.args["timestamp"]), source)
    return instant.dt.convert_time_zone(target).dt.replace_time_zone(None)


NODES: dict[type[exp.Expression], Handler] = {
    exp.ConvertTimezone: _convert_timezone,
    exp.Localtimestamp: lambda c, n: pl.lit(c.now.replace(tzinfo=None), dtype=_WALL),
}
NAMES: dict[str, Handler] = {
    "TO_TIMESTAMP_NTZ": _parse(wall=True),
    "TO_TIMESTAMP_LTZ": _parse(wall=False),
    "TRY_TO_TIMESTAMP": _parse(wall=False),
    "MAKE_TIMESTAMP_NTZ": _make(wall=True),
    "MAKE_TIMESTAMP_LTZ": _make(wall=False),
}
SUPPORTED = ("CONVERT_TIMEZONE", "LOCALTIMESTAMP", "MAKE_TIMESTAMP_LTZ", "MAKE_TIMESTAMP_NTZ", "TO_TIMESTAMP_LTZ",
             "TO_TIMESTAMP_NTZ", "TRY_TO_TIMESTAMP")  # fmt: skip
