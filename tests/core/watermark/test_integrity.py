"""A watermark that parses must also fit its dataflow; recorded watermarks merge never backward."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

import pytest

from datacoolie_core import WatermarkError
from datacoolie_core.watermark.integrity import check_watermark_fits, covers, merge_recorded
from datacoolie_core.watermark.serializer import serialize_watermark

T1 = datetime(2026, 1, 1, tzinfo=UTC)
T2 = datetime(2026, 2, 1, tzinfo=UTC)

FITS = [
    ("datetime", {"updated_at": T1}, ["updated_at"]),
    ("other-case", {"Updated_At": T1}, ["updated_at"]),
    ("one-of-two-null", {"a": None, "b": 5}, ["a", "b"]),
    ("subset", {"b": "x"}, ["a", "b"]),
    ("date-time-decimal-float", {"a": date(2026, 1, 1), "b": time(1), "c": Decimal("1.5"), "d": 1.5}, ["a", "b", "c", "d"]),
    ("bytes", {"a": b"\x01"}, ["a"]),
    ("date-folder-partition", {"__date_folder_partition__": "2026/01/01"}, ["updated_at"]),
    ("file-mtime", {"__file_modification_time": T1}, ["__file_modification_time"]),
]  # fmt: skip


@pytest.mark.parametrize(("watermark", "columns"), [c[1:] for c in FITS], ids=[c[0] for c in FITS])
def test_fitting_watermarks_pass(watermark: dict[str, Any], columns: list[str]) -> None:
    check_watermark_fits(watermark, columns)


MISFITS = [
    ("unknown-key", {"changed_at": T1}, ["updated_at"], r"key\(s\) 'changed_at' are not its watermark columns \(expected 'updated_at'\)"),
    ("one-unknown-of-two", {"updated_at": T1, "x": 1}, ["updated_at"], r"key\(s\) 'x'"),
    ("no-watermark-columns", {"updated_at": T1}, [], r"expected none \(the dataflow has no watermark_columns\)"),
    ("bool", {"updated_at": True}, ["updated_at"], "'updated_at' holds bool True"),
    ("list", {"updated_at": [1]}, ["updated_at"], r"'updated_at' holds list \[1\]"),
    ("dict", {"updated_at": {"a": 1}}, ["updated_at"], "'updated_at' holds dict"),
]  # fmt: skip


@pytest.mark.parametrize(("watermark", "columns", "detail"), [c[1:] for c in MISFITS], ids=[c[0] for c in MISFITS])
def test_misfits_are_errors_naming_key_and_the_way_out(
    watermark: dict[str, Any], columns: list[str], detail: str
) -> None:
    with pytest.raises(WatermarkError, match=detail) as info:
        check_watermark_fits(watermark, columns)
    assert "NOT treated as a first run" in str(info.value)
    assert "datacoolie state repair" in str(info.value)


@pytest.mark.parametrize(
    ("stored", "committed", "expected"),
    [(None, {"a": T1}, False), ({"a": T1}, {"a": T1}, True), ({"a": T2}, {"a": T1}, True),
     ({"a": T1}, {"a": T2}, False), ({"a": T1}, {"b": 1}, False), ({"a": date(2027, 1, 1)}, {"a": T1}, False),
     ({"a": 5}, {"a": T1}, False)],
    ids=["missing", "equal", "ahead", "behind", "other-column", "date-vs-timestamp", "number-vs-timestamp"],
)  # fmt: skip
def test_covers(stored: dict[str, Any] | None, committed: dict[str, Any], expected: bool) -> None:
    assert covers(stored, committed) is expected


def test_merge_recorded_is_the_furthest_point_and_skips_commits_without_one() -> None:
    texts = [serialize_watermark({"a": T2}), None, serialize_watermark({"a": T1, "b": 3})]
    assert merge_recorded(texts) == {"a": T2, "b": 3}
    assert merge_recorded([None, None]) is None
    with pytest.raises(WatermarkError, match="holds no value"):
        merge_recorded(["{}"])
