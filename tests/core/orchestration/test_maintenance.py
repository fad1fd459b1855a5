"""Maintenance: one target per destination, real compaction and vacuum of Delta tables (DataCoolie O-17 … O-19)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
from deltalake import DeltaTable
from polars.testing import assert_frame_equal

from datacoolie_core.errors import CommitConflictError, DestinationError, TerminalError
from datacoolie_core.models import Connection, DataFlow
from datacoolie_core.orchestration.maintenance import (
    MaintenanceNotSupportedError,
    maintenance_block_reason,
    run_maintenance_target,
    select_maintenance_targets,
)


def connections(tmp_path: Path) -> dict[str, Connection]:
    specs: list[dict[str, Any]] = [
        {"name": "lake", "format": "delta", "configure": {"base_path": str(tmp_path / "lake")}},
        {"name": "old_lake", "format": "delta", "is_active": False, "configure": {"base_path": str(tmp_path / "old")}},
        {"name": "files", "format": "parquet", "configure": {"base_path": str(tmp_path / "files")}},
    ]
    return {s["name"]: Connection.model_validate(s) for s in specs}


def flow(tmp_path: Path, name: str, table: str, *, connection: str = "lake", **extra: Any) -> DataFlow:
    return DataFlow.model_validate(
        {
            "name": name,
            "dataflow_id": extra.pop("dataflow_id", None),
            "source": {"connection_name": "files", "table": name},
            "destination": {"connection_name": connection, "table": table},
            **extra,
        },
        context={"connections": connections(tmp_path)},
    )


def ids(dataflows: list[DataFlow]) -> list[str]:
    return [str(d.dataflow_id) for d in dataflows]


# --- target selection -------------------------------------------------------------------------


def test_fan_in_is_maintained_once_by_the_lowest_dataflow_id(tmp_path: Path) -> None:
    a = flow(tmp_path, "orders_web", "orders", dataflow_id="b")
    b = flow(tmp_path, "orders_shop", "orders", dataflow_id="a")
    c = flow(tmp_path, "customers", "customers", dataflow_id="c")

    for candidates in ([a, b, c], [c, b, a]):
        representatives, blocked = select_maintenance_targets(candidates)
        assert (ids(representatives), blocked) == (["a", "c"], [])


def test_blocked_candidates_never_displace_an_active_representative(tmp_path: Path) -> None:
    inactive = flow(tmp_path, "orders_old", "orders", dataflow_id="a", is_active=False)
    active = flow(tmp_path, "orders", "orders", dataflow_id="b")
    retired = flow(tmp_path, "legacy", "legacy", connection="old_lake", dataflow_id="c")

    representatives, blocked = select_maintenance_targets([retired, active, inactive])

    assert ids(representatives) == ["b"]
    assert ids(blocked) == ["a", "c"]
    assert maintenance_block_reason(inactive) == "dataflow 'orders_old' is inactive"
    assert maintenance_block_reason(retired) == "destination connection 'old_lake' is inactive"
    assert maintenance_block_reason(active) is None


# --- running a target -------------------------------------------------------------------------


def table_path(dataflow: DataFlow) -> str:
    path = dataflow.destination.path
    assert path is not None
    return path


def parquet_files(path: str) -> set[str]:
    return {p.name for p in Path(path).glob("*.parquet")}


def test_compact_rewrites_small_files_into_one(tmp_path: Path) -> None:
    dataflow = flow(tmp_path, "orders", "orders")
    path = table_path(dataflow)
    for i in range(3):
        pl.DataFrame({"order_id": [i], "amount": [i * 1.5]}).write_delta(path, mode="append")
    before = pl.read_delta(path).sort("order_id")

    runtime = run_maintenance_target(
        dataflow, do_compact=True, do_cleanup=False, retention_hours=168, dataflow_run_id="run-1"
    )

    assert (runtime.status, runtime.operation_type, runtime.dataflow_run_id) == ("succeeded", "maintenance", "run-1")
    assert (runtime.destination.files_added, runtime.destination.files_removed) == (1, 3)
    assert runtime.destination.bytes_added > 0
    assert runtime.destination.bytes_removed > 0
    assert runtime.destination.operation_type == "compact"
    assert len(DeltaTable(path).file_uris()) == 1
    assert_frame_equal(pl.read_delta(path).sort("order_id"), before)


def test_cleanup_really_deletes_files_older_than_the_retention(tmp_path: Path) -> None:
    dataflow = flow(tmp_path, "orders", "orders")
    path = table_path(dataflow)
    # load 1 — initial; loads 2 and 3 — overwrites leave the earlier files unreferenced
    for load in range(3):
        pl.DataFrame({"order_id": [1, 2], "load": [load, load]}).write_delta(path, mode="overwrite")
    live = {Path(uri).name for uri in DeltaTable(path).file_uris()}
    stale = parquet_files(path) - live
    stale_bytes = sum((Path(path) / name).stat().st_size for name in stale)
    assert len(stale) == 2

    runtime = run_maintenance_target(dataflow, do_compact=False, do_cleanup=True, retention_hours=0)

    assert runtime.status == "succeeded"
    assert parquet_files(path) == live  # the stale files are gone from disk
    assert (runtime.destination.files_removed, runtime.destination.bytes_removed) == (2, stale_bytes)
    assert "cleanup" in runtime.phase_seconds
    assert_frame_equal(
        pl.read_delta(path).sort("order_id"), pl.DataFrame({"order_id": [1, 2], "load": [2, 2]}), check_dtypes=False
    )


def test_cleanup_keeps_files_younger_than_the_retention(tmp_path: Path) -> None:
    dataflow = flow(tmp_path, "orders", "orders")
    path = table_path(dataflow)
    for load in range(2):
        pl.DataFrame({"order_id": [load]}).write_delta(path, mode="overwrite")
    files = parquet_files(path)

    runtime = run_maintenance_target(dataflow, do_compact=True, do_cleanup=True, retention_hours=168)

    assert (runtime.status, runtime.destination.files_removed) == ("succeeded", 0)
    assert parquet_files(path) == files


def test_a_missing_table_is_skipped(tmp_path: Path) -> None:
    runtime = run_maintenance_target(
        flow(tmp_path, "orders", "orders"), do_compact=True, do_cleanup=True, retention_hours=0
    )
    assert (runtime.status, runtime.exception) == ("skipped", None)
    assert runtime.skip_reason is not None
    assert "does not exist yet" in runtime.skip_reason


def test_nothing_requested_is_skipped(tmp_path: Path) -> None:
    dataflow = flow(tmp_path, "orders", "orders")
    pl.DataFrame({"order_id": [1]}).write_delta(table_path(dataflow))
    runtime = run_maintenance_target(dataflow, do_compact=False, do_cleanup=False, retention_hours=0)
    assert runtime.status == "skipped"


def test_flat_file_destinations_fail_as_unsupported(tmp_path: Path) -> None:
    runtime = run_maintenance_target(
        flow(tmp_path, "orders", "orders", connection="files"), do_compact=True, do_cleanup=True, retention_hours=0
    )
    assert runtime.status == "failed"
    assert isinstance(runtime.exception, MaintenanceNotSupportedError)
    assert isinstance(runtime.exception, TerminalError)
    assert runtime.error_message is not None
    assert "maintenance is not supported for parquet destinations" in runtime.error_message


def test_a_failed_operation_fails_the_target_and_the_other_still_runs(tmp_path: Path) -> None:
    dataflow = flow(tmp_path, "orders", "orders")
    path = table_path(dataflow)
    for i in range(2):
        pl.DataFrame({"order_id": [i]}).write_delta(path, mode="append")
    (Path(path) / Path(DeltaTable(path).file_uris()[0]).name).unlink()  # a referenced data file is lost

    runtime = run_maintenance_target(dataflow, do_compact=True, do_cleanup=True, retention_hours=0)

    assert runtime.status == "failed"
    assert isinstance(runtime.exception, DestinationError)
    assert not isinstance(runtime.exception, CommitConflictError)
    assert runtime.error_message is not None
    assert "compact failed" in runtime.error_message
    assert set(runtime.phase_seconds) == {"compact", "cleanup"}
