"""Replay chunk windows: aligned [start, end) chunks for calendar units and integer steps."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from datacoolie_core.models.run_config import ReplayConfig
from datacoolie_core.orchestration.replay import Chunk, chunk_key, chunk_windows
from datacoolie_core.orchestration.replay.windows import chunk_count_bound

D = date
T = datetime
BERLIN = ZoneInfo("Europe/Berlin")


def bounds(chunks: list[Chunk]) -> list[tuple[Any, Any]]:
    return [(c.start, c.end) for c in chunks]


CASES = [
    # (start, end, interval, expected [(start, end), ...])
    pytest.param(D(2024, 1, 1), D(2024, 4, 1), {"months": 1},
                 [(D(2024, 1, 1), D(2024, 2, 1)), (D(2024, 2, 1), D(2024, 3, 1)), (D(2024, 3, 1), D(2024, 4, 1))],
                 id="months-aligned"),
    pytest.param(D(2024, 1, 31), D(2024, 3, 15), {"months": 1},
                 [(D(2024, 1, 31), D(2024, 2, 1)), (D(2024, 2, 1), D(2024, 3, 1)), (D(2024, 3, 1), D(2024, 3, 15))],
                 id="month-end-start-partial-first-and-last"),
    pytest.param(D(2024, 2, 29), D(2024, 3, 2), {"days": 1},
                 [(D(2024, 2, 29), D(2024, 3, 1)), (D(2024, 3, 1), D(2024, 3, 2))],
                 id="leap-day"),
    pytest.param(D(2023, 2, 27), D(2023, 3, 2), {"days": 1},
                 [(D(2023, 2, 27), D(2023, 2, 28)), (D(2023, 2, 28), D(2023, 3, 1)), (D(2023, 3, 1), D(2023, 3, 2))],
                 id="non-leap-february"),
    pytest.param(D(2024, 2, 29), D(2026, 6, 1), {"years": 1},
                 [(D(2024, 2, 29), D(2025, 1, 1)), (D(2025, 1, 1), D(2026, 1, 1)), (D(2026, 1, 1), D(2026, 6, 1))],
                 id="years-from-leap-day"),
    pytest.param(D(2019, 6, 1), D(2024, 3, 1), {"years": 2},
                 [(D(2019, 6, 1), D(2021, 1, 1)), (D(2021, 1, 1), D(2023, 1, 1)), (D(2023, 1, 1), D(2024, 3, 1))],
                 id="years-2-aligned-to-odd-years"),
    pytest.param(D(2020, 12, 28), D(2021, 1, 11), {"weeks": 1},
                 [(D(2020, 12, 28), D(2021, 1, 4)), (D(2021, 1, 4), D(2021, 1, 11))],
                 id="iso-weeks-across-new-year"),
    pytest.param(D(2020, 12, 30), D(2021, 1, 13), {"weeks": 1},
                 [(D(2020, 12, 30), D(2021, 1, 4)), (D(2021, 1, 4), D(2021, 1, 11)), (D(2021, 1, 11), D(2021, 1, 13))],
                 id="weeks-partial-to-first-monday"),
    pytest.param(D(2020, 12, 28), D(2021, 1, 20), {"weeks": 2},
                 [(D(2020, 12, 28), D(2021, 1, 11)), (D(2021, 1, 11), D(2021, 1, 20))],
                 id="weeks-2-from-first-monday"),
    pytest.param(D(2024, 2, 10), D(2024, 11, 15), {"months": 3},
                 [(D(2024, 2, 10), D(2024, 4, 1)), (D(2024, 4, 1), D(2024, 7, 1)),
                  (D(2024, 7, 1), D(2024, 10, 1)), (D(2024, 10, 1), D(2024, 11, 15))],
                 id="quarters"),
    pytest.param(D(2024, 11, 1), D(2025, 5, 1), {"months": 3},
                 [(D(2024, 11, 1), D(2025, 1, 1)), (D(2025, 1, 1), D(2025, 4, 1)), (D(2025, 4, 1), D(2025, 5, 1))],
                 id="quarters-across-new-year"),
    pytest.param(D(2024, 1, 1), D(2025, 1, 1), {"months": 5},
                 [(D(2024, 1, 1), D(2024, 6, 1)), (D(2024, 6, 1), D(2024, 11, 1)), (D(2024, 11, 1), D(2025, 1, 1))],
                 id="months-5-restart-each-year"),
    pytest.param(D(2024, 3, 5), D(2024, 3, 20), {"months": 1},
                 [(D(2024, 3, 5), D(2024, 3, 20))],
                 id="inside-one-month"),
    pytest.param(D(2024, 3, 1), D(2024, 3, 8), {"days": 3},
                 [(D(2024, 3, 1), D(2024, 3, 4)), (D(2024, 3, 4), D(2024, 3, 7)), (D(2024, 3, 7), D(2024, 3, 8))],
                 id="days-3-from-start"),
    pytest.param(T(2024, 3, 6, 10), T(2024, 3, 10), {"days": 2},
                 [(T(2024, 3, 6, 10), T(2024, 3, 7)), (T(2024, 3, 7), T(2024, 3, 9)), (T(2024, 3, 9), T(2024, 3, 10))],
                 id="days-2-partial-to-first-midnight"),
    pytest.param(T(2024, 1, 1, 5), T(2024, 1, 2, 1), {"hours": 6},
                 [(T(2024, 1, 1, 5), T(2024, 1, 1, 6)), (T(2024, 1, 1, 6), T(2024, 1, 1, 12)),
                  (T(2024, 1, 1, 12), T(2024, 1, 1, 18)), (T(2024, 1, 1, 18), T(2024, 1, 2)),
                  (T(2024, 1, 2), T(2024, 1, 2, 1))],
                 id="hours-6-naive"),
    pytest.param(T(2024, 1, 1, 22, tzinfo=UTC), T(2024, 1, 2, 7, tzinfo=UTC), {"hours": 6},
                 [(T(2024, 1, 1, 22, tzinfo=UTC), T(2024, 1, 2, tzinfo=UTC)),
                  (T(2024, 1, 2, tzinfo=UTC), T(2024, 1, 2, 6, tzinfo=UTC)),
                  (T(2024, 1, 2, 6, tzinfo=UTC), T(2024, 1, 2, 7, tzinfo=UTC))],
                 id="hours-6-utc"),
    pytest.param(D(2024, 1, 1), D(2024, 1, 2), {"hours": 12},
                 [(T(2024, 1, 1), T(2024, 1, 1, 12)), (T(2024, 1, 1, 12), T(2024, 1, 2))],
                 id="hours-on-dates-become-datetimes"),
    pytest.param(T(2024, 1, 1, 0, 10), T(2024, 1, 1, 1, 15), {"minutes": 30},
                 [(T(2024, 1, 1, 0, 10), T(2024, 1, 1, 0, 30)), (T(2024, 1, 1, 0, 30), T(2024, 1, 1, 1)),
                  (T(2024, 1, 1, 1), T(2024, 1, 1, 1, 15))],
                 id="minutes-30"),
    pytest.param(T(2024, 1, 1, 23, 40), T(2024, 1, 2, 0, 50), {"minutes": 45},
                 [(T(2024, 1, 1, 23, 40), T(2024, 1, 2)), (T(2024, 1, 2), T(2024, 1, 2, 0, 45)),
                  (T(2024, 1, 2, 0, 45), T(2024, 1, 2, 0, 50))],
                 id="minutes-45-restart-at-midnight"),
    pytest.param(T(2024, 1, 31, 12, tzinfo=UTC), T(2024, 3, 1, tzinfo=UTC), {"months": 1},
                 [(T(2024, 1, 31, 12, tzinfo=UTC), T(2024, 2, 1, tzinfo=UTC)),
                  (T(2024, 2, 1, tzinfo=UTC), T(2024, 3, 1, tzinfo=UTC))],
                 id="months-utc"),
    pytest.param(0, 300_000, {"step": 100_000},
                 [(0, 100_000), (100_000, 200_000), (200_000, 300_000)],
                 id="step-aligned"),
    pytest.param(150, 420, {"step": 100},
                 [(150, 200), (200, 300), (300, 400), (400, 420)],
                 id="step-unaligned"),
    pytest.param(110, 190, {"step": 100},
                 [(110, 190)],
                 id="step-inside-one-step"),
    pytest.param(-150, 50, {"step": 100},
                 [(-150, -100), (-100, 0), (0, 50)],
                 id="step-negative"),
    pytest.param(0, 1_000_000, None, [(0, 1_000_000)], id="no-interval-integers"),
    pytest.param(D(2024, 1, 15), D(2024, 9, 1), None, [(D(2024, 1, 15), D(2024, 9, 1))], id="no-interval-dates"),
]  # fmt: skip


@pytest.mark.parametrize(("start", "end", "interval", "expected"), CASES)
def test_chunk_windows(start: Any, end: Any, interval: dict[str, int] | None, expected: list[tuple[Any, Any]]) -> None:
    chunks = chunk_windows(start, end, interval)

    assert bounds(chunks) == expected
    assert [c.index for c in chunks] == list(range(len(expected)))
    assert all(type(c.start) is type(expected[0][0]) and type(c.end) is type(expected[0][0]) for c in chunks)


def test_utc_chunks_stay_aware_in_utc() -> None:
    chunks = chunk_windows(T(2024, 1, 1, tzinfo=UTC), T(2024, 1, 3, tzinfo=UTC), {"days": 1})

    assert [(c.start.tzinfo, c.end.tzinfo) for c in chunks] == [(UTC, UTC), (UTC, UTC)]  # type: ignore[union-attr]


def test_aware_end_is_converted_to_the_start_zone() -> None:
    plus_two = timezone(timedelta(hours=2))
    # 2024-01-02 02:00+02:00 is 2024-01-02 00:00 UTC
    chunks = chunk_windows(T(2024, 1, 1, tzinfo=UTC), T(2024, 1, 2, 2, tzinfo=plus_two), {"days": 1})

    assert bounds(chunks) == [(T(2024, 1, 1, tzinfo=UTC), T(2024, 1, 2, tzinfo=UTC))]


def test_boundaries_follow_the_wall_clock_of_the_start_zone() -> None:
    # Berlin switches to summer time on 2024-03-31: the day boundaries stay local midnights
    chunks = chunk_windows(T(2024, 3, 30, tzinfo=BERLIN), T(2024, 4, 1, tzinfo=BERLIN), {"days": 1})

    assert [chunk_key(c) for c in chunks] == ["2024-03-30T00:00:00+01:00", "2024-03-31T00:00:00+01:00"]
    assert chunks[1].end.isoformat() == "2024-04-01T00:00:00+02:00"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("start", "end", "interval"),
    [
        pytest.param(D(2023, 11, 17), D(2025, 2, 3), {"months": 1}, id="months"),
        pytest.param(D(2023, 11, 17), D(2025, 2, 3), {"weeks": 3}, id="weeks"),
        pytest.param(T(2024, 1, 1, 7, 13), T(2024, 1, 9, 2), {"hours": 5}, id="hours"),
        pytest.param(T(2024, 1, 1, 7, 13), T(2024, 1, 1, 19), {"minutes": 7}, id="minutes"),
        pytest.param(-1234, 98_765, {"step": 1000}, id="step"),
    ],
)
def test_chunks_tile_the_range_exactly(start: Any, end: Any, interval: dict[str, int]) -> None:
    chunks = chunk_windows(start, end, interval)

    assert chunks[0].start == start
    assert chunks[-1].end == end
    assert all(a.end == b.start for a, b in pairwise(chunks))
    assert all(c.start < c.end for c in chunks)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("chunk", "key"),
    [
        pytest.param(Chunk(0, D(2024, 1, 1), D(2024, 2, 1)), "2024-01-01", id="date"),
        pytest.param(Chunk(0, T(2024, 1, 1, 6), T(2024, 1, 1, 12)), "2024-01-01T06:00:00", id="naive-datetime"),
        pytest.param(Chunk(0, T(2024, 1, 1, 6, tzinfo=UTC), T(2024, 1, 1, 12, tzinfo=UTC)), "2024-01-01T06:00:00+00:00",
                     id="utc-datetime"),
        pytest.param(Chunk(0, 0, 100_000), "0-100000", id="integers"),
        pytest.param(Chunk(3, 300_000, 350_000), "300000-350000", id="integers-clamped"),
    ],
)  # fmt: skip
def test_chunk_key(chunk: Chunk, key: str) -> None:
    assert chunk_key(chunk) == key


def test_chunk_keys_are_unique_over_a_range() -> None:
    chunks = chunk_windows(T(2024, 1, 1), T(2024, 3, 1), {"hours": 1})

    assert len({chunk_key(c) for c in chunks}) == len(chunks) == 60 * 24


def test_replay_config_values_chunk_as_documented() -> None:
    replay = ReplayConfig(start="2025-01-01", end="2025-04-01", chunk_interval={"months": 1})

    chunks = chunk_windows(replay.start, replay.end, replay.chunk_interval)

    assert bounds(chunks) == [
        (D(2025, 1, 1), D(2025, 2, 1)),
        (D(2025, 2, 1), D(2025, 3, 1)),
        (D(2025, 3, 1), D(2025, 4, 1)),
    ]


@pytest.mark.parametrize(
    ("start", "end", "interval", "message"),
    [
        pytest.param(D(2024, 2, 1), D(2024, 1, 1), None, "must be before end", id="start-after-end"),
        pytest.param(5, 5, {"step": 1}, "must be before end", id="empty-range"),
        pytest.param(D(2024, 1, 1), T(2024, 2, 1), None, "same kind", id="date-and-datetime"),
        pytest.param(0, D(2024, 2, 1), None, "same kind", id="int-and-date"),
        pytest.param(T(2024, 1, 1), T(2024, 2, 1, tzinfo=UTC), None, "aware or both naive", id="naive-and-aware"),
        pytest.param(True, 5, None, "boolean", id="boolean-bound"),
        pytest.param("2024-01-01", "2024-02-01", None, "must be an int, a date or a datetime", id="string-bound"),
        pytest.param(0, 10, {}, "exactly one unit", id="no-unit"),
        pytest.param(0, 10, {"step": 1, "days": 1}, "exactly one unit", id="two-units"),
        pytest.param(D(2024, 1, 1), D(2024, 2, 1), {"month": 1}, "did you mean 'months'", id="unknown-unit"),
        pytest.param(D(2024, 1, 1), D(2024, 2, 1), {"days": 0}, "positive integer", id="zero"),
        pytest.param(D(2024, 1, 1), D(2024, 2, 1), {"days": -1}, "positive integer", id="negative"),
        pytest.param(D(2024, 1, 1), D(2024, 2, 1), {"days": 1.5}, "positive integer", id="float"),
        pytest.param(D(2024, 1, 1), D(2024, 2, 1), {"days": True}, "positive integer", id="boolean-amount"),
        pytest.param(D(2024, 1, 1), D(2024, 2, 1), {"step": 10}, "step needs integer", id="step-on-dates"),
        pytest.param(0, 100, {"days": 1}, "needs date or datetime", id="calendar-on-integers"),
    ],
)
def test_invalid_windows_raise(start: Any, end: Any, interval: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        chunk_windows(start, end, interval)


@pytest.mark.parametrize(
    ("start", "end", "interval"),
    [
        (0, 10**12, {"step": 1}),
        (datetime(2000, 1, 1), datetime(2010, 1, 1), {"minutes": 1}),
        (date(1000, 1, 1), date(9000, 1, 1), {"days": 1}),
    ],
    ids=["step-1-over-1e12", "minutes-over-ten-years", "days-over-8000-years"],
)
def test_too_many_chunks_are_refused_before_any_is_listed(start: Any, end: Any, interval: dict[str, int]) -> None:
    message = r"makes up to [\d,]+ chunks, more than the 100,000 one replay may run; use a larger chunk_interval"
    with pytest.raises(ValueError, match=message):
        chunk_windows(start, end, interval)
    with pytest.raises(ValueError, match=message):
        ReplayConfig(start=start, end=end, chunk_interval=interval)


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (datetime(2023, 3, 5, 7, 13), datetime(2026, 1, 1)),
        (datetime(2023, 3, 5, 7, 13), datetime(2023, 3, 7, 7)),
        (date(2020, 2, 29), date(2024, 3, 1)),
    ],
    ids=["years", "two-days", "dates"],
)
@pytest.mark.parametrize("unit", ["years", "months", "weeks", "days", "hours", "minutes"])
@pytest.mark.parametrize("amount", [1, 5, 7, 13])
def test_the_chunk_count_bound_is_never_below_the_count(start: Any, end: Any, unit: str, amount: int) -> None:
    if unit == "minutes" and (end - start).days > 2:
        return
    assert chunk_count_bound(start, end, unit, amount) >= len(chunk_windows(start, end, {unit: amount}))
