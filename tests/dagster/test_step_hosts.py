"""The steps of a stage job hand each other nothing through a local folder.

Two Dagster instances stand for two hosts: they share the run history (one SQLite store, as hosts
share PostgreSQL) and nothing else — each has its own local artifact storage, where Dagster's
default IO manager keeps step outputs. The stage job runs on the first "host" in step processes
(the multiprocess executor); its shard steps are then run again on the second, which never saw the
planning step. Each shard step computes its own share from the run's config and its mapping key,
so it runs there, and neither host's storage folder holds a step output.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
import yaml

from tests.dagster import snapshot_location
from tests.dagster.conftest import LINEAGE, REPOSITORY, land_lineage, write_metadata
from tests.dagster.test_snapshot import _absolute_base_paths

pytestmark = pytest.mark.slow

SHARDS = 2
SHARD_STEPS = [f"datacoolie_run_shard[shard_{i}]" for i in range(SHARDS)]


@pytest.fixture
def location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The lineage metadata under ``tmp_path`` (absolute base paths), landed; the location's environment."""
    monkeypatch.chdir(REPOSITORY)  # step processes import the location from the repository
    metadata = write_metadata(tmp_path, LINEAGE, edit=partial(_absolute_base_paths, tmp_path))
    land_lineage(tmp_path)
    monkeypatch.setenv("DATACOOLIE_TEST_METADATA", str(metadata))
    monkeypatch.setenv("DATACOOLIE_TEST_STATE", str(tmp_path / "state"))
    snapshot_location.defs.cache_clear()
    yield tmp_path
    snapshot_location.defs.cache_clear()


def stage_job() -> dg.JobDefinition:
    """The stage job, for ``dg.reconstructable``: a target of this module's own, because Dagster keeps
    the last job built for a target (``ReconstructableJob.get_definition`` is cached) and another
    test's run of ``snapshot_location.stage_job`` in this process would be served instead."""
    return snapshot_location.stage_job()


def host(root: Path, name: str, history: Path) -> tuple[dg.DagsterInstance, Path]:
    """A "host": an instance on the shared run history, with its own artifact storage and step logs."""
    home, storage = root / name / "dagster_home", root / name / "local"
    home.mkdir(parents=True)
    config = {
        "storage": {"sqlite": {"base_dir": str(history)}},
        "local_artifact_storage": {
            "module": "dagster._core.storage.root",
            "class": "LocalArtifactStorage",
            "config": {"base_dir": str(storage)},
        },
        "compute_logs": {
            "module": "dagster._core.storage.local_compute_log_manager",
            "class": "LocalComputeLogManager",
            "config": {"base_dir": str(storage / "logs")},
        },
        "telemetry": {"enabled": False},
    }
    (home / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return dg.DagsterInstance.from_config(str(home)), storage


def step_outputs(storage: Path) -> list[Path]:
    """Files Dagster's default IO manager wrote under a host's ``storage/<run id>/`` folders."""
    runs = storage / "storage"
    return sorted(p.relative_to(runs) for p in runs.rglob("*") if p.is_file()) if runs.exists() else []


def succeeded_steps(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    records = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_SUCCESS)
    return sorted(str(r.dagster_event.step_key) for r in records if r.dagster_event)


def bronze_rows(root: Path) -> dict[str, int]:
    tables = sorted(p.parent for p in (root / "lake" / "bronze").rglob("_delta_log"))
    return {str(t.relative_to(root / "lake")): pl.read_delta(str(t)).height for t in tables}


def test_shard_steps_run_on_a_host_that_never_saw_the_planning_step(location: Path) -> None:
    snapshot_location.stage_job()  # the code location loads
    history = location / "history"
    first, first_storage = host(location, "host_a", history)
    second, second_storage = host(location, "host_b", history)
    job = dg.reconstructable(stage_job)
    try:
        with dg.execute_job(job, instance=first, run_config={"job_num": SHARDS}) as planned:
            assert planned.success
            planned_id = planned.run_id
        assert succeeded_steps(first, planned_id) == sorted(["datacoolie_shards", *SHARD_STEPS])
        loaded = bronze_rows(location)
        assert loaded == {"bronze/crm/customers": 2, "bronze/sales/orders": 3}
        # nothing was handed from the planning step to the shard steps through the host's folder
        assert step_outputs(first_storage) == []

        # the shard steps again, on the other host: its storage folder is empty
        again = dg.ReexecutionOptions(parent_run_id=planned_id, step_selection=SHARD_STEPS)
        with dg.execute_job(job, instance=second, reexecution_options=again) as rerun:
            failures = [e.message for e in rerun.all_events if e.is_step_failure]
            assert rerun.success, failures
            rerun_id = rerun.run_id
        assert succeeded_steps(second, rerun_id) == SHARD_STEPS
        assert step_outputs(second_storage) == []
        # the watermarks the first run committed hold: the rerun appended nothing twice
        assert bronze_rows(location) == loaded
    finally:
        first.dispose()
        second.dispose()
