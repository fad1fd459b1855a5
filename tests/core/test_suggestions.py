from __future__ import annotations

import pytest

from datacoolie_core.suggestions import closest, did_you_mean

KNOWN = ["partitions", "schedule", "sensor", "max_runs"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [("schedul", "schedule"), ("SENSOR", "sensor"), ("max_run", "max_runs"), ("xyz", None)],
    ids=["typo", "case", "missing-letter", "nothing-close"],
)
def test_closest(name: str, expected: str | None) -> None:
    assert closest(name, KNOWN) == expected


@pytest.mark.parametrize(
    ("name", "hint"),
    [("schedul", "; did you mean 'schedule'?"), ("schedule", ""), ("xyz", "")],
    ids=["typo", "exact", "nothing-close"],
)
def test_did_you_mean(name: str, hint: str) -> None:
    assert did_you_mean(name, KNOWN) == hint
