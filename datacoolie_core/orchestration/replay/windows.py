"""Replay chunk windows: pure arithmetic over ``[start, end)`` (DataCoolie O-14, O-15; replay seed).

A replay range is cut at *aligned* boundaries, so the same calendar month or integer block always
has the same bounds whatever the requested range (which is what lets the Dagster layer use chunk keys
as partition keys). The first chunk is partial when ``start`` is not on a boundary; the last one is
clamped to ``end``.

Alignment per unit (``n`` is the unit's value):

- ``years``: Jan 1 of years with ``(year - 1) % n == 0``.
- ``months``: the 1st of months with ``(month - 1) % n == 0``, restarting each year (``months: 3`` =
  calendar quarters; a ``n`` that does not divide 12 leaves a short last chunk in each year).
- ``weeks``: Mondays 00:00, stepping ``n`` weeks from the first Monday on/after ``start``.
- ``days``: midnights, stepping ``n`` days from the first midnight on/after ``start``.
- ``hours`` / ``minutes``: wall-clock times whose hour (minute) of the day is a multiple of ``n``,
  restarting at midnight.
- ``step``: integers that are multiples of ``n``.

Dates stay dates for ``years``..``days``; with ``hours``/``minutes`` they become naive midnights. An
aware datetime keeps its zone and boundaries are computed on that zone's wall clock (``end`` is first
converted to ``start``'s zone).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from itertools import pairwise

from datacoolie_core.input_bounds import MAX_REPLAY_CHUNKS
from datacoolie_core.models.run_config import CHUNK_UNITS
from datacoolie_core.suggestions import did_you_mean

Bound = date | datetime | int

DATE_UNITS = ("years", "months", "weeks", "days")
"""Units whose boundaries are midnights: date bounds give date chunks."""


@dataclass(frozen=True)
class Chunk:
    """One replay window ``[start, end)``; ``index`` counts from 0 in range order."""

    index: int
    start: Bound
    end: Bound


def chunk_windows(start: Bound, end: Bound, chunk_interval: Mapping[str, int] | None) -> list[Chunk]:
    """Cut ``[start, end)`` into aligned chunks.

    Args:
        start: Inclusive lower bound: an ``int``, a ``date`` or a ``datetime``.
        end: Exclusive upper bound, of the same kind as ``start``.
        chunk_interval: One unit of ``years, months, weeks, days, hours, minutes, step`` with a
            positive integer, or ``None`` for a single chunk ``[start, end)``.

    Returns:
        The chunks in order; they cover ``[start, end)`` exactly, without overlap.

    Raises:
        ValueError: ``start >= end``, mixed bound kinds, a bad interval, ``step`` without integer
            bounds, a calendar unit without date/datetime bounds, or more than
            :data:`~datacoolie_core.input_bounds.MAX_REPLAY_CHUNKS` chunks.
    """
    start, end = _check_bounds(start, end)
    if chunk_interval is None:
        return [Chunk(0, start, end)]
    unit, amount = _check_interval(chunk_interval)
    if unit == "step":
        if not isinstance(start, int):
            raise ValueError(f"chunk_interval step needs integer start and end, got {start!r}; use a calendar unit")
        check_chunk_count(start, end, unit, amount)
        return _integer_chunks(start, end, amount)  # type: ignore[arg-type]
    if isinstance(start, int):
        raise ValueError(f"chunk_interval {unit} needs date or datetime start and end, got {start!r}; use step")
    check_chunk_count(start, end, unit, amount)
    return _calendar_chunks(start, end, unit, amount)  # type: ignore[arg-type]


def check_chunk_count(start: Bound, end: Bound, unit: str, amount: int) -> None:
    """Refuse a range that would cut into more than :data:`MAX_REPLAY_CHUNKS` chunks, before listing any.

    Counted from the bounds alone (an upper bound: the shortest chunk of the unit, plus the short
    chunks where alignment restarts each day or year), so a hostile range costs nothing.
    """
    estimate = chunk_count_bound(start, end, unit, amount)
    if estimate > MAX_REPLAY_CHUNKS:
        raise ValueError(
            f"replay [{start}, {end}) in chunks of {{{unit}: {amount}}} makes up to {estimate:,} chunks, more than "
            f"the {MAX_REPLAY_CHUNKS:,} one replay may run; use a larger chunk_interval or a shorter range"
        )


def chunk_count_bound(start: Bound, end: Bound, unit: str, amount: int) -> int:
    """At least as many as the chunks :func:`chunk_windows` cuts ``[start, end)`` into (pure arithmetic)."""
    if isinstance(start, int) and isinstance(end, int):
        return (end - start) // amount + 2
    assert isinstance(start, date)
    assert isinstance(end, date)
    span = _as_datetime(end) - _as_datetime(start)
    shortest = {"years": timedelta(days=365), "months": timedelta(days=28), "weeks": timedelta(weeks=1),
                "days": timedelta(days=1), "hours": timedelta(hours=1), "minutes": timedelta(minutes=1)}[unit]  # fmt: skip
    restarts = {"months": span.days // 365 + 1, "hours": span.days + 1, "minutes": span.days + 1}.get(unit, 0)
    return span // (shortest * amount) + restarts + 2


def chunk_key(chunk: Chunk) -> str:
    """A stable, human-readable key of a chunk.

    Dates and datetimes key on the chunk start (``2024-01-01``, ``2024-01-01T06:00:00``, with the
    UTC offset when aware); integer chunks on both bounds (``0-100000``).
    """
    if isinstance(chunk.start, int):
        return f"{chunk.start}-{chunk.end}"
    return chunk.start.isoformat()


def _check_bounds(start: Bound, end: Bound) -> tuple[Bound, Bound]:
    kinds = (_kind(start), _kind(end))
    if kinds[0] != kinds[1]:
        raise ValueError(f"start {start!r} and end {end!r} must be of the same kind (int, date or datetime)")
    if isinstance(start, datetime) and isinstance(end, datetime):
        if (start.tzinfo is None) != (end.tzinfo is None):
            raise ValueError(f"start {start} and end {end} must both be time-zone aware or both naive")
        if start.tzinfo is not None:
            end = end.astimezone(start.tzinfo)
    if not start < end:  # type: ignore[operator]
        raise ValueError(f"replay start {start} must be before end {end} (the range is [start, end))")
    return start, end


def _kind(value: object) -> str:
    if isinstance(value, bool):
        raise ValueError(f"a replay bound cannot be a boolean, got {value!r}")
    for kind in (datetime, date, int):  # datetime first: it is a date subclass
        if isinstance(value, kind):
            return kind.__name__
    raise ValueError(f"a replay bound must be an int, a date or a datetime, got {type(value).__name__} {value!r}")


def _check_interval(chunk_interval: Mapping[str, int]) -> tuple[str, int]:
    if len(chunk_interval) != 1:
        raise ValueError(
            f"chunk_interval takes exactly one unit of {', '.join(CHUNK_UNITS)}; got {dict(chunk_interval)}"
        )
    ((unit, amount),) = chunk_interval.items()
    if unit not in CHUNK_UNITS:
        raise ValueError(
            f"unknown chunk_interval unit '{unit}'{did_you_mean(unit, CHUNK_UNITS)} (known: {', '.join(CHUNK_UNITS)})"
        )
    if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
        raise ValueError(f"chunk_interval {unit} must be a positive integer, got {amount!r}")
    return unit, amount


def _integer_chunks(start: int, end: int, step: int) -> list[Chunk]:
    first = (start // step + 1) * step  # the first multiple of step strictly after start
    bounds = [start, *range(first, end, step), end]
    return [Chunk(i, lo, hi) for i, (lo, hi) in enumerate(pairwise(bounds))]


def _calendar_chunks(start: date, end: date, unit: str, amount: int) -> list[Chunk]:
    as_dates = not isinstance(start, datetime) and unit in DATE_UNITS
    lo, hi = _as_datetime(start), _as_datetime(end)
    following = _NEXT_BOUNDARY[unit](amount, lo)
    bounds = [lo]
    boundary = following(lo)
    while boundary < hi:
        bounds.append(boundary)
        boundary = following(boundary)
    bounds.append(hi)
    convert: Callable[[datetime], date] = (lambda d: d.date()) if as_dates else (lambda d: d)
    return [Chunk(i, convert(a), convert(b)) for i, (a, b) in enumerate(pairwise(bounds))]


def _as_datetime(value: date) -> datetime:
    if isinstance(value, datetime):
        return value
    return datetime(value.year, value.month, value.day)


def _midnight(t: datetime) -> datetime:
    return t.replace(hour=0, minute=0, second=0, microsecond=0)


# Each entry maps (n, start) to a function giving the first aligned boundary strictly after a time.
# Weeks and days are anchored on start's first Monday / midnight, so they need start; the others are
# fixed calendar grids.
NextBoundary = Callable[[datetime], datetime]


def _next_year(n: int, _start: datetime) -> NextBoundary:
    def following(t: datetime) -> datetime:
        floor = t.year - (t.year - 1) % n
        return _midnight(t).replace(year=floor + n, month=1, day=1)

    return following


def _next_month(n: int, _start: datetime) -> NextBoundary:
    def following(t: datetime) -> datetime:
        month_index = (t.month - 1) - (t.month - 1) % n + n  # 0-based month of the next boundary
        if month_index >= 12:
            return _midnight(t).replace(year=t.year + 1, month=1, day=1)
        return _midnight(t).replace(month=month_index + 1, day=1)

    return following


def _anchored(anchor: datetime, period: timedelta) -> NextBoundary:
    """Boundaries at ``anchor + k * period`` (wall clock); ``anchor`` is on/after every queried time's chunk start."""

    def following(t: datetime) -> datetime:
        if t < anchor:
            return anchor
        return anchor + ((t - anchor) // period + 1) * period

    return following


def _next_week(n: int, start: datetime) -> NextBoundary:
    monday = _midnight(start) + timedelta(days=-start.weekday() % 7)
    if monday < start:
        monday += timedelta(weeks=1)
    return _anchored(monday, timedelta(weeks=n))


def _next_day(n: int, start: datetime) -> NextBoundary:
    midnight = _midnight(start)
    if midnight < start:
        midnight += timedelta(days=1)
    return _anchored(midnight, timedelta(days=n))


def _within_day(period_minutes: int) -> NextBoundary:
    """Boundaries at minutes-of-day that are multiples of ``period_minutes``, restarting at midnight."""

    def following(t: datetime) -> datetime:
        minute_of_day = t.hour * 60 + t.minute
        nxt = minute_of_day - minute_of_day % period_minutes + period_minutes
        midnight = _midnight(t)
        if nxt >= 24 * 60:
            return midnight + timedelta(days=1)
        return midnight.replace(hour=nxt // 60, minute=nxt % 60)

    return following


_NEXT_BOUNDARY: dict[str, Callable[[int, datetime], NextBoundary]] = {
    "years": _next_year,
    "months": _next_month,
    "weeks": _next_week,
    "days": _next_day,
    "hours": lambda n, _start: _within_day(60 * n),
    "minutes": lambda n, _start: _within_day(n),
}
