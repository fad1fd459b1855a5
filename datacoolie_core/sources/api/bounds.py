"""Watermark push-down of API sources (DataCoolie 0.2.0 ``range_param_mapping``, S-28, O-16).

Each entry maps a selection field (usually a watermark column) to request parameters::

    "range_param_mapping": {"updated_at": {"lower": "since", "upper": {"name": "until", "operator": "<"},
                                           "format": "iso", "watermark_value": "observed_max"}}

Values sent:

* incremental run: ``lower`` gets the stored watermark of the field after look-back (on a first run
  ``watermark_range_start``, else nothing: the endpoint returns everything); ``upper`` gets "now"
  (the run's reference time, in ``watermark_to_param_timezone``) for temporal formats.
* replay chunk (a read range on the field): ``lower`` = chunk start, ``upper`` = chunk end. A replay
  on a column no entry maps is an error: the endpoint cannot be asked for the chunk.

The stored value is used in its own type (a ``Datetime`` column's watermark is a datetime) and then
written as ``format`` says: ``iso`` (ISO 8601), ``date`` (YYYY-MM-DD), ``timestamp`` /
``timestamp_ms`` (Unix seconds / milliseconds, naive values taken as UTC), ``datetime`` /
``datetime_ms`` (``YYYY-MM-DD HH:MM:SS[.fff]``), ``integer`` / ``int`` (the integer as text),
``native_integer`` (a JSON integer) and ``number`` (a JSON number). ``location`` puts the value in the
query string (``params``) or the JSON body.

The binding's ``operator`` documents what the endpoint does; the reader applies the engine's exact
window to the rows returned (``col > watermark``), so an endpoint that returns a superset
(``>=``) loses nothing and duplicates nothing. ``watermark_value: request_end`` makes the new
watermark the upper bound sent instead of the data's maximum.
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from datacoolie_core.errors import SourceError
from datacoolie_core.models.dataflow import Source
from datacoolie_core.models.source_api import RangeParam
from datacoolie_core.sources.base import ReadRequest
from datacoolie_core.sources.collect_and_watermark import lower_bounds
from datacoolie_core.sources.window import lookup

TEMPORAL_FORMATS = ("iso", "date", "timestamp", "timestamp_ms", "datetime", "datetime_ms")


@dataclass(frozen=True)
class FieldBounds:
    """The values one mapped field sends (``None``: not sent) and where the response holds it."""

    field: str
    spec: RangeParam
    lower: Any
    upper: Any

    @property
    def column(self) -> str:
        """The response column holding the field (``response_column``, else the field's own name)."""
        return self.spec.response_column or self.field


def field_bounds(source: Source, request: ReadRequest, label: str) -> list[FieldBounds]:
    """The bounds of every mapped field for this read (see the module rules)."""
    mapping = source.configure.range_param_mapping or {}
    chunk = request.read_range
    if chunk is not None and not any(f.lower() == chunk.column.lower() for f in mapping):
        raise SourceError(
            f"{label}: replay on column '{chunk.column}' needs a range_param_mapping entry for it, so the endpoint "
            f"can be asked for one chunk (mapped: {', '.join(mapping) or 'none'})"
        )
    stored = lower_bounds(source, request)
    found = []
    for field, spec in mapping.items():
        if chunk is not None:
            if field.lower() == chunk.column.lower():
                found.append(FieldBounds(field, spec, chunk.start, chunk.end))
            continue
        lower = lookup(stored, field, request.column_name_mode)
        if lower is None and spec.response_column:  # the watermark column is the response's name for the field
            lower = lookup(stored, spec.response_column, request.column_name_mode)
        if lower is None and source.configure.watermark_range_start:
            lower = _parse_iso(source.configure.watermark_range_start, "watermark_range_start", label)
        upper = _now(source, request, label) if spec.upper is not None and spec.format in TEMPORAL_FORMATS else None
        found.append(FieldBounds(field, spec, lower, upper))
    return found


def apply_bounds(bounds: list[FieldBounds], params: dict[str, Any], body: dict[str, Any], label: str) -> dict[str, Any]:
    """Put every bound into ``params`` / ``body`` (in place); the query-string bounds are returned."""
    in_query: dict[str, Any] = {}
    for item in bounds:
        for binding, value in ((item.spec.lower, item.lower), (item.spec.upper, item.upper)):
            if binding is None or value is None:
                continue
            text = format_value(value, item.spec.format, field=item.field, label=label)
            (params if binding.location == "params" else body)[binding.name] = text
            if binding.location == "params":
                in_query[binding.name] = text
    return in_query


def format_value(value: Any, fmt: str, *, field: str, label: str) -> Any:
    """``value`` written as ``fmt`` (see the module rules)."""
    try:
        if fmt in TEMPORAL_FORMATS:
            return _temporal(_as_temporal(value), fmt)
        if fmt in ("integer", "int"):
            return str(_as_int(value))
        if fmt == "native_integer":
            return _as_int(value)
        return _as_number(value)
    except (TypeError, ValueError, ArithmeticError) as e:
        raise SourceError(
            f"{label}: range_param_mapping.{field}: cannot send {value!r} as format '{fmt}': {e}; fix the format "
            "or the stored watermark"
        ) from e


def _temporal(value: date, fmt: str) -> Any:
    if fmt == "date":
        return (value.astimezone(UTC) if isinstance(value, datetime) and value.tzinfo else value).strftime("%Y-%m-%d")
    moment = value if isinstance(value, datetime) else datetime.combine(value, datetime.min.time())
    if fmt == "iso":
        return moment.isoformat() if isinstance(value, datetime) else value.isoformat()
    if fmt in ("timestamp", "timestamp_ms"):
        seconds = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
        return int(seconds) if fmt == "timestamp" else round(seconds * 1000)
    text = moment.strftime("%Y-%m-%d %H:%M:%S")
    return text if fmt == "datetime" else f"{text}.{moment.microsecond // 1000:03d}"


def _as_temporal(value: Any) -> date:
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        return datetime.fromisoformat(text) if ("T" in text or " " in text or ":" in text) else date.fromisoformat(text)
    raise TypeError(f"a {type(value).__name__} is not a date or timestamp")


def _as_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        raise TypeError(f"a {type(value).__name__} is not an integer")
    number = Decimal(str(value).strip())
    if number != number.to_integral_value():
        raise ValueError("not a whole number")
    return int(number)


def _as_number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        raise TypeError(f"a {type(value).__name__} is not a number")
    number = Decimal(str(value).strip())
    return int(number) if number == number.to_integral_value() else float(number)


def _now(source: Source, request: ReadRequest, label: str) -> datetime:
    zone = source.configure.watermark_to_param_timezone or source.connection.configure.watermark_to_param_timezone
    now = request.reference_time if request.reference_time.tzinfo else request.reference_time.replace(tzinfo=UTC)
    return now.astimezone(parse_zone(zone, label)) if zone else now.astimezone(UTC)


def parse_zone(text: str, label: str) -> tzinfo:
    """An IANA zone name or a ``±HH:MM`` offset."""
    stripped = text.strip()
    if stripped[:1] in "+-" and ":" in stripped:
        hours, _, minutes = stripped[1:].partition(":")
        if hours.isdigit() and minutes.isdigit():
            sign = -1 if stripped[0] == "-" else 1
            return timezone(sign * timedelta(hours=int(hours), minutes=int(minutes)))
    try:
        return ZoneInfo(stripped)
    except (ZoneInfoNotFoundError, ValueError):
        raise SourceError(f"{label}: watermark_to_param_timezone '{text}' is neither an IANA zone nor ±HH:MM") from None


def _parse_iso(text: str, key: str, label: str) -> Any:
    try:
        return _as_temporal(text)
    except ValueError:
        raise SourceError(f"{label}: configure.{key} '{text}' is not an ISO date or timestamp") from None


def request_end_watermark(
    bounds: list[FieldBounds], watermark_columns: Mapping[str, Any] | list[str]
) -> dict[str, Any]:
    """New watermark values of ``request_end`` fields that are watermark columns: the upper bound sent."""
    wanted = {c.lower() for c in watermark_columns}
    return {
        b.field: b.upper
        for b in bounds
        if b.spec.watermark_value == "request_end" and b.upper is not None and b.field.lower() in wanted
    }


def split_ranges(bounds: list[FieldBounds], source: Source, label: str) -> list[list[FieldBounds]]:
    """The read split into sub-ranges of ``watermark_range_interval_unit`` times ``amount`` (one request group each).

    The first mapped field with both a lower and an upper binding and both values is split; without one
    (a first run with no ``watermark_range_start``), the read is not split.
    """
    configure = source.configure
    unit, amount = configure.watermark_range_interval_unit, configure.watermark_range_interval_amount
    target = next(
        (b for b in bounds if b.spec.lower and b.spec.upper and b.lower is not None and b.upper is not None), None
    )
    if unit is None or target is None:
        return [bounds]
    if amount < 1:
        raise SourceError(f"{label}: watermark_range_interval_amount must be at least 1, got {amount}")
    start, end = _comparable(_as_temporal(target.lower), _as_temporal(target.upper))
    groups = []
    while start < end:
        following = min(_step(start, unit, amount), end)
        piece = FieldBounds(target.field, target.spec, start, following)
        groups.append([piece if b is target else b for b in bounds])
        start = following
    return groups or [bounds]


def _comparable(lower: date, upper: date) -> tuple[datetime, datetime]:
    """Both as datetimes, both aware (a naive one taken as UTC) when either is."""
    low, high = (v if isinstance(v, datetime) else datetime.combine(v, datetime.min.time()) for v in (lower, upper))
    if (low.tzinfo is None) != (high.tzinfo is None):
        low, high = (v if v.tzinfo else v.replace(tzinfo=UTC) for v in (low, high))
    return low, high


def _step(moment: datetime, unit: str, amount: int) -> datetime:
    if unit == "hour":
        return moment + timedelta(hours=amount)
    if unit == "day":
        return moment + timedelta(days=amount)
    months = amount * (12 if unit == "year" else 1)
    index = moment.month - 1 + months
    year, month = moment.year + index // 12, index % 12 + 1
    last_day = calendar.monthrange(year, month)[1]
    return moment.replace(year=year, month=month, day=min(moment.day, last_day))
