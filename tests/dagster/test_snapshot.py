"""One snapshot per run: a step runs the parse its run was planned with, or fails "reload the code location"."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from datacoolie_dagster.constants import FINAL_FAILURE, METADATA_DIGEST
from datacoolie_dagster.location.snapshot import METADATA_CHANGED, file_digest, read_snapshot
from tests.dagster import snapshot_location
from tests.dagster.conftest import LINEAGE, REPOSITORY, key, land_lineage, write_metadata

CHANGED = r"metadata file .*metadata\.json changed since the code location loaded it .*: reload the code location"


def _absolute_base_paths(root: Path, document: dict[str, Any]) -> None:
    for connection in document["connections"]:
        base = connection.get("configure", {}).get("base_path", "")
        if base.startswith("./"):
            connection["configure"]["base_path"] = str(root / base)


def _rename_bronze_orders(metadata: Path) -> None:
    """The edit a user makes between load and run: the bronze orders table gets another name."""
    document = json.loads(metadata.read_text(encoding="utf-8"))
    for dataflow in document["dataflows"]:
        if dataflow["destination"].get("table") == "orders" and dataflow["stage"] == "landing2bronze":
            dataflow["destination"]["table"] = "orders_v2"
    metadata.write_text(json.dumps(document, indent=2), encoding="utf-8")


@pytest.fixture
def location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The lineage metadata under ``tmp_path`` (absolute base paths), landed; the location's environment.

    The working directory stays the repository's: step processes import the location from it.
    """
    monkeypatch.chdir(REPOSITORY)
    metadata = write_metadata(tmp_path, LINEAGE, edit=partial(_absolute_base_paths, tmp_path))
    land_lineage(tmp_path)
    monkeypatch.setenv("DATACOOLIE_TEST_METADATA", str(metadata))
    monkeypatch.setenv("DATACOOLIE_TEST_STATE", str(tmp_path / "state"))
    snapshot_location.defs.cache_clear()
    yield metadata
    snapshot_location.defs.cache_clear()


def _step_failures(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, dict[str, object]]]:
    failures = []
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        data = entry.dagster_event.step_failure_data if entry.dagster_event else None
        if data is not None and data.error is not None:
            metadata = data.user_failure_data.metadata if data.user_failure_data else {}
            failures.append((data.error.message, {k: getattr(v, "value", v) for k, v in metadata.items()}))
    return failures


def _tables(lake: Path) -> list[str]:
    return sorted(str(p.parent.relative_to(lake)) for p in (lake / "lake").rglob("_delta_log"))


def test_the_digest_is_of_the_bytes_parsed(tmp_path: Path) -> None:
    metadata = write_metadata(tmp_path, LINEAGE)
    snapshot = read_snapshot(metadata)
    assert snapshot.digest == file_digest(metadata)
    assert len(snapshot.dataflows) == 6
    _rename_bronze_orders(metadata)
    assert read_snapshot(metadata).digest != snapshot.digest


def test_every_op_that_writes_carries_the_digest(location: Path) -> None:
    defs = snapshot_location.defs()
    digest = file_digest(location)
    jobs = ("datacoolie_landing2bronze", "datacoolie_all_stages", "datacoolie_maintenance")
    job_ops = [op for job in jobs for op in defs.resolve_job_def(job).all_node_defs]
    asset_ops = [a.op for a in defs.resolve_asset_graph().assets_defs if a.is_executable]
    assert job_ops
    assert asset_ops
    assert {op.tags.get(METADATA_DIGEST) for op in [*job_ops, *asset_ops]} == {digest}


@pytest.mark.slow
def test_a_stage_run_fails_when_the_file_changed_since_load_and_writes_nothing(location: Path) -> None:
    snapshot_location.stage_job()  # the code location loads
    _rename_bronze_orders(location)  # edited before the run: each step process parses the new file
    with dg.instance_for_test() as instance:
        result = dg.execute_job(dg.reconstructable(snapshot_location.stage_job), instance=instance)
        assert not result.success
        ((message, metadata),) = _step_failures(instance, result.run_id)
        assert instance.all_logs(result.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION) == []
    assert re.search(CHANGED, message), message
    assert metadata == {FINAL_FAILURE: METADATA_CHANGED}
    assert _tables(location.parent) == []


@pytest.mark.slow
def test_an_asset_run_fails_when_the_file_changed_since_load_and_writes_nothing(location: Path) -> None:
    snapshot_location.asset_job()
    _rename_bronze_orders(location)
    with dg.instance_for_test() as instance:
        result = dg.execute_job(
            dg.reconstructable(snapshot_location.asset_job),
            instance=instance,
            asset_selection=[key("bronze/crm/customers")],
        )
        assert not result.success
        ((message, metadata),) = _step_failures(instance, result.run_id)
    assert re.search(CHANGED, message), message
    assert metadata == {FINAL_FAILURE: METADATA_CHANGED}
    assert _tables(location.parent) == []


@pytest.mark.slow
def test_an_unchanged_file_runs_in_step_processes(location: Path) -> None:
    snapshot_location.stage_job()
    with dg.instance_for_test() as instance:
        result = dg.execute_job(dg.reconstructable(snapshot_location.stage_job), instance=instance)
        assert result.success
    assert _tables(location.parent) == ["lake/bronze/crm/customers", "lake/bronze/sales/orders"]


def test_in_the_loading_process_a_run_uses_the_loaded_parse(location: Path) -> None:
    job = snapshot_location.stage_job()
    _rename_bronze_orders(location)  # one parse per process: the run never reads the edited file
    with dg.instance_for_test() as instance:
        assert job.execute_in_process(instance=instance).success
    assert _tables(location.parent) == ["lake/bronze/crm/customers", "lake/bronze/sales/orders"]
