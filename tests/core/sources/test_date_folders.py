"""Date-folder partitioned file sources (DataCoolie S-12): real folders under ``tmp_path``, read by
the file reader over several runs, the watermark saved and loaded as the driver does between runs."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import polars as pl
import pytest

from datacoolie_core.columns import DATE_FOLDER_PARTITION, FILE_PATH
from datacoolie_core.errors import SourceError
from datacoolie_core.models.connection import BackwardConfig
from datacoolie_core.models.date_pattern import parse_pattern
from datacoolie_core.sources import ReadRange
from datacoolie_core.sources.lookback import effective_lower_bounds
from tests.core.sources.helpers import read, read_ok
from tests.core.sources.test_file import file_source, folder_of, stored, write

DAILY = {"date_folder_partitions": "{year}/{month}/{day}"}
DFP = DATE_FOLDER_PARTITION


def land(tmp_path: Path, folder: str, *ids: int, minute: int = 1) -> None:
    """A parquet file of order ids under the source folder's ``folder`` (e.g. ``2026/01/31``)."""
    name = f"{folder}/part-{ids[0]}.parquet"
    write(folder_of(tmp_path), name, pl.DataFrame({"id": list(ids)}), minute=minute)


def ids(result: Any) -> list[int]:
    return sorted(result.data["id"].to_list())


def folders_read(result: Any, tmp_path: Path) -> list[str]:
    root = folder_of(tmp_path)
    return [str(Path(p).relative_to(root)) for p in result.runtime.source_action["date_folders_read"]]


# --- the pattern ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "placeholders"),
    [
        ("{year}/{month}/{day}", ["year", "month", "day"]),
        ("year={year}/month={month}", ["year", "month"]),
        ("{year}/{month}/{day}/{hour}", ["year", "month", "day", "hour"]),
        ("/{year}/", ["year"]),
        ("y{year}x/m{month}", ["year", "month"]),
    ],
    ids=["daily", "hive-style", "hourly", "slashes-trimmed", "literals-around"],
)
def test_valid_patterns(pattern: str, placeholders: list[str]) -> None:
    assert [level.placeholder for level in parse_pattern(pattern)] == placeholders


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("{year}/{day}", r"level 2 has '\{day\}' where '\{month\}' belongs"),
        ("{month}/{year}", r"level 1 has '\{month\}' where '\{year\}' belongs"),
        ("{year}/latest/{month}", r"level 2 'latest' must hold exactly one placeholder"),
        ("{year}{month}{day}", r"level 1 '\{year\}\{month\}\{day\}' must hold exactly one placeholder"),
        ("{year}/{month}/{day}/{hour}/{minute}", r"5 levels, at most 4"),
        ("{yr}", r"'\{yr\}' where '\{year\}' belongs"),
    ],
    ids=["skipped-level", "out-of-order", "literal-level", "two-in-one-level", "too-deep", "unknown-placeholder"],
)
def test_invalid_patterns(pattern: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_pattern(pattern)


def test_an_invalid_pattern_fails_the_read_naming_the_key(tmp_path: Path) -> None:
    land(tmp_path, "2026/01/31", 1)
    source = file_source(tmp_path, "parquet", configure={"date_folder_partitions": "{year}/{day}"})
    with pytest.raises(SourceError, match=r"connection.configure.date_folder_partitions '\{year\}/\{day\}': level 2"):
        read(source)


# --- incremental runs over nested folders created between runs ----------------------------------


def test_incremental_runs_read_only_new_folders_across_a_month_boundary(tmp_path: Path) -> None:
    source = file_source(tmp_path, "parquet", configure=DAILY, watermark_columns=[DFP])
    # load 1 — the last days of January, and an older December folder
    land(tmp_path, "2025/12/31", 1)
    land(tmp_path, "2026/01/30", 2)
    land(tmp_path, "2026/01/31", 3)
    first = read_ok(source)
    assert ids(first) == [1, 2, 3]
    assert first.runtime.watermark_after == {DFP: "2026-01-31T00:00:00"}

    # load 2 — a late file in the stored day, February's first day, and a late file in an old folder
    land(tmp_path, "2026/01/31", 4)
    land(tmp_path, "2026/02/01", 5, 6)
    land(tmp_path, "2026/01/30", 7)
    second = read_ok(source, stored(first.runtime.watermark_after))
    # the stored day is read again (boundary folder kept: it may have received files), older days are not
    assert ids(second) == [3, 4, 5, 6]
    assert folders_read(second, tmp_path) == ["2026/01/31", "2026/02/01"]
    assert second.runtime.watermark_after == {DFP: "2026-02-01T00:00:00"}

    # load 3 — nothing newer than the stored day: only that day is read again
    third = read_ok(source, stored(second.runtime.watermark_after))
    assert ids(third) == [5, 6]


def test_a_data_watermark_column_next_to_the_folders_reads_each_row_once(tmp_path: Path) -> None:
    source = file_source(tmp_path, "parquet", configure=DAILY, watermark_columns=["id"])
    land(tmp_path, "2026/02/28", 1)
    land(tmp_path, "2026/03/01", 2)
    first = read_ok(source)
    assert first.runtime.watermark_after == {"id": 2, DFP: "2026-03-01T00:00:00"}

    land(tmp_path, "2026/03/01", 3)
    land(tmp_path, "2026/02/28", 9)  # late file in a pruned folder: never listed
    second = read_ok(source, stored(first.runtime.watermark_after))
    assert ids(second) == [3]  # the boundary folder is re-listed, the data window drops id 2
    assert second.runtime.watermark_after == {"id": 3, DFP: "2026-03-01T00:00:00"}


def test_older_years_and_months_are_pruned_without_being_listed(tmp_path: Path) -> None:
    source = file_source(tmp_path, "parquet", configure=DAILY, watermark_columns=[DFP])
    land(tmp_path, "2024/02/30", 1)  # no such day: listing it would fail the read (see below)
    land(tmp_path, "2026/02/30", 2)  # the same in an old month of the current year
    land(tmp_path, "2026/03/02", 3)
    result = read_ok(source, {DFP: "2026-03-01T00:00:00"})
    assert ids(result) == [3]  # pruned at the year and month levels: the bad days were never opened
    assert result.runtime.source_action["files_listed"] == 1


def test_look_back_moves_only_the_folder_bound(tmp_path: Path) -> None:
    source = file_source(tmp_path, "parquet", configure={**DAILY, "backward_days": 1}, watermark_columns=["id"])
    land(tmp_path, "2026/02/28", 1)
    land(tmp_path, "2026/03/01", 2)
    land(tmp_path, "2026/03/01", 3)
    result = read_ok(source, {"id": 1, DFP: "2026-03-01T00:00:00"})
    # 1 March minus one day re-opens 28 February; id keeps its exact bound (> 1), so id 1 is not re-read
    assert folders_read(result, tmp_path) == ["2026/02/28", "2026/03/01"]
    assert result.runtime.watermark_effective == {"id": 1, DFP: "2026-02-28T00:00:00"}
    assert ids(result) == [2, 3]


def test_look_back_shifts_only_the_date_folder_key() -> None:
    watermark = {"updated_at": datetime(2026, 3, 1, 12), DFP: "2026-03-01T00:00:00"}
    bounds = effective_lower_bounds(watermark, BackwardConfig(months=1), reference_time=datetime.now(UTC))
    assert bounds == {"updated_at": datetime(2026, 3, 1, 12), DFP: "2026-02-01T00:00:00"}


# --- replay ranges on the folder date -----------------------------------------------------------


def test_replay_reads_the_folders_of_its_range_only(tmp_path: Path) -> None:
    source = file_source(tmp_path, "parquet", configure=DAILY, watermark_columns=[DFP])
    for day, order in (("2026/01/30", 1), ("2026/01/31", 2), ("2026/02/01", 3), ("2026/02/02", 4)):
        land(tmp_path, day, order)
    chunk = ReadRange(DFP, date(2026, 1, 31), date(2026, 2, 2))  # [31 Jan, 2 Feb)
    result = read_ok(source, {DFP: "2026-02-02T00:00:00"}, read_range=chunk)
    assert ids(result) == [2, 3]  # the stored watermark plays no part in a replay
    assert result.runtime.watermark_after == {DFP: "2026-02-01T00:00:00"}


def test_replay_on_month_folders_keeps_each_month_its_range_touches(tmp_path: Path) -> None:
    source = file_source(tmp_path, "parquet", configure={"date_folder_partitions": "year={year}/month={month}"})
    for month, order in (("12", 1), ("01", 2), ("02", 3)):
        land(tmp_path, f"year={'2025' if month == '12' else '2026'}/month={month}", order)
    result = read_ok(source, read_range=ReadRange(DFP, "2026-01-15", "2026-02-01"))
    assert ids(result) == [2]  # February starts at the (exclusive) end; December ends before the start


def test_replay_bounds_in_a_local_zone_are_compared_as_utc_folder_dates(tmp_path: Path) -> None:
    hourly = {"date_folder_partitions": "{year}/{month}/{day}/{hour}"}
    source = file_source(tmp_path, "parquet", configure=hourly)
    # folders are UTC hours (the writer resolves the pattern with the UTC clock): 29 March 2026, the
    # night Paris moves its clocks from 02:00 to 03:00
    for hour, order in (("00", 1), ("01", 2), ("02", 3), ("03", 4)):
        land(tmp_path, f"2026/03/29/{hour}", order)
    paris = ZoneInfo("Europe/Paris")
    start = datetime(2026, 3, 29, 1, 30, tzinfo=paris)  # CET, UTC+1: 00:30 UTC
    end = datetime(2026, 3, 29, 4, 0, tzinfo=paris)  # CEST, UTC+2: 02:00 UTC
    result = read_ok(source, read_range=ReadRange(DFP, start, end))
    assert ids(result) == [1, 2]  # UTC hours 00 and 01; a naive local reading (01:30-04:00) would give 01-03


def test_a_replay_on_a_data_column_reads_every_folder(tmp_path: Path) -> None:
    source = file_source(tmp_path, "parquet", configure=DAILY, watermark_columns=["id"])
    land(tmp_path, "2026/01/01", 1)
    land(tmp_path, "2026/02/01", 2)
    result = read_ok(source, {DFP: "2026-02-01T00:00:00"}, read_range=ReadRange("id", 1, 3))
    assert ids(result) == [1, 2]


# --- what is not a date folder -------------------------------------------------------------------


def test_folders_of_another_shape_and_files_outside_date_folders_are_passed_over(tmp_path: Path) -> None:
    source = file_source(tmp_path, "parquet", configure=DAILY)
    land(tmp_path, "2026/01/31", 1)
    land(tmp_path, "2026/01/_tmp", 2)
    land(tmp_path, "staging", 3)
    land(tmp_path, "2026/1/05", 4)  # one-digit month: not the pattern's shape
    write(folder_of(tmp_path), "stray.parquet", pl.DataFrame({"id": [5]}), minute=1)
    result = read_ok(source)
    assert ids(result) == [1]
    assert result.data[FILE_PATH].to_list() == [str(folder_of(tmp_path) / "2026/01/31/part-1.parquet")]


def test_a_folder_of_the_right_shape_that_is_no_date_is_an_error(tmp_path: Path) -> None:
    land(tmp_path, "2026/02/30", 1)
    with pytest.raises(SourceError, match=r"date folder '.*2026/02/30' is not a date .*rename or remove it"):
        read(file_source(tmp_path, "parquet", configure=DAILY))


def test_no_folder_in_the_window_skips_the_read_and_keeps_the_watermark(tmp_path: Path) -> None:
    land(tmp_path, "2026/01/01", 1)
    source = file_source(tmp_path, "parquet", configure=DAILY, watermark_columns=[DFP])
    assert read(source, {DFP: "2026-02-01T00:00:00"}) is None


def test_the_folder_key_without_a_pattern_is_an_error(tmp_path: Path) -> None:
    land(tmp_path, "x", 1)
    with pytest.raises(
        SourceError, match=r"__date_folder_partition__ needs connection.configure.date_folder_partitions"
    ):
        read(file_source(tmp_path, "parquet", watermark_columns=[DFP]))


def test_an_unreadable_stored_folder_bound_is_an_error(tmp_path: Path) -> None:
    land(tmp_path, "2026/01/01", 1)
    source = file_source(tmp_path, "parquet", configure=DAILY, watermark_columns=[DFP])
    with pytest.raises(SourceError, match=r"bound 'yesterday' is not an ISO date.*fix or delete the stored watermark"):
        read(source, {DFP: "yesterday"})


def test_hive_style_date_folders_become_typed_columns_with_hive_partitioning(tmp_path: Path) -> None:
    pattern = {"date_folder_partitions": "year={year}/month={month}", "use_hive_partitioning": True}
    source = file_source(tmp_path, "parquet", configure=pattern, watermark_columns=[DFP])
    land(tmp_path, "year=2025/month=12", 1)
    land(tmp_path, "year=2026/month=01", 2)
    result = read_ok(source, {DFP: "2026-01-01T00:00:00"})
    assert result.data.select("id", "year", "month").to_dicts() == [{"id": 2, "year": 2026, "month": 1}]
    assert result.data.schema["month"] == pl.Int32  # Spark's partition type for "01"
    assert result.runtime.watermark_after == {DFP: "2026-01-01T00:00:00"}
