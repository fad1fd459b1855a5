from __future__ import annotations

import os
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.columns import FILE_COLUMNS, FILE_MODIFICATION_TIME, FILE_NAME, FILE_PATH
from datacoolie_core.errors import SourceError
from datacoolie_core.models.dataflow import Source
from datacoolie_core.sources import ReadRange
from datacoolie_core.watermark import deserialize_watermark, serialize_watermark
from tests.core.sources.helpers import make_source, read, read_ok

T0 = datetime(2024, 1, 1, tzinfo=UTC)
HEADER = {"read_options": {"header": "true"}}


def stored(after: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the next run loads: the watermark saved as JSON and read back."""
    return deserialize_watermark(serialize_watermark(after)) if after else None


def folder_of(tmp_path: Path) -> Path:
    folder = tmp_path / "landing" / "sales" / "orders"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def file_source(tmp_path: Path, fmt: str, *, configure: dict[str, Any] | None = None, **source: Any) -> Source:
    base = {"base_path": str(tmp_path / "landing"), **(configure or {})}
    return make_source({"format": fmt, "configure": base}, schema_name="sales", table="orders", **source)


def write(folder: Path, name: str, frame: pl.DataFrame, *, minute: int) -> Path:
    """Write ``frame`` as ``name`` (format from the extension) with mtime T0 + ``minute`` minutes."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = path.suffix
    if suffix == ".parquet":
        frame.write_parquet(path)
    elif suffix == ".csv":
        frame.write_csv(path)
    elif suffix == ".jsonl":
        frame.write_ndjson(path)
    elif suffix == ".json":
        frame.write_json(path)
    elif suffix == ".avro":
        frame.write_avro(path)
    set_mtime(path, minute)
    return path


def set_mtime(path: Path, minute: int) -> None:
    ns = int((T0 + timedelta(minutes=minute)).timestamp()) * 10**9
    os.utime(path, ns=(ns, ns))


def business(result_data: pl.DataFrame) -> pl.DataFrame:
    return result_data.drop(FILE_COLUMNS)


# --- typed watermark columns across two incremental runs (F-07 / S-05) ------------------------------


def _dt(*hours: int) -> list[datetime]:
    return [datetime(2024, 1, 1, h) for h in hours]


TYPED_CASES: dict[str, tuple[pl.DataType, list[Any], list[Any], Any]] = {
    # id: (dtype, run-1 values, run-2 new values incl. one equal to run 1's max, run-1 max as stored)
    "date": (pl.Date(), [date(2024, 1, 1), date(2024, 1, 2)], [date(2024, 1, 2), date(2024, 1, 3)], date(2024, 1, 2)),
    "datetime-ms": (pl.Datetime("ms"), _dt(1, 2), _dt(2, 3), datetime(2024, 1, 1, 2)),
    "datetime-us": (pl.Datetime("us"), _dt(1, 2), _dt(2, 3), datetime(2024, 1, 1, 2)),
    "datetime-ns": (pl.Datetime("ns"), _dt(1, 2), _dt(2, 3), datetime(2024, 1, 1, 2)),
    "datetime-us-utc": (pl.Datetime("us", "UTC"), _dt(1, 2), _dt(2, 3), datetime(2024, 1, 1, 2, tzinfo=UTC)),
    "datetime-ns-utc": (pl.Datetime("ns", "UTC"), _dt(1, 2), _dt(2, 3), datetime(2024, 1, 1, 2, tzinfo=UTC)),
    "datetime-ms-amsterdam": (pl.Datetime("ms", "Europe/Amsterdam"), _dt(1, 2), _dt(2, 3),
                              datetime(2024, 1, 1, 1, tzinfo=UTC)),  # 02:00 CET
    "int64": (pl.Int64(), [1, 2], [2, 3], 2),
    "int32": (pl.Int32(), [10, 20], [20, 30], 20),
    "decimal": (pl.Decimal(10, 2), [Decimal("1.10"), Decimal("2.20")], [Decimal("2.20"), Decimal("3.30")],
                Decimal("2.20")),
    "iso-string": (pl.String(), ["2024-01-01T01:00:00", "2024-01-01T02:00:00"],
                   ["2024-01-01T02:00:00", "2024-01-01T03:00:00"], "2024-01-01T02:00:00"),
}  # fmt: skip


def _column(values: list[Any], dtype: pl.DataType) -> pl.Series:
    if isinstance(dtype, pl.Datetime) and dtype.time_zone:
        return pl.Series("wm", values, dtype=pl.Datetime(dtype.time_unit)).dt.replace_time_zone(dtype.time_zone)
    return pl.Series("wm", values, dtype=dtype)


@pytest.mark.parametrize("case", list(TYPED_CASES), ids=list(TYPED_CASES))
def test_typed_watermark_two_incremental_runs(tmp_path: Path, case: str) -> None:
    dtype, first, second, first_max = TYPED_CASES[case]
    folder = folder_of(tmp_path)
    source = file_source(tmp_path, "parquet", watermark_columns=["wm"])

    # run 1 — first run reads everything, watermark = max
    write(folder, "a.parquet", pl.DataFrame({"id": [1, 2], "wm": _column(first, dtype)}), minute=1)
    run1 = read_ok(source)
    assert run1.data["id"].to_list() == [1, 2]
    assert run1.data.schema["wm"] == dtype
    assert run1.runtime.watermark_after == {"wm": first_max}

    # run 2 — a row equal to the stored max is not re-read (strict >), the newer one is
    write(folder, "b.parquet", pl.DataFrame({"id": [3, 4], "wm": _column(second, dtype)}), minute=2)
    run2 = read_ok(source, stored(run1.runtime.watermark_after))
    expected = pl.DataFrame({"id": [4], "wm": _column(second[1:], dtype)})
    assert_frame_equal(business(run2.data), expected)
    assert run2.runtime.watermark_before == stored(run1.runtime.watermark_after)
    assert run2.runtime.rows_read == 1

    # run 3 — nothing new: skipped
    assert read(source, stored(run2.runtime.watermark_after)) is None


def test_string_watermark_of_a_0_1_7_file_against_a_datetime_column(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    write(folder, "a.parquet", pl.DataFrame({"id": [1, 2, 3], "ts": _dt(1, 2, 3)}), minute=1)
    source = file_source(tmp_path, "parquet", watermark_columns=["ts"])
    result = read_ok(source, {"ts": "2024-01-01T02:00:00"})
    assert result.data["id"].to_list() == [3]
    assert result.runtime.watermark_after == {"ts": datetime(2024, 1, 1, 3)}


def test_nanosecond_maximum_is_rounded_up_so_the_newest_row_is_not_reread(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    ts = pl.Series("ts", [1_704_067_200_123_456_789, 1_704_067_200_000_000_000]).cast(pl.Datetime("ns"))
    write(folder, "a.parquet", pl.DataFrame({"id": [1, 2], "ts": ts}), minute=1)
    source = file_source(tmp_path, "parquet", watermark_columns=["ts"])
    run1 = read_ok(source)
    assert run1.runtime.watermark_after == {"ts": datetime(2024, 1, 1, 0, 0, 0, 123457)}
    assert read(source, stored(run1.runtime.watermark_after)) is None


# --- window, filter, count ----------------------------------------------------------------------------


def test_watermark_columns_are_ored(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    frame = pl.DataFrame(
        {"id": [1, 2, 3, 4], "version": [1, 5, 1, 1], "changed": [date(2024, 1, d) for d in (1, 1, 9, 1)]}
    )
    write(folder, "a.parquet", frame, minute=1)
    source = file_source(tmp_path, "parquet", watermark_columns=["version", "CHANGED"])
    result = read_ok(source, {"version": 3, "CHANGED": date(2024, 1, 5)})
    assert result.data["id"].to_list() == [2, 3]
    assert result.runtime.watermark_after == {"version": 5, "CHANGED": date(2024, 1, 9)}


def test_filter_expression_applies_before_count_and_max(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    frame = pl.DataFrame({"id": [1, 2, 3], "status": ["ok", "ok", "draft"], "n": [1, 2, 9]})
    write(folder, "a.parquet", frame, minute=1)
    source = file_source(tmp_path, "parquet", watermark_columns=["n"], filter_expression="status = 'ok'")
    result = read_ok(source)
    assert result.data["id"].to_list() == [1, 2]
    assert result.runtime.rows_read == 2
    assert result.runtime.watermark_after == {"n": 2}  # the filtered-out row does not advance it


def test_lookback_moves_the_lower_bound_back(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    write(folder, "a.parquet", pl.DataFrame({"id": [1, 2, 3], "d": [date(2024, 1, x) for x in (5, 8, 10)]}), minute=1)
    source = file_source(tmp_path, "parquet", watermark_columns=["d"], configure={"backward": {"days": 3}})
    result = read_ok(source, {"d": date(2024, 1, 10)})
    assert result.data["id"].to_list() == [2, 3]
    assert result.runtime.watermark_effective == {"d": date(2024, 1, 7)}
    assert result.runtime.watermark_before == {"d": date(2024, 1, 10)}


def test_read_range_ignores_the_stored_watermark_and_lookback(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    write(folder, "a.parquet", pl.DataFrame({"id": [1, 2, 3, 4], "n": [1, 2, 3, 4]}), minute=1)
    source = file_source(tmp_path, "parquet", watermark_columns=["n"], configure={"backward": {"days": 3}})
    result = read_ok(source, {"n": 100}, read_range=ReadRange("n", 2, 4))
    assert result.data["id"].to_list() == [2, 3]
    assert result.runtime.watermark_effective == {"n": 2}


def test_zero_rows_after_the_window_is_skipped(tmp_path: Path) -> None:
    write(folder_of(tmp_path), "a.parquet", pl.DataFrame({"n": [1, 2]}), minute=1)
    assert read(file_source(tmp_path, "parquet", watermark_columns=["n"]), {"n": 2}) is None


def test_unknown_watermark_column_is_named(tmp_path: Path) -> None:
    write(folder_of(tmp_path), "a.parquet", pl.DataFrame({"updated_at": [1]}), minute=1)
    source = file_source(tmp_path, "parquet", watermark_columns=["updatd_at"])
    with pytest.raises(SourceError, match=r"source 'sales.orders'.*'updatd_at'.*did you mean 'updated_at'"):
        read(source)


# --- listing, lineage, pruning by modification time -----------------------------------------------


def test_lineage_columns_are_per_file_and_rows_follow_mtime_order(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    b = write(folder, "b.csv", pl.DataFrame({"id": [3]}), minute=1)
    a = write(folder, "a.csv", pl.DataFrame({"id": [1, 2]}), minute=2)
    (folder / "notes.txt").write_text("ignored")
    (folder / "_SUCCESS.csv").write_text("id\n99\n")
    result = read_ok(file_source(tmp_path, "csv", configure=HEADER))
    expected = pl.DataFrame(
        {
            "id": ["3", "1", "2"],
            FILE_NAME: ["b.csv", "a.csv", "a.csv"],
            FILE_PATH: [str(b), str(a), str(a)],
            FILE_MODIFICATION_TIME: [T0 + timedelta(minutes=m) for m in (1, 2, 2)],
        },
        schema_overrides={FILE_MODIFICATION_TIME: pl.Datetime("us", "UTC")},
    )
    assert_frame_equal(result.data, expected)
    assert result.runtime.source_action["files_read"] == [str(b), str(a)]


def test_relative_base_path_resolves_against_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(folder_of(tmp_path), "a.jsonl", pl.DataFrame({"id": [1]}), minute=1)
    monkeypatch.chdir(tmp_path)
    source = make_source(
        {"format": "jsonl", "configure": {"base_path": "landing"}}, schema_name="sales", table="orders"
    )
    result = read_ok(source)
    assert result.data[FILE_PATH].to_list() == ["landing/sales/orders/a.jsonl"]


def test_file_modification_time_watermark_prunes_files_before_reading(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    source = file_source(tmp_path, "csv", configure=HEADER, watermark_columns=["__file_modification_time"])

    # load 1 — two files
    write(folder, "a.csv", pl.DataFrame({"id": [1]}), minute=1)
    write(folder, "b.csv", pl.DataFrame({"id": [2]}), minute=2)
    run1 = read_ok(source)
    assert run1.data["id"].to_list() == ["1", "2"]
    assert run1.runtime.watermark_after == {"__file_modification_time": T0 + timedelta(minutes=2)}

    # load 2 — a new file, one with the stored mtime exactly (not newer), and a corrupt old file
    write(folder, "c.csv", pl.DataFrame({"id": [3]}), minute=3)
    write(folder, "d.csv", pl.DataFrame({"id": [4]}), minute=2)
    (folder / "old.csv").write_text('id\n"unterminated\n')
    set_mtime(folder / "old.csv", 0)
    run2 = read_ok(source, stored(run1.runtime.watermark_after))
    assert run2.data["id"].to_list() == ["3"]
    assert run2.runtime.source_action["files_read"] == [str(folder / "c.csv")]
    assert run2.runtime.source_action["files_listed"] == 5
    assert run2.runtime.watermark_after == {"__file_modification_time": T0 + timedelta(minutes=3)}

    # load 3 — nothing newer
    assert read(source, stored(run2.runtime.watermark_after)) is None


def test_file_modification_time_range(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    for minute in (1, 2, 3):
        write(folder, f"f{minute}.jsonl", pl.DataFrame({"id": [minute]}), minute=minute)
    source = file_source(tmp_path, "jsonl")
    window = ReadRange(FILE_MODIFICATION_TIME, T0 + timedelta(minutes=1), "2024-01-01T00:03:00+00:00")
    assert read_ok(source, read_range=window).data["id"].to_list() == [1, 2]


def test_empty_folder_is_skipped_and_missing_folder_is_an_error(tmp_path: Path) -> None:
    folder_of(tmp_path)
    assert read(file_source(tmp_path, "parquet")) is None
    missing = make_source({"format": "csv", "configure": {"base_path": str(tmp_path / "nope")}}, table="orders")
    with pytest.raises(SourceError, match=r"folder '.*nope/orders' does not exist.*fix base_path"):
        read(missing)


def test_hive_partitioning_reads_recursively_with_partition_columns(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    write(folder, "year=2023/part-0.parquet", pl.DataFrame({"id": [1]}), minute=1)
    write(folder, "year=2024/part-0.parquet", pl.DataFrame({"id": [2]}), minute=2)
    write(folder, "_delta_log/x.parquet", pl.DataFrame({"id": [9]}), minute=3)
    result = read_ok(file_source(tmp_path, "parquet", configure={"use_hive_partitioning": True}))
    expected = pl.DataFrame({"id": [1, 2], "year": [2023, 2024]}, schema_overrides={"year": pl.Int32})
    assert_frame_equal(business(result.data), expected)  # Spark's partition type: int
    flat = read(file_source(tmp_path, "parquet"))
    assert flat is None  # without hive partitioning the listing is not recursive


# --- formats and options --------------------------------------------------------------------------


def test_parquet_schema_drift_keeps_every_column(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    write(folder, "a.parquet", pl.DataFrame({"id": [1], "name": ["x"]}), minute=1)
    write(folder, "b.parquet", pl.DataFrame({"id": [2], "email": ["e"]}), minute=2)
    result = read_ok(file_source(tmp_path, "parquet"))
    expected = pl.DataFrame({"id": [1, 2], "name": ["x", None], "email": [None, "e"]})
    assert_frame_equal(business(result.data), expected)


def test_csv_files_are_unioned_by_column_name(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    (folder / "a.csv").write_text("id,name\n1,ann\n2,bob\n")
    (folder / "b.csv").write_text("id,name,email\n3,cy,c@x\n")
    (folder / "c.csv").write_text("email,id\nd@x,4.5\n")
    for minute, name in enumerate(("a.csv", "b.csv", "c.csv"), start=1):
        set_mtime(folder / name, minute)
    result = read_ok(file_source(tmp_path, "csv", configure=HEADER))
    expected = pl.DataFrame(
        {"id": ["1", "2", "3", "4.5"], "name": ["ann", "bob", "cy", None], "email": [None, None, "c@x", "d@x"]}
    )
    assert_frame_equal(business(result.data), expected)
    assert result.data[FILE_NAME].to_list() == ["a.csv", "a.csv", "b.csv", "c.csv"]


def test_csv_datacoolie_option_aliases(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    (folder / "a.csv").write_text("1;'a;b';2024-01-01\n2;'c';2024-01-02\n")
    options = {"sep": ";", "header": "false", "quote": "'", "inferSchema": "false"}
    result = read_ok(file_source(tmp_path, "csv", configure={"read_options": options}))
    expected = pl.DataFrame({"_c0": ["1", "2"], "_c1": ["a;b", "c"], "_c2": ["2024-01-01", "2024-01-02"]})
    assert_frame_equal(business(result.data), expected)


def test_csv_string_timestamps_compare_as_strings_across_runs(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    (folder / "a.csv").write_text("id,changed_at\n1,2024-01-01 10:00:00\n2,2024-01-01 11:00:00\n")
    source = file_source(tmp_path, "csv", configure=HEADER, watermark_columns=["changed_at"])
    run1 = read_ok(source)
    assert run1.runtime.watermark_after == {"changed_at": "2024-01-01 11:00:00"}
    (folder / "b.csv").write_text("id,changed_at\n3,2024-01-01 12:00:00\n")
    assert read_ok(source, stored(run1.runtime.watermark_after)).data["id"].to_list() == ["3"]


def test_unknown_read_option_is_an_error_with_a_suggestion(tmp_path: Path) -> None:
    write(folder_of(tmp_path), "a.csv", pl.DataFrame({"id": [1]}), minute=1)
    source = file_source(tmp_path, "csv", configure={"read_options": {"seperator": ";"}})
    with pytest.raises(SourceError, match=r"read option 'seperator'.*did you mean 'separator'"):
        read(source)


def test_bad_boolean_read_option(tmp_path: Path) -> None:
    write(folder_of(tmp_path), "a.csv", pl.DataFrame({"id": [1]}), minute=1)
    source = file_source(tmp_path, "csv", configure={"read_options": {"header": "perhaps"}})
    with pytest.raises(SourceError, match="read option 'header' must be true or false"):
        read(source)


@pytest.mark.parametrize("fmt", ["json", "jsonl", "avro", "parquet"])
def test_each_format_reads_its_files(tmp_path: Path, fmt: str) -> None:
    folder = folder_of(tmp_path)
    write(folder, f"a.{fmt}", pl.DataFrame({"id": [1, 2], "name": ["x", "y"]}), minute=1)
    write(folder, f"b.{fmt}", pl.DataFrame({"id": [3], "name": ["z"]}), minute=2)
    write(folder, "other.csv", pl.DataFrame({"id": [9]}), minute=3)
    result = read_ok(file_source(tmp_path, fmt))
    assert_frame_equal(business(result.data), pl.DataFrame({"id": [1, 2, 3], "name": ["x", "y", "z"]}))
    assert result.data[FILE_NAME].to_list() == [f"a.{fmt}", f"a.{fmt}", f"b.{fmt}"]


def test_corrupt_file_is_a_source_error_naming_it(tmp_path: Path) -> None:
    (folder_of(tmp_path) / "bad.json").write_text("{not json")
    with pytest.raises(SourceError, match=r"cannot read file '.*bad.json'"):
        read(file_source(tmp_path, "json"))


def test_jsonl_types_every_line_of_every_file_with_the_schemas_inferred_side_by_side(tmp_path: Path) -> None:
    """A key first seen late, and an integer column that turns fractional late, are typed as Spark types them."""
    folder = folder_of(tmp_path)
    early = "\n".join(f'{{"id": {i}, "n": 1}}' for i in range(150))
    (folder / "a.jsonl").write_text(early + '\n{"id": 150, "n": 2.5, "late": "x"}\n')
    (folder / "b.jsonl").write_text('{"id": 151, "n": 3}\n')
    data = read_ok(file_source(tmp_path, "jsonl")).data.sort("id")
    assert {k: data.schema[k] for k in ("id", "late", "n")} == {"id": pl.Int64, "late": pl.String, "n": pl.Float64}
    assert data.filter(pl.col("id") >= 150).select("late", "n").rows() == [("x", 2.5), (None, 3.0)]
