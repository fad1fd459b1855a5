"""Per-column watermark merge: never backward, loud on values that cannot be ordered."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datacoolie_core.errors import WatermarkError
from datacoolie_core.watermark import merge_watermarks

CET = timezone(timedelta(hours=1))
NYC = timezone(timedelta(hours=-5))

D1 = datetime(2026, 3, 2, 8, 0)
D2 = datetime(2026, 3, 2, 9, 0)
# 10:00+01:00 is 09:00 UTC; 05:00-05:00 is 10:00 UTC: later in UTC despite the smaller wall clock.
AWARE_EARLY = datetime(2026, 3, 2, 10, 0, tzinfo=CET)
AWARE_LATE = datetime(2026, 3, 2, 5, 0, tzinfo=NYC)

MERGES = [
    ("no-stored", None, {"a": 1}, {"a": 1}),
    ("no-candidate", {"a": 1}, None, {"a": 1}),
    ("both-none", None, None, {}),
    ("missing-key-preserved", {"a": 1, "b": "x"}, {"a": 2}, {"a": 2, "b": "x"}),
    ("new-key-added", {"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
    ("none-does-not-overwrite", {"a": 5}, {"a": None}, {"a": 5}),
    ("none-not-added", {"a": 5}, {"b": None}, {"a": 5}),
    ("stored-none-replaced", {"a": None}, {"a": 3}, {"a": 3}),
    ("datetime-forward", {"t": D1}, {"t": D2}, {"t": D2}),
    ("datetime-backward-kept", {"t": D2}, {"t": D1}, {"t": D2}),
    ("aware-forward-other-zone", {"t": AWARE_EARLY}, {"t": AWARE_LATE}, {"t": AWARE_LATE}),
    ("aware-backward-other-zone", {"t": AWARE_LATE}, {"t": AWARE_EARLY}, {"t": AWARE_LATE}),
    ("date-forward", {"d": date(2026, 1, 1)}, {"d": date(2026, 1, 2)}, {"d": date(2026, 1, 2)}),
    ("date-backward-kept", {"d": date(2026, 1, 2)}, {"d": date(2025, 12, 31)}, {"d": date(2026, 1, 2)}),
    ("time-max", {"t": time(9)}, {"t": time(8)}, {"t": time(9)}),
    ("int-forward", {"n": 1}, {"n": 2}, {"n": 2}),
    ("int-backward-kept", {"n": 10}, {"n": 2}, {"n": 10}),
    ("int-vs-decimal", {"n": 10}, {"n": Decimal("10.5")}, {"n": Decimal("10.5")}),
    ("decimal-vs-int-kept", {"n": Decimal("1E+3")}, {"n": 999}, {"n": Decimal("1E+3")}),
    ("float-max", {"f": 1.5}, {"f": 1.25}, {"f": 1.5}),
    (
        "str-max",
        {"s": "2026-03-02T08:15:00"},
        {"s": "2026-03-02T09:00:00"},
        {"s": "2026-03-02T09:00:00"},
    ),
    ("str-backward-kept", {"s": "b"}, {"s": "a"}, {"s": "b"}),
    ("kind-change-str-to-datetime", {"t": "2026-03-02T08:15:00"}, {"t": D1}, {"t": D1}),
    ("kind-change-datetime-to-str", {"t": D2}, {"t": "2000"}, {"t": "2000"}),
    ("kind-change-str-to-int", {"n": "zz"}, {"n": 1}, {"n": 1}),
    ("bool-is-opaque", {"b": True}, {"b": False}, {"b": False}),
    ("bool-vs-int-replaces", {"b": 5}, {"b": True}, {"b": True}),
    ("dict-opaque", {"p": {"x": 9}}, {"p": {"x": 1}}, {"p": {"x": 1}}),
    ("list-opaque", {"p": [9]}, {"p": [1]}, {"p": [1]}),
    ("bytes-opaque", {"p": b"\xff"}, {"p": b"\x00"}, {"p": b"\x00"}),
]


@pytest.mark.parametrize(("stored", "candidate", "expected"), [c[1:] for c in MERGES], ids=[c[0] for c in MERGES])
def test_merge(stored: dict[str, Any] | None, candidate: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    merged = merge_watermarks(stored, candidate)
    assert merged == expected
    for key, value in expected.items():  # the winner is kept as given (type, tz offset)
        assert type(merged[key]) is type(value)
        if isinstance(value, datetime):
            assert merged[key].tzinfo == value.tzinfo


def test_aware_tie_keeps_stored_value() -> None:
    same_instant = AWARE_EARLY.astimezone(UTC)
    assert merge_watermarks({"t": AWARE_EARLY}, {"t": same_instant})["t"].tzinfo == CET


def test_merge_does_not_mutate_arguments() -> None:
    stored, candidate = {"a": 1, "b": 2}, {"a": 3}
    merge_watermarks(stored, candidate)
    assert stored == {"a": 1, "b": 2}
    assert candidate == {"a": 3}


MISMATCHES = [
    (
        "date-vs-datetime",
        date(2026, 1, 1),
        D1,
        r"stored date .* new naive datetime .*one type \(date or timestamp\)",
    ),
    ("datetime-vs-date", AWARE_EARLY, date(2026, 1, 1), r"stored aware datetime .* new date"),
    ("naive-vs-aware", D1, AWARE_LATE, r"stored naive datetime .* new aware datetime .*timezone-aware"),
    ("aware-vs-naive", AWARE_LATE, D1, r"stored aware datetime .* new naive datetime"),
    ("naive-vs-aware-time", time(1), time(2, tzinfo=UTC), r"stored naive time .* new aware time"),
    ("float-vs-int", 1.5, 2, r"stored float 1\.5 and new int 2 .*one numeric type"),
    ("decimal-vs-float", Decimal("1.5"), 2.5, r"stored Decimal .* new float 2\.5"),
    ("nan", 1.0, float("nan"), r"new value is NaN"),
    ("decimal-nan", Decimal("NaN"), Decimal(1), r"stored value is NaN"),
]


@pytest.mark.parametrize(("stored", "candidate", "match"), [c[1:] for c in MISMATCHES], ids=[c[0] for c in MISMATCHES])
def test_unorderable_values_raise(stored: Any, candidate: Any, match: str) -> None:
    with pytest.raises(WatermarkError, match=r"^Watermark column 'updated_at' cannot be merged: " + match):
        merge_watermarks({"updated_at": stored, "other": 1}, {"updated_at": candidate})


# -- property: a sequence of merges is a running max -------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from("abc"), st.none() | st.integers(-50, 50)), max_size=8))
def test_property_running_max(candidates: list[dict[str, int | None]]) -> None:
    state: dict[str, Any] = {}
    for candidate in candidates:
        new_state = merge_watermarks(state, candidate)
        assert all(new_state[k] >= v for k, v in state.items())  # never backward
        state = new_state
    for key in "abc":
        seen = [c[key] for c in candidates if c.get(key) is not None]
        assert state.get(key) == (max(seen) if seen else None)
