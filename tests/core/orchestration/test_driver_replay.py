"""``DataCoolieDriver.run_replay`` end to end (seed ``003_…txt``): chunks, run ids, watermark policy."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from datacoolie_core import DataCoolieRunConfig, ReplayConfig
from datacoolie_core.orchestration.driver import DataCoolieDriver
from tests.core.orchestration.driver_support import Lake, dataflow_rows, function_source

QUARTER = ReplayConfig(start="2025-01-01", end="2025-04-01", chunk_interval={"months": 1})
UPSERT = {"load_type": "merge_upsert", "merge_keys": ["order_id"]}


def orders_lake(tmp_path: Path, function: str = "orders", **destination: Any) -> Lake:
    lake = Lake(tmp_path)
    source = function_source(function) | {"watermark_columns": ["updated_at"]}
    lake.add("orders", source=source, destination=destination)
    lake.write()
    return lake


def watermark_file(lake: Lake) -> Path:
    (path,) = (lake.metadata_path.parent / "watermarks").glob("*/watermark_value.json")
    return path


def stored(driver: DataCoolieDriver) -> datetime:
    (dataflow,) = driver.load_dataflows()
    value = driver.watermark_manager.get_watermark(str(dataflow.dataflow_id))
    assert value is not None
    return value["updated_at"].replace(tzinfo=None)


def test_each_monthly_chunk_writes_its_rows_under_its_own_run_id(tmp_path: Path) -> None:
    lake = orders_lake(tmp_path)

    with DataCoolieDriver(metadata_base_path=lake.metadata_path, log_base_path=lake.logs) as driver:
        result = driver.run_replay(driver.load_dataflows(), QUARTER)

    assert (result.total, result.succeeded, result.failed) == (1, 1, 0)  # the outer result counts dataflows
    (outer,) = result.runtimes
    assert [(c.status, c.replay_chunk["key"], c.destination.rows_written) for c in outer.chunks] == [  # type: ignore[index]
        ("succeeded", "2025-01-01", 1),
        ("succeeded", "2025-02-01", 1),
        ("succeeded", "2025-03-01", 1),
    ]
    table = lake.table("orders")
    assert table["__dataflow_run_id"].to_list() == [c.dataflow_run_id for c in outer.chunks]
    assert outer.dataflow_run_id not in table["__dataflow_run_id"].to_list()
    rows = sorted(dataflow_rows(lake.logs), key=lambda r: r["replay_chunk"]["index"])
    assert [(r["operation_type"], r["replay_chunk"]["start"], r["replay_chunk"]["end"]) for r in rows] == [
        ("replay", "2025-01-01", "2025-02-01"),
        ("replay", "2025-02-01", "2025-03-01"),
        ("replay", "2025-03-01", "2025-04-01"),
    ]
    assert [r["dataflow_run_id"] for r in rows] == [c.dataflow_run_id for c in outer.chunks]
    # save_watermark=False by default
    assert not list((lake.metadata_path.parent / "watermarks").glob("*/watermark_value.json"))


def test_save_watermark_false_leaves_the_stored_watermark_untouched(tmp_path: Path) -> None:
    lake = orders_lake(tmp_path, **UPSERT)
    with DataCoolieDriver(metadata_base_path=lake.metadata_path) as driver:
        driver.run()  # the production run stores 2025-03-15
        before = watermark_file(lake).read_bytes()
        result = driver.run_replay(driver.load_dataflows(), QUARTER)
        assert stored(driver) == datetime(2025, 3, 15)

    assert result.succeeded == 1
    assert watermark_file(lake).read_bytes() == before


def test_save_watermark_true_saves_the_observed_max_monotonically_and_never_checkpoints(tmp_path: Path) -> None:
    lake = orders_lake(tmp_path, **UPSERT)
    january_february = ReplayConfig(start="2025-01-01", end="2025-03-01", chunk_interval={"months": 1})
    with DataCoolieDriver(metadata_base_path=lake.metadata_path) as driver:
        (dataflow,) = driver.load_dataflows()
        driver.watermark_manager.save_watermark(str(dataflow.dataflow_id), {"updated_at": datetime(2025, 2, 20)})

        # replay 1 — January and February: the observed maxima are below the stored value
        first = driver.run_replay([dataflow], january_february.model_copy(update={"save_watermark": True}))
        assert (first.succeeded, len(first.runtimes[0].chunks)) == (1, 2)
        assert stored(driver) == datetime(2025, 2, 20)  # never moves backward

        # replay 2 — the quarter: March's observation advances it
        second = driver.run_replay([dataflow], QUARTER.model_copy(update={"save_watermark": True}))
        assert stored(driver) == datetime(2025, 3, 15)

        # replay 3 — the identical invocation runs every chunk again (no checkpoint)
        third = driver.run_replay([dataflow], QUARTER.model_copy(update={"save_watermark": True}))

    for result in (second, third):
        assert [c.status for c in result.runtimes[0].chunks] == ["succeeded"] * 3
        assert [c.destination.rows_written for c in result.runtimes[0].chunks] == [1, 1, 1]
    assert lake.table("orders")["order_id"].to_list() == [1, 2, 3]  # merge_upsert: reconciled, no duplicates
    assert lake.table("orders")["__dataflow_run_id"].to_list() == [c.dataflow_run_id for c in third.runtimes[0].chunks]


def test_a_failed_chunk_stops_its_dataflow_but_not_the_others(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    watermark = {"watermark_columns": ["updated_at"]}
    lake.add("fragile", source=function_source("failing_in_march") | watermark)
    lake.add("sturdy", source=function_source("orders") | watermark)
    lake.write()
    four_months = ReplayConfig(start="2025-01-01", end="2025-05-01", chunk_interval={"months": 1})

    with DataCoolieDriver(metadata_base_path=lake.metadata_path, log_base_path=lake.logs) as driver:
        result = driver.run_replay(driver.load_dataflows(), four_months)

    assert (result.total, result.succeeded, result.failed) == (2, 1, 1)
    fragile, sturdy = sorted(result.runtimes, key=lambda r: r.dataflow_name)
    assert [c.status for c in fragile.chunks] == ["succeeded", "succeeded", "failed"]  # April never ran
    assert "the March extract is corrupt" in (fragile.error_message or "")
    assert [c.status for c in sturdy.chunks] == ["succeeded", "succeeded", "succeeded", "skipped"]
    assert lake.table("fragile")["order_id"].to_list() == [1, 2]
    assert lake.table("sturdy")["order_id"].to_list() == [1, 2, 3]
    assert len(dataflow_rows(lake.logs)) == 3 + 4  # one row per chunk that ran


def test_replay_skips_an_inactive_dataflow_without_starting_a_chunk(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.add("retired", is_active=False, source=function_source("orders") | {"watermark_columns": ["updated_at"]})
    lake.write()

    with DataCoolieDriver(metadata_base_path=lake.metadata_path) as driver:
        result = driver.run_replay(driver.load_dataflows(active_only=False), QUARTER)

    (outer,) = result.runtimes
    assert (result.total, result.skipped, outer.skip_reason, outer.chunks) == (1, 1, "dataflow is inactive", [])
    assert not lake.has_table("retired")


@pytest.mark.parametrize(
    ("replay", "expected"),
    [
        (QUARTER, {"with_watermark": "skipped", "without_watermark": "failed"}),
        (
            QUARTER.model_copy(update={"chunk_column": "updated_at"}),
            {"with_watermark": "skipped", "without_watermark": "skipped"},
        ),
    ],
    ids=["chunk-column-missing", "chunk-column-given"],
)
def test_a_dry_run_replay_validates_the_chunk_column(
    tmp_path: Path, replay: ReplayConfig, expected: dict[str, str]
) -> None:
    lake = Lake(tmp_path)
    lake.add("with_watermark", source=function_source("orders") | {"watermark_columns": ["updated_at"]})
    lake.add("without_watermark")
    lake.write()

    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=DataCoolieRunConfig(dry_run=True)) as driver:
        result = driver.run_replay(driver.load_dataflows(), replay)

    assert {r.dataflow_name: r.status for r in result.runtimes} == expected
    assert result.failed == list(expected.values()).count("failed")
    assert not (tmp_path / "lake").exists()


def test_chunk_rows_carry_only_their_chunk(tmp_path: Path) -> None:
    lake = orders_lake(tmp_path)
    with DataCoolieDriver(metadata_base_path=lake.metadata_path) as driver:
        result = driver.run_replay(driver.load_dataflows(), QUARTER)
    table = lake.table("orders")
    months = table.select(pl.col("updated_at").dt.month()).to_series().to_list()
    keys = [c.replay_chunk["key"] for c in result.runtimes[0].chunks]  # type: ignore[index]
    assert [f"2025-{m:02d}-01" for m in months] == keys
