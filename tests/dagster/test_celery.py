"""Dagster's Celery executor end to end: a real Redis broker, PostgreSQL for the Dagster instance,
two ``dagster-celery`` worker processes with their own working directories and DAGSTER_HOMEs, and a
stage of 40 dataflows fanned out over 4 shard steps.

The workers share only the shared folder (the lake, the state store, Dagster's step-output folder)
and PostgreSQL. One run goes through untouched; in the other, a worker is SIGKILLed while it is
inside a shard step that has written some of its tables: the broker redelivers the unacknowledged
task (``task_acks_late`` + ``visibility_timeout``, deploy/celery/worker.yaml), the other worker runs
the step again, and every table holds its source rows exactly once.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest
import yaml

from datacoolie_core import FileProvider
from datacoolie_core.orchestration.distributor import JobDistributor
from tests.dagster.celery_support import Worker, celery_workers
from tests.dagster.cli_support import BIN, REPOSITORY
from tests.support.redis import redis_url

pytestmark = [pytest.mark.slow, pytest.mark.celery, pytest.mark.redis, pytest.mark.postgres]

DATAFLOWS = 40
SHARDS = 4
ROWS = 30
STAGE = "landing2bronze"
LOCATION = "tests.dagster.celery_location"
VISIBILITY_TIMEOUT = 30
"""Seconds before Redis hands an unacknowledged task to another worker: longer than a shard step here."""
RUN_TIMEOUT = 600.0


@pytest.fixture(scope="module")
def broker() -> Iterator[str]:
    with redis_url() as url:
        yield url


@dataclass(frozen=True)
class Deployment:
    root: Path
    shared: Path
    env: dict[str, str]

    @property
    def metadata(self) -> Path:
        return self.shared / "metadata.json"

    def table(self, index: int) -> Path:
        return self.shared / "lake" / "bronze" / f"t_{index:02d}"

    def source(self, index: int) -> pl.DataFrame:
        return pl.read_parquet(self.shared / "lake" / "landing" / f"s_{index:02d}" / "batch_001.parquet")

    def shard_tables(self, shard: int) -> list[Path]:
        provider = FileProvider(self.metadata)
        provider.initialize()
        try:
            mine = JobDistributor(job_num=SHARDS, job_index=shard).select(provider.get_dataflows(stage=STAGE))
        finally:
            provider.close()
        return [self.table(int(str(d.name).removeprefix("df_"))) for d in mine]


def write_stage(shared: Path) -> Path:
    """40 append dataflows with an ``updated_at`` watermark, each from its own landing folder; absolute paths."""
    lake = shared / "lake"
    connections = [
        {"name": "landing", "connection_type": "file", "format": "parquet", "configure": {"base_path": str(lake / "landing")}},
        {"name": "bronze", "connection_type": "lakehouse", "format": "delta", "configure": {"base_path": str(lake / "bronze")}},
    ]  # fmt: skip
    dataflows = []
    for i in range(DATAFLOWS):
        start = datetime(2024, 1, 1) + timedelta(days=i)
        frame = pl.DataFrame(
            {
                "id": list(range(i * 1000, i * 1000 + ROWS)),
                "value": [float(n) for n in range(ROWS)],
                "updated_at": [start + timedelta(minutes=n) for n in range(ROWS)],
            }
        )
        folder = lake / "landing" / f"s_{i:02d}"
        folder.mkdir(parents=True)
        frame.write_parquet(folder / "batch_001.parquet")
        dataflows.append(
            {
                "name": f"df_{i:02d}",
                "stage": STAGE,
                "source": {"connection_name": "landing", "table": f"s_{i:02d}", "watermark_columns": ["updated_at"]},
                "destination": {"connection_name": "bronze", "table": f"t_{i:02d}", "load_type": "append"},
            }
        )
    path = shared / "metadata.json"
    path.write_text(json.dumps({"connections": connections, "dataflows": dataflows}, indent=1), encoding="utf-8")
    return path


def deploy(root: Path, broker: str, database: dict[str, str], db: int) -> Deployment:
    """The shared folder, the executor/worker config (deploy/celery/worker.yaml, a short visibility
    timeout) and the environment every process gets; Redis databases ``db`` and ``db + 1``."""
    shared = root / "shared"
    shared.mkdir()
    write_stage(shared)
    config = yaml.safe_load((REPOSITORY / "deploy" / "celery" / "worker.yaml").read_text(encoding="utf-8"))
    config["execution"]["config"]["config_source"]["broker_transport_options"] |= {
        "visibility_timeout": VISIBILITY_TIMEOUT,
        "unacked_restore_interval": 1,
    }
    (root / "worker.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    env = {
        **database,
        "DATACOOLIE_CELERY_BROKER": f"{broker}/{db}",
        "DATACOOLIE_CELERY_BACKEND": f"{broker}/{db + 1}",
        "DATACOOLIE_EXECUTOR_CONFIG": str(root / "worker.yaml"),
        "DATACOOLIE_SHARED_STORAGE": str(shared / "dagster"),
        "DATACOOLIE_TEST_METADATA": str(shared / "metadata.json"),
        "DATACOOLIE_TEST_STATE": str(shared / "state"),
    }
    home = root / "coordinator_home"
    home.mkdir()
    (home / "dagster.yaml").write_bytes((REPOSITORY / "deploy" / "celery" / "dagster.yaml").read_bytes())
    return Deployment(root, shared, env)


def process_env(deployment: Deployment) -> dict[str, str]:
    """A worker's environment: the deployment's, the repository importable, the venv's ``celery`` on PATH."""
    path = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, **deployment.env, "PYTHONPATH": str(REPOSITORY), "PATH": path}


@pytest.fixture
def coordinator(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Runs the stage job in this process (the run's coordinator) with the deployment's environment."""
    started: list[dg.DagsterInstance] = []

    def run(deployment: Deployment, on_instance: Any = None) -> dg.ExecuteJobResult:
        for name, value in deployment.env.items():
            monkeypatch.setenv(name, value)
        sys.modules.pop(LOCATION, None)  # the location reads the environment at import
        location = __import__(LOCATION, fromlist=["stage_job"])
        instance = dg.DagsterInstance.from_config(str(deployment.root / "coordinator_home"))
        started.append(instance)
        if on_instance is not None:
            on_instance(instance)
        return dg.execute_job(
            dg.reconstructable(location.stage_job),
            instance=instance,
            run_config={"job_num": SHARDS},
            raise_on_error=False,
        )

    yield run
    for instance in started:
        instance.dispose()
    sys.modules.pop(LOCATION, None)


def worker_of_steps(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, str]]:
    """``(step key, worker)`` of every Celery task that started a step, in order (Dagster's engine events)."""
    taken = []
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        event = record.dagster_event
        metadata = event.engine_event_data.metadata if event and event.engine_event_data else {}
        if "Celery worker" in metadata:
            taken.append((str(event.step_key), str(metadata["Celery worker"].value)))
    return taken


def assert_tables_exact(deployment: Deployment) -> None:
    """Every table holds its source's rows exactly once: count and key set, per table."""
    for i in range(DATAFLOWS):
        table = pl.read_delta(str(deployment.table(i)))
        source = deployment.source(i)
        assert table.height == source.height, f"t_{i:02d}: {table.height} rows, the source has {source.height}"
        assert table["id"].n_unique() == table.height, f"t_{i:02d}: duplicated keys"
        assert set(table["id"]) == set(source["id"]), f"t_{i:02d}: keys differ from the source"


def assert_nothing_local(workers: list[Worker]) -> None:
    """The workers' own working directories hold no table and no state: all went to the shared folder."""
    for worker in workers:
        local = [p.relative_to(worker.cwd) for p in worker.cwd.rglob("*") if p.name in {"_delta_log", "watermarks"}]
        assert local == [], f"{worker.name} wrote locally: {local}"


def shard_steps(result: dg.ExecuteJobResult) -> set[str]:
    return {str(e.step_key) for e in result.all_events if e.is_step_success and "run_shard" in str(e.step_key)}


def test_a_stage_fans_out_over_two_celery_workers(
    tmp_path: Path, broker: str, postgres_database: dict[str, str], coordinator: Any
) -> None:
    deployment = deploy(tmp_path, broker, postgres_database, db=0)
    worker_yaml = tmp_path / "worker.yaml"
    with celery_workers(2, tmp_path, worker_yaml, tmp_path / "coordinator_home" / "dagster.yaml",
                        process_env(deployment), f"{broker}/0") as workers:  # fmt: skip
        result = coordinator(deployment)
        with dg.DagsterInstance.from_config(str(tmp_path / "coordinator_home")) as instance:
            taken = worker_of_steps(instance, result.run_id)

    assert result.success
    assert shard_steps(result) == {f"datacoolie_run_shard[shard_{i}]" for i in range(SHARDS)}
    assert_tables_exact(deployment)
    # both workers ran steps, and no step ran twice
    assert {w for _, w in taken} == {w.hostname for w in workers}
    assert len(taken) == len({s for s, _ in taken})
    assert_nothing_local(workers)


class KillMidStep:
    """Watches the run from a thread; SIGKILLs ``victim`` once it is inside a shard step (started on
    it, no STEP_SUCCESS yet) that has written at least one of its shard's tables: the step's work is
    partly or wholly committed, but Dagster and the broker have not seen it end."""

    def __init__(self, deployment: Deployment, victim: Worker) -> None:
        self.deployment, self.victim = deployment, victim
        self.tables = {shard: deployment.shard_tables(shard) for shard in range(SHARDS)}
        self.killed_step: str | None = None
        self.written_before_kill = 0
        self.done = threading.Event()

    def start(self, instance: dg.DagsterInstance) -> None:
        threading.Thread(target=self._watch, args=(instance,), daemon=True).start()

    def _watch(self, instance: dg.DagsterInstance) -> None:
        deadline = time.monotonic() + RUN_TIMEOUT
        while not self.done.is_set() and time.monotonic() < deadline:
            runs = instance.get_runs(limit=1)
            if runs and self._caught(instance, runs[0].run_id):
                return
            time.sleep(0.02)

    def _caught(self, instance: dg.DagsterInstance, run_id: str) -> bool:
        for step, worker in worker_of_steps(instance, run_id):
            if worker != self.victim.hostname or "[shard_" not in step:
                continue
            written = sum((t / "_delta_log").exists() for t in self.tables[int(step.rsplit("_", 1)[1].rstrip("]"))])
            if written and not self._finished(instance, run_id, step):
                self.victim.kill()
                self.killed_step, self.written_before_kill = step, written
                return True
        return False

    @staticmethod
    def _finished(instance: dg.DagsterInstance, run_id: str, step: str) -> bool:
        records = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_SUCCESS)
        return any(r.dagster_event and r.dagster_event.step_key == step for r in records)


def test_a_worker_killed_mid_step_loses_and_duplicates_no_row(
    tmp_path: Path, broker: str, postgres_database: dict[str, str], coordinator: Any
) -> None:
    deployment = deploy(tmp_path, broker, postgres_database, db=2)
    with celery_workers(2, tmp_path, tmp_path / "worker.yaml", tmp_path / "coordinator_home" / "dagster.yaml",
                        process_env(deployment), f"{broker}/2") as workers:  # fmt: skip
        victim, survivor = workers
        killer = KillMidStep(deployment, victim)
        try:
            result = coordinator(deployment, on_instance=killer.start)
        finally:
            killer.done.set()
        with dg.DagsterInstance.from_config(str(tmp_path / "coordinator_home")) as instance:
            taken = worker_of_steps(instance, result.run_id)
            starts = [str(r.dagster_event.step_key) for r in instance.all_logs(
                result.run_id, of_type=dg.DagsterEventType.STEP_START) if r.dagster_event]  # fmt: skip

    assert killer.killed_step is not None, "the victim was never caught inside a half-done shard step"
    assert victim.process.returncode is not None
    assert result.success
    # the killed step started twice: on the victim, then (redelivered by Redis) on the survivor
    assert starts.count(killer.killed_step) == 2
    assert [w for s, w in taken if s == killer.killed_step] == [victim.hostname, survivor.hostname]
    assert shard_steps(result) == {f"datacoolie_run_shard[shard_{i}]" for i in range(SHARDS)}
    # the tables the victim had committed before it died were not appended again: 0 lost, 0 duplicated
    assert killer.written_before_kill > 0
    assert_tables_exact(deployment)
    assert_nothing_local(workers)
