"""``DataCoolieDriver.run_maintenance`` end to end: one target per table, real OPTIMIZE and VACUUM."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl
from deltalake import DeltaTable
from polars.testing import assert_frame_equal

from datacoolie_core import DataCoolieRunConfig
from datacoolie_core.orchestration.driver import DataCoolieDriver
from tests.core.orchestration.driver_support import Lake, dataflow_rows, orders_frame

BUSINESS = ["order_id", "amount", "updated_at"]
RETRY = DataCoolieRunConfig(retry_count=2, retry_delay=0)
"""The fan-in writers of ``orders`` may race to create the table: a conflict is retried."""


def maintenance_lake(tmp_path: Path) -> Lake:
    lake = Lake(tmp_path)
    lake.connections += [
        {"name": "lake2", "format": "delta", "configure": {"base_path": str(tmp_path / "lake2")}},
        {"name": "files", "format": "parquet", "configure": {"base_path": str(tmp_path / "files")}},
    ]
    lake.add("orders_web", table="orders")  # fan-in: two dataflows, one table
    lake.add("orders_shop", table="orders")
    lake.add("customers", destination={"connection_name": "lake2", "load_type": "overwrite"})
    lake.add("export", destination={"connection_name": "files"})
    lake.write()
    return lake


def parquet_files(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("*.parquet")}


def test_a_fan_in_table_is_one_maintenance_target(tmp_path: Path) -> None:
    lake = maintenance_lake(tmp_path)
    with DataCoolieDriver(metadata_base_path=lake.metadata_path, log_base_path=lake.logs, config=RETRY) as driver:
        assert driver.run().succeeded == 4
        result = driver.run_maintenance(do_cleanup=False)

    # orders (fan-in) and customers; the flat-file export is no lakehouse target
    assert (result.total, result.succeeded) == (2, 2)
    names = sorted(r.dataflow_name for r in result.runtimes)
    assert names[0] == "customers"
    assert names[1] in ("orders_web", "orders_shop")
    rows = [r for r in dataflow_rows(lake.logs) if r["operation_type"] == "maintenance"]
    assert Counter(r["destination_table"] for r in rows) == Counter({"orders": 1, "customers": 1})
    (orders,) = (r for r in result.runtimes if r.dataflow_name != "customers")
    assert (orders.destination.operation_type, orders.destination.files_removed) == ("compact", 2)
    assert lake.table("orders").height == 6  # both dataflows' rows survive compaction


def test_vacuum_really_deletes_unreferenced_files(tmp_path: Path) -> None:
    lake = maintenance_lake(tmp_path)
    table = tmp_path / "lake2" / "customers"
    with DataCoolieDriver(
        metadata_base_path=lake.metadata_path, config=DataCoolieRunConfig(retention_hours=0)
    ) as driver:
        for _ in range(3):  # three overwrites leave two generations of unreferenced files
            driver.run(dataflows=[d for d in driver.load_dataflows() if d.name == "customers"])
        before = parquet_files(table)
        result = driver.run_maintenance(connection="lake2", do_compact=False)

    referenced = {Path(uri).name for uri in DeltaTable(str(table)).file_uris()}
    assert len(before) == 3
    assert len(referenced) == 1
    assert parquet_files(table) == referenced
    (runtime,) = result.runtimes
    assert (runtime.status, runtime.destination.operation_type, runtime.destination.files_removed) == (
        "succeeded",
        "cleanup",
        2,
    )
    assert_frame_equal(
        pl.read_delta(str(table)).sort("order_id").select(BUSINESS[:2]), orders_frame().select(BUSINESS[:2])
    )


def test_a_flat_file_destination_fails_clearly(tmp_path: Path) -> None:
    lake = maintenance_lake(tmp_path)
    with DataCoolieDriver(metadata_base_path=lake.metadata_path) as driver:
        export = [d for d in driver.load_dataflows() if d.name == "export"]
        result = driver.run_maintenance(dataflows=export)

    (runtime,) = result.runtimes
    assert (result.failed, runtime.error_type) == (1, "MaintenanceNotSupportedError")
    assert "maintenance is not supported for parquet destinations (table 'export')" in (runtime.error_message or "")


def test_the_connection_filter_selects_its_tables_only(tmp_path: Path) -> None:
    lake = maintenance_lake(tmp_path)
    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=RETRY) as driver:
        driver.run()
        only_lake2 = driver.run_maintenance(connection="lake2")
        both = driver.run_maintenance(connection="lake,lake2")

    assert [r.dataflow_name for r in only_lake2.runtimes] == ["customers"]
    assert both.total == 2


def test_blocked_candidates_are_skipped_and_a_dry_run_changes_nothing(tmp_path: Path) -> None:
    lake = maintenance_lake(tmp_path)
    lake.add("old_orders", table="orders", is_active=False)  # blocked: cannot displace an active owner
    lake.write()
    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=RETRY) as driver:
        driver.run()
    versions = DeltaTable(str(tmp_path / "lake" / "orders")).version()

    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=DataCoolieRunConfig(dry_run=True)) as driver:
        result = driver.run_maintenance()

    reasons = {r.dataflow_name: r.skip_reason for r in result.runtimes}
    assert reasons.pop("old_orders") == "blocked: dataflow 'old_orders' is inactive"
    assert set(reasons.values()) == {"dry run"}
    assert (result.total, result.skipped) == (3, 3)
    assert DeltaTable(str(tmp_path / "lake" / "orders")).version() == versions


def test_metadata_targets_are_sharded_across_jobs(tmp_path: Path) -> None:
    lake = maintenance_lake(tmp_path)
    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=RETRY) as driver:
        driver.run()
    maintained: Counter[str] = Counter()
    for index in range(2):
        config = DataCoolieRunConfig(job_num=2, job_index=index)
        with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=config) as driver:
            result = driver.run_maintenance(do_cleanup=False)
        maintained.update(r.dataflow_name for r in result.runtimes if r.status == "succeeded")

    assert sum(maintained.values()) == 2
    assert maintained["customers"] == 1
