"""Drifting and hostile source data, end to end: no silent wrong value, no row lost, nothing half-written."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from deltalake import DeltaTable

from datacoolie_core import DataCoolieRunConfig
from datacoolie_core.models.runtime import DataFlowRuntimeInfo
from datacoolie_core.orchestration.driver import DataCoolieDriver
from tests.core.orchestration.driver_support import Lake


def parquet_lake(root: Path, **destination: Any) -> Lake:
    lake = Lake(root)
    lake.add("orders", source={"connection_name": "landing", "table": "orders", "watermark_columns": ["seq"]},
             destination=destination)  # fmt: skip
    lake.write()
    return lake


def land(lake: Lake, name: str, frame: pl.DataFrame) -> None:
    folder = lake.root / "landing" / "orders"
    folder.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(folder / name)


def run(lake: Lake) -> DataFlowRuntimeInfo:
    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=DataCoolieRunConfig(retry_delay=0)) as driver:
        (runtime,) = driver.run().runtimes
    return runtime


def stored_watermark(lake: Lake) -> dict[str, Any]:
    (path,) = (lake.metadata_path.parent / "watermarks").glob("*/watermark_value.json")
    return dict(json.loads(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    "destination",
    [{"load_type": "append"}, {"load_type": "merge_upsert", "merge_keys": ["id"]}],
    ids=["append", "merge_upsert"],
)
def test_a_double_arriving_for_a_long_column_fails_the_dataflow_and_keeps_the_watermark(
    tmp_path: Path, destination: dict[str, Any]
) -> None:
    lake = parquet_lake(tmp_path, **destination)
    # load 1 — amount is a long
    land(lake, "a.parquet", pl.DataFrame({"id": [1], "seq": [1], "amount": [10]}))
    assert run(lake).status == "succeeded"
    before = stored_watermark(lake)
    # load 2 — amount arrives as a double: 2.5 and 3.75 would be stored as 2 and 3
    land(lake, "b.parquet", pl.DataFrame({"id": [2, 3], "seq": [2, 3], "amount": [2.5, 3.75]}))
    runtime = run(lake)
    assert runtime.status == "failed"
    assert "'amount' is double in the data but long in the table" in (runtime.error_message or "")
    assert lake.table("orders", sort="id")["amount"].to_list() == [10]
    assert stored_watermark(lake) == before


def test_a_schema_hint_asks_for_the_cast(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.add("orders", source={"connection_name": "landing", "table": "orders"},
             transform={"schema_hints": [{"column_name": "amount", "data_type": "long"}]})  # fmt: skip
    lake.write()
    land(lake, "a.parquet", pl.DataFrame({"id": [1], "amount": [10]}))
    assert run(lake).status == "succeeded"
    land(lake, "b.parquet", pl.DataFrame({"id": [2], "amount": [2.0]}))
    assert run(lake).status == "succeeded"
    assert lake.table("orders", sort="id")["amount"].to_list() == [10, 10, 2]


@pytest.mark.parametrize("column", ["__created_at", "__file_name", "__dataflow_run_id", "__updated_by", "__Valid_From"])
def test_a_source_column_named_like_a_framework_column_is_refused(tmp_path: Path, column: str) -> None:
    lake = parquet_lake(tmp_path)
    land(lake, "a.parquet", pl.DataFrame({"id": [1], "seq": [1], column: ["mine"]}))
    runtime = run(lake)
    assert runtime.status == "failed"
    assert f"has column(s) '{column}' named like the framework's own columns" in (runtime.error_message or "")
    assert not lake.has_table("orders")


def test_a_function_source_with_a_framework_column_is_refused(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    source = {"connection_name": "fn", "python_function": "tests.core.orchestration.driver_support.orders_from_file",
              "configure": {"orders_file": str(tmp_path / "orders.parquet")}}  # fmt: skip
    lake.add("orders", source=source)
    lake.write()
    pl.DataFrame({"order_id": [1], "__updated_by": ["alice"]}).write_parquet(tmp_path / "orders.parquet")
    runtime = run(lake)
    assert runtime.status == "failed"
    assert "'__updated_by' named like the framework's own columns" in (runtime.error_message or "")


def test_an_earlier_framework_write_read_as_files_keeps_working(tmp_path: Path) -> None:
    lake = parquet_lake(tmp_path)
    written = pl.DataFrame({"id": [1], "seq": [1], "__created_at": ["x"], "__updated_at": ["x"],
                            "__updated_by": ["DataCoolie"], "__dataflow_run_id": ["r"], "__file_name": ["old"]})  # fmt: skip
    land(lake, "a.parquet", written)
    assert run(lake).status == "succeeded"
    table = lake.table("orders", sort="id")
    assert table["__file_name"].to_list() == ["a.parquet"]
    assert table["__updated_by"].to_list() == ["DataCoolie"]


def test_a_file_stamped_in_the_future_does_not_make_later_files_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lake = Lake(tmp_path)
    lake.add("orders", source={"connection_name": "landing", "table": "orders",
                               "watermark_columns": ["__file_modification_time"]})  # fmt: skip
    lake.write()
    # load 1 — one file now, one stamped a year ahead (a share's clock is wrong)
    land(lake, "a.parquet", pl.DataFrame({"id": [1]}))
    land(lake, "future.parquet", pl.DataFrame({"id": [2]}))
    future = lake.root / "landing" / "orders" / "future.parquet"
    ahead = time.time() + 365 * 86400
    os.utime(future, (ahead, ahead))
    with caplog.at_level("WARNING", logger="datacoolie_core.sources.file"):
        assert run(lake).status == "succeeded"
    assert "1 file(s) are modified in the future" in caplog.text
    assert "future.parquet" in caplog.text
    assert lake.table("orders", sort="id")["id"].to_list() == [1]
    stored = datetime.fromisoformat(stored_watermark(lake)["__file_modification_time"]["__datetime__"])
    assert stored < datetime.fromtimestamp(ahead, UTC) - timedelta(days=300)
    # load 2 — a file landing now is read: the watermark did not jump a year ahead
    land(lake, "b.parquet", pl.DataFrame({"id": [3]}))
    assert run(lake).status == "succeeded"
    assert lake.table("orders", sort="id")["id"].to_list() == [1, 3]
    # load 3 — once its modification time is corrected, the future file is read too, once
    os.utime(future, None)
    assert run(lake).status == "succeeded"
    assert run(lake).status == "skipped"
    assert lake.table("orders", sort="id")["id"].to_list() == [1, 2, 3]


def test_nan_and_null_watermark_values_load_once_and_are_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lake = Lake(tmp_path)
    lake.add("orders", source={"connection_name": "landing", "table": "orders", "watermark_columns": ["score"]})
    lake.write()
    # load 1 — a first run reads every row, NaN and NULL included; NaN never becomes the watermark
    land(lake, "a.parquet", pl.DataFrame({"id": [1, 2, 3], "score": [1.5, float("nan"), None]}))
    assert run(lake).status == "succeeded"
    assert stored_watermark(lake) == {"score": 1.5}
    # load 2 — new rows: a NaN row and a NULL row pass no bound (as NULL under Spark's >), and are counted
    land(lake, "b.parquet", pl.DataFrame({"id": [4, 5, 6], "score": [2.5, float("nan"), None]}))
    with caplog.at_level("WARNING", logger="datacoolie_core.sources.collect_and_watermark"):
        runtime = run(lake)
    assert runtime.status == "succeeded"
    assert runtime.source.rows_read == 1
    assert "4 source row(s) have a NULL or NaN watermark value (score)" in caplog.text
    # load 3 — nothing new: the NaN rows are not read again, and the run does not fail
    assert run(lake).status == "skipped"
    assert lake.table("orders", sort="id")["id"].to_list() == [1, 2, 3, 4]
    assert stored_watermark(lake) == {"score": 2.5}


def test_a_nan_watermark_row_is_not_read_again_and_does_not_break_later_runs(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.add("orders", source={"connection_name": "landing", "table": "orders", "watermark_columns": ["score"]})
    lake.write()
    land(lake, "a.parquet", pl.DataFrame({"id": [1, 2], "score": [1.0, float("nan")]}))
    assert run(lake).status == "succeeded"
    # NaN sorted above every number: it passed `score > 1.0` on every run, and alone it made the
    # watermark NaN, which no run could save
    assert run(lake).status == "skipped"
    land(lake, "b.parquet", pl.DataFrame({"id": [3], "score": [1.5]}))
    assert run(lake).status == "succeeded"
    assert run(lake).status == "skipped"
    assert lake.table("orders", sort="id")["id"].to_list() == [1, 2, 3]


def test_null_merge_keys_are_each_inserted_and_counted_in_the_run_result(tmp_path: Path) -> None:
    lake = parquet_lake(tmp_path, load_type="merge_upsert", merge_keys=["id"])
    # load 1 — the dedup slot keeps one row per key, the null key included (Spark's ROW_NUMBER
    # partitions nulls together): seq 3 is the null-key row written
    land(lake, "a.parquet", pl.DataFrame({"id": [1, None, None], "seq": [1, 2, 3]}))
    assert run(lake).destination.null_key_rows == 1
    # load 2 — the new null-key row matches no stored row: inserted beside it, not replacing it
    land(lake, "b.parquet", pl.DataFrame({"id": [None, 1], "seq": [4, 5]}))
    runtime = run(lake)
    assert (runtime.destination.null_key_rows, runtime.destination.rows_inserted) == (1, 1)
    assert lake.table("orders", sort="seq")["seq"].to_list() == [3, 4, 5]


@pytest.mark.parametrize(
    ("convert", "expected"), [(True, "timestamp"), (False, "timestamp_ntz")], ids=["default", "opt-out"]
)
def test_zone_less_timestamps_are_utc_by_default_and_naive_with_the_opt_out(
    tmp_path: Path, convert: bool, expected: str
) -> None:
    lake = Lake(tmp_path)
    lake.add("orders", source={"connection_name": "landing", "table": "orders"},
             transform={"configure": {"convert_timestamp_ntz": convert}})  # fmt: skip
    lake.write()
    land(lake, "a.parquet", pl.DataFrame({"id": [1], "t": [datetime(2024, 1, 1, 12)]}))
    assert run(lake).status == "succeeded"
    fields = {f.name: f.type.type for f in DeltaTable(str(tmp_path / "lake" / "orders")).schema().fields}
    assert fields["t"] == expected
    assert lake.table("orders", sort="id")["t"].dt.replace_time_zone(None).to_list() == [datetime(2024, 1, 1, 12)]
