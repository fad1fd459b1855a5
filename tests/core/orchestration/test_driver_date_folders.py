"""Date folders end to end (S-12, D-14): the real driver reads nested date folders created between
runs into a real Delta table, replays months by folder date, and reads back what the flat-file
writer laid out under today's UTC date."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from datacoolie_core import DataCoolieRunConfig, ReplayConfig
from datacoolie_core.columns import DATE_FOLDER_PARTITION, FILE_PATH
from datacoolie_core.models.runtime import DataFlowRuntimeInfo
from datacoolie_core.orchestration.driver import DataCoolieDriver
from tests.core.orchestration.driver_support import Lake

DFP = DATE_FOLDER_PARTITION


def folder_lake(root: Path) -> Lake:
    lake = Lake(root)
    lake.connections = [
        {
            "name": "files",
            "format": "parquet",
            "configure": {"base_path": str(root / "landing"), "date_folder_partitions": "{year}/{month}/{day}"},
        },
        {"name": "lake", "format": "delta", "configure": {"base_path": str(root / "lake")}},
    ]
    lake.add(
        "orders",
        source={"connection_name": "files", "table": "orders", "watermark_columns": [DFP, "updated_at"]},
        destination={"load_type": "merge_upsert", "merge_keys": ["order_id"]},
    )
    lake.write()
    return lake


def land(lake: Lake, day: str, rows: list[tuple[int, float, int]]) -> None:
    """Orders (order_id, amount, updated_at hour of 1 Jan 2026) as one parquet file in ``orders/<day>``."""
    folder = lake.root / "landing" / "orders" / day
    folder.mkdir(parents=True, exist_ok=True)
    frame = pl.DataFrame(
        [(i, a, datetime(2026, 1, 1, h)) for i, a, h in rows],
        schema={"order_id": pl.Int64, "amount": pl.Float64, "updated_at": pl.Datetime("us")},
        orient="row",
    )
    frame.write_parquet(folder / f"part-{rows[0][0]}.parquet")


def run(lake: Lake) -> DataFlowRuntimeInfo:
    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=DataCoolieRunConfig(retry_delay=0)) as driver:
        (runtime,) = driver.run().runtimes
    assert runtime.status in ("succeeded", "skipped"), runtime.error_message
    return runtime


def stored_watermark(lake: Lake) -> dict[str, Any]:
    (path,) = (lake.metadata_path.parent / "watermarks").glob("*/watermark_value.json")
    return dict(json.loads(path.read_text(encoding="utf-8")))


def table(lake: Lake) -> list[tuple[int, float]]:
    return lake.table("orders").select("order_id", "amount").rows()


def test_incremental_runs_then_a_monthly_replay_by_folder_date(tmp_path: Path) -> None:
    lake = folder_lake(tmp_path)
    # load 1 — the last two days of January
    land(lake, "2026/01/30", [(1, 10.0, 1)])
    land(lake, "2026/01/31", [(2, 20.0, 2)])
    assert run(lake).source.rows_read == 2
    assert table(lake) == [(1, 10.0), (2, 20.0)]
    assert stored_watermark(lake)[DFP] == "2026-01-31T00:00:00"

    # load 2 — a late file in 31 January and the first day of February; 30 January is not re-listed
    land(lake, "2026/01/31", [(3, 30.0, 3)])
    land(lake, "2026/02/01", [(4, 40.0, 4)])
    land(lake, "2026/01/30", [(5, 50.0, 5)])  # too late: its folder is before the stored day
    second = run(lake)
    assert second.source.rows_read == 2  # ids 3 and 4: id 2 is re-listed but under the updated_at window
    assert table(lake) == [(1, 10.0), (2, 20.0), (3, 30.0), (4, 40.0)]
    assert stored_watermark(lake) == {
        DFP: "2026-02-01T00:00:00",
        "updated_at": {"__datetime__": "2026-01-01T04:00:00"},
    }

    # load 3 — nothing new: the stored day is read again but no row passes the window
    assert run(lake).status == "skipped"

    # replay January and February month by month on the folder date: 30 January's late file is picked up
    replay = ReplayConfig(start="2026-01-01", end="2026-03-01", chunk_interval={"months": 1})
    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=DataCoolieRunConfig(retry_delay=0)) as driver:
        (outer,) = driver.run_replay(driver.load_dataflows(), replay).runtimes
    assert [(c.status, c.source.rows_read) for c in outer.chunks] == [("succeeded", 4), ("succeeded", 1)]
    assert table(lake) == [(1, 10.0), (2, 20.0), (3, 30.0), (4, 40.0), (5, 50.0)]
    assert stored_watermark(lake)[DFP] == "2026-02-01T00:00:00"  # save_watermark=false: untouched


def test_what_the_flat_file_writer_lays_out_under_today_reads_back_by_folder_date(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    dated = {"base_path": str(tmp_path / "out"), "date_folder_partitions": "{year}/{month}/{day}"}
    lake.connections.append({"name": "dated", "format": "parquet", "configure": dated})
    lake.add("export", destination={"connection_name": "dated", "table": "orders", "load_type": "append"})
    lake.add(
        "reimport",
        stage="silver2gold",
        source={"connection_name": "dated", "table": "orders", "watermark_columns": [DFP]},
        destination={"load_type": "overwrite"},
    )
    lake.write()
    before = datetime.now(UTC)
    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=DataCoolieRunConfig(retry_delay=0)) as driver:
        assert driver.run("bronze2silver").succeeded == 1
        assert driver.run("silver2gold").succeeded == 1
    after = datetime.now(UTC)

    days = {f"{moment:%Y/%m/%d}" for moment in (before, after)}  # a run across midnight UTC may see either
    reread = lake.table("reimport")
    assert reread["order_id"].to_list() == [1, 2, 3]
    folder = str(Path(reread[FILE_PATH][0]).parent.relative_to(tmp_path / "out" / "orders"))
    assert folder in days
    stored = json.loads(next((lake.metadata_path.parent / "watermarks").glob("*/watermark_value.json")).read_text())
    assert stored == {DFP: datetime.strptime(folder, "%Y/%m/%d").isoformat()}
