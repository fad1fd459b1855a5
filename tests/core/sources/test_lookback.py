from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from datacoolie_core.models.connection import BackwardConfig
from datacoolie_core.sources.lookback import closing_day_start, effective_lower_bounds, minus_months, shift_value

NOW = datetime(2024, 3, 20, 12, 0, tzinfo=UTC)
PLUS2 = timezone(timedelta(hours=2))


@pytest.mark.parametrize(
    ("value", "backward", "expected"),
    [
        (datetime(2024, 3, 10, 8), {"days": 2}, datetime(2024, 3, 8, 8)),
        (datetime(2024, 3, 10, 8), {"hours": 10}, datetime(2024, 3, 9, 22)),
        (datetime(2024, 3, 31, 8), {"months": 1}, datetime(2024, 2, 29, 8)),
        (datetime(2023, 3, 31), {"months": 1}, datetime(2023, 2, 28)),
        (datetime(2024, 2, 29), {"years": 1}, datetime(2023, 2, 28)),
        (datetime(2024, 1, 15), {"months": 13}, datetime(2022, 12, 15)),
        (datetime(2024, 3, 31, 1), {"months": 1, "days": 1, "hours": 2}, datetime(2024, 2, 27, 23)),
        (datetime(2024, 3, 10, 8, tzinfo=PLUS2), {"days": 1}, datetime(2024, 3, 9, 8, tzinfo=PLUS2)),
        (date(2024, 3, 10), {"days": 3}, date(2024, 3, 7)),
        (date(2024, 3, 10), {"hours": 5}, date(2024, 3, 9)),
        (date(2024, 3, 31), {"months": 1}, date(2024, 2, 29)),
        ("2024-03-10T08:00:00", {"days": 2}, "2024-03-08T08:00:00"),
        ("2024-03-10 08:00:00.250000", {"hours": 1}, "2024-03-10 07:00:00.250000"),
        ("2024-03-10", {"days": 1}, "2024-03-09"),
        ("2024-03-10T08:00:00+02:00", {"days": 1}, "2024-03-09T08:00:00+02:00"),
        (42, {"days": 1}, 42),
        (Decimal("1.5"), {"days": 1}, Decimal("1.5")),
        ("order-17", {"days": 1}, "order-17"),
        ("20240310", {"days": 1}, "20240310"),
    ],
    ids=[
        "days", "hours", "month-end-clamped-leap", "month-end-clamped", "leap-day-minus-year", "13-months",
        "months-then-days-hours", "aware-keeps-zone", "date-days", "date-hours-floor-to-day", "date-month-clamp",
        "iso-string-T", "iso-string-space-fraction", "iso-date-string", "iso-string-offset", "int-unchanged",
        "decimal-unchanged", "non-iso-string-unchanged", "compact-digits-not-iso",
    ],
)  # fmt: skip
def test_fixed_offset(value: Any, backward: dict[str, int], expected: Any) -> None:
    assert shift_value(value, BackwardConfig(**backward), reference_time=NOW) == expected


@pytest.mark.parametrize(
    ("reference", "closing_day", "extra", "expected"),
    [
        (datetime(2024, 3, 5, tzinfo=UTC), 10, {}, date(2024, 2, 1)),
        (datetime(2024, 3, 10, tzinfo=UTC), 10, {}, date(2024, 2, 1)),
        (datetime(2024, 3, 11, tzinfo=UTC), 10, {}, date(2024, 3, 1)),
        (datetime(2024, 1, 3, tzinfo=UTC), 5, {}, date(2023, 12, 1)),
        (datetime(2024, 3, 20, tzinfo=UTC), 10, {"months": 2}, date(2024, 1, 1)),
        (datetime(2024, 3, 5, tzinfo=UTC), 10, {"years": 1}, date(2023, 2, 1)),
        (datetime(2024, 3, 10, 23, tzinfo=timezone(timedelta(hours=-3))), 10, {}, date(2024, 3, 1)),
    ],
    ids=["before-closing", "on-closing-day", "after-closing", "january-to-december", "extra-months", "extra-years",
         "reference-day-taken-in-utc"],
)  # fmt: skip
def test_closing_day_start(reference: datetime, closing_day: int, extra: dict[str, int], expected: date) -> None:
    assert closing_day_start(reference, closing_day, **extra) == expected


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        (datetime(2024, 3, 18, 7, 30), datetime(2024, 3, 1)),
        (datetime(2024, 3, 18, tzinfo=UTC), datetime(2024, 3, 1, tzinfo=UTC)),
        (date(2024, 3, 18), date(2024, 3, 1)),
        ("2024-03-18T07:30:00", "2024-03-01T00:00:00"),
        (datetime(2024, 1, 5), datetime(2024, 1, 5)),
        (7, 7),
    ],
    ids=["naive", "aware-stays-aware", "date-stays-date", "iso-string", "older-watermark-not-moved-forward", "int"],
)
def test_closing_day_applies_to_every_temporal_value(stored: Any, expected: Any) -> None:
    # NOW is the 20th, after closing day 10: the bound is the 1st of the current month
    got = shift_value(stored, BackwardConfig(closing_day=10, days=99), reference_time=NOW)
    assert got == expected
    assert type(got) is type(expected)


def test_first_run_has_no_bounds() -> None:
    assert effective_lower_bounds(None, BackwardConfig(days=1), reference_time=NOW) is None
    assert effective_lower_bounds({}, BackwardConfig(days=1), reference_time=NOW) is None


def test_without_lookback_bounds_are_the_stored_values() -> None:
    stored = {"ts": datetime(2024, 3, 1), "id": 5}
    bounds = effective_lower_bounds(stored, None, reference_time=NOW)
    assert bounds == stored
    assert bounds is not stored


def test_every_column_moves_back_and_non_temporal_stay() -> None:
    stored = {"ts": datetime(2024, 3, 10), "d": date(2024, 3, 10), "id": 5}
    bounds = effective_lower_bounds(stored, BackwardConfig(days=1), reference_time=NOW)
    assert bounds == {"ts": datetime(2024, 3, 9), "d": date(2024, 3, 9), "id": 5}


@pytest.mark.parametrize(
    ("value", "months", "expected"),
    [(date(2024, 5, 31), 3, date(2024, 2, 29)), (date(2024, 1, 31), 0, date(2024, 1, 31)),
     (datetime(2024, 12, 31, 5), 10, datetime(2024, 2, 29, 5))],
    ids=["clamp", "zero", "datetime"],
)  # fmt: skip
def test_minus_months(value: Any, months: int, expected: Any) -> None:
    assert minus_months(value, months) == expected
