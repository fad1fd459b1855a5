"""A replay's aggregate record counts what its chunks committed, checked against the Delta log.

The independent reference is the table's own history (``DeltaTable.history()``): the
``operationMetrics`` of every commit the replay made (``num_added_rows`` of a write,
``num_target_rows_inserted/updated/deleted`` of a MERGE). Every load strategy a partitioned table
may use is replayed twice over a partitioned table: load 1 creates it, load 2 updates two orders
and adds one.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from deltalake import DeltaTable

from datacoolie_core import ReplayConfig
from datacoolie_core.models.runtime import DataFlowRuntimeInfo
from datacoolie_core.orchestration.driver import DataCoolieDriver
from tests.core.orchestration.driver_support import Lake, function_source

QUARTER = ReplayConfig(start="2025-01-01", end="2025-04-01", chunk_interval={"months": 1})
MONTH = {"column": "order_month", "expression": "DATE_FORMAT(updated_at, 'yyyy-MM')"}
STRATEGIES = {
    "append": {"load_type": "append"},
    "overwrite": {"load_type": "overwrite"},
    "merge_upsert": {"load_type": "merge_upsert", "merge_keys": ["order_id"]},
    "merge_overwrite": {"load_type": "merge_overwrite", "merge_keys": ["order_id"]},
    "scd2": {"load_type": "scd2", "merge_keys": ["order_id"], "configure": {"scd2_effective_column": "updated_at"}},
}


def orders(amounts: list[float], days: list[int]) -> pl.DataFrame:
    """Orders 1..n, order ``i`` in month ``i`` (the fourth in March again)."""
    months = [1, 2, 3, 3][: len(amounts)]
    return pl.DataFrame(
        {
            "order_id": list(range(1, len(amounts) + 1)),
            "amount": amounts,
            "updated_at": [datetime(2025, m, d) for m, d in zip(months, days, strict=True)],
        },
        schema_overrides={"updated_at": pl.Datetime("us")},
    )


def history_counts(path: Path, after: int) -> dict[str, int]:
    """Rows inserted / updated / deleted by the commits after version ``after``, from the Delta log."""
    totals = {"inserted": 0, "updated": 0, "deleted": 0}
    for entry in DeltaTable(str(path)).history():
        if entry["version"] <= after:
            continue
        metrics: dict[str, Any] = entry.get("operationMetrics") or {}
        totals["inserted"] += int(metrics.get("num_target_rows_inserted", metrics.get("num_added_rows", 0)))
        totals["updated"] += int(metrics.get("num_target_rows_updated", 0))
        totals["deleted"] += int(metrics.get("num_target_rows_deleted", 0))
    return totals


def reported(runtime: DataFlowRuntimeInfo) -> dict[str, int]:
    d = runtime.destination
    return {"inserted": d.rows_inserted, "updated": d.rows_updated, "deleted": d.rows_deleted}


@pytest.mark.parametrize("destination", STRATEGIES.values(), ids=STRATEGIES.keys())
def test_a_replay_reports_the_rows_its_commits_wrote(tmp_path: Path, destination: dict[str, Any]) -> None:
    orders_file = tmp_path / "orders.parquet"
    lake = Lake(tmp_path)
    source = function_source("orders_from_file", orders_file=str(orders_file)) | {"watermark_columns": ["updated_at"]}
    lake.add("orders", source=source, destination=destination | {"partition_columns": [MONTH]})
    lake.write()
    table = tmp_path / "lake" / "orders"

    with DataCoolieDriver(metadata_base_path=lake.metadata_path) as driver:
        # load 1 — initial: one order a month
        orders(amounts=[10.0, 20.0, 30.0], days=[5, 10, 15]).write_parquet(orders_file)
        (first,) = driver.run_replay(driver.load_dataflows(), QUARTER).runtimes
        assert first.status == "succeeded"
        assert reported(first) == history_counts(table, after=-1)
        assert first.destination.rows_inserted == 3
        assert first.destination.table_version == DeltaTable(str(table)).version()

        # load 2 — orders 1 and 2 changed (later updated_at, same month), order 4 is new in March
        version = DeltaTable(str(table)).version()
        orders(amounts=[11.0, 21.0, 30.0, 40.0], days=[6, 11, 15, 20]).write_parquet(orders_file)
        (second,) = driver.run_replay(driver.load_dataflows(), QUARTER).runtimes
        assert second.status == "succeeded"
        assert reported(second) == history_counts(table, after=version)
        assert second.destination.rows_inserted + second.destination.rows_updated > 0
        assert second.destination.rows_written == sum(c.destination.rows_written for c in second.chunks)
        assert second.destination.table_version == DeltaTable(str(table)).version()
