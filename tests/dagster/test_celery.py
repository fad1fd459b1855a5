"""Dagster's Celery executor end to end: a real Redis broker, PostgreSQL for the Dagster instance,
two ``dagster-celery`` worker processes with their own working directories and DAGSTER_HOMEs, and a
stage of 40 dataflows fanned out over 4 shard steps, reading and writing S3 (moto in server mode).

The sources and the lake are on S3 (``s3://<bucket>/landing``, ``s3://<bucket>/lake``; credentials
from the connections' ``secrets_ref``, in every process's environment). The three "hosts" — two
workers and the launching process (the run's coordinator; the test reads the run through its
instance) — share nothing but PostgreSQL (Dagster's instance and DataCoolie's state store,
``DATACOOLIE_STATE_URL``), Redis and S3: each has its own working directory, DAGSTER_HOME and
temporary folder, and its own copy of the metadata file at the same relative path (as an image
would ship it). The steps hand each other nothing through a folder, and their captured logs go to
S3 (deploy/celery/dagster.yaml's ``S3ComputeLogManager``), so the launching host reads every step's
log. No table, state or step output is on a local disk, which the tests check. One run goes through
untouched; in the other, a worker is SIGKILLed while it is inside a shard step that has committed
some of its tables: the broker redelivers the unacknowledged task (``task_acks_late`` +
``visibility_timeout``, deploy/celery/worker.yaml), the other worker runs the step again, and every
table holds its source rows exactly once (without ``task_acks_late`` the step is lost and the run
waits for ever: docs/deployment.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import psycopg2
import pytest
import yaml

from datacoolie_core import FileProvider
from datacoolie_core.orchestration.distributor import JobDistributor
from tests.dagster.celery_support import Worker, celery_workers
from tests.dagster.cli_support import BIN, REPOSITORY
from tests.dagster.s3_stage_support import STAGE, assert_tables_hold_their_sources, table_url, write_stage
from tests.support.s3 import ACCESS_KEY_ID, KEY_ID_VAR, REGION, SECRET_ACCESS_KEY, SECRET_VAR, S3Server

pytestmark = [pytest.mark.slow, pytest.mark.celery, pytest.mark.redis, pytest.mark.postgres, pytest.mark.s3]

DATAFLOWS = 40
SHARDS = 4
ROWS = 20_000
"""Enough for a shard step of 10 dataflows to last a few seconds: the window the kill is aimed at."""
LOCATION = "tests.dagster.celery_location"
METADATA = "metadata.json"
"""Where every host finds its copy of the metadata: relative to its working directory."""
LOG_PREFIX = "dagster/compute-logs"
VISIBILITY_TIMEOUT = 60
"""Seconds before Redis hands an unacknowledged task to another worker: well over a shard step here
(a few seconds; a step still running past it would be handed out twice)."""
RUN_TIMEOUT = 600.0
INSTANCE_FILE = REPOSITORY / "deploy" / "celery" / "dagster.yaml"
"""Every host's $DAGSTER_HOME/dagster.yaml, as shipped."""


@pytest.fixture(scope="module")
def broker(redis_url: str) -> str:
    """The Redis server of the test process (``tests/conftest.py``); each test uses its own databases."""
    return redis_url


@dataclass(frozen=True)
class Deployment:
    root: Path
    image: Path
    """What every host gets as is (the metadata file), as a container image would carry it."""
    env: dict[str, str]
    server: S3Server
    bucket: str

    @property
    def metadata(self) -> Path:
        return self.image / METADATA

    @property
    def launcher(self) -> Path:
        """The launching host's working directory (its DAGSTER_HOME is ``dagster_home`` in it)."""
        return self.root / "launcher"

    def provision(self, host: Path) -> None:
        """A host's copy of the image: the metadata file at the path every process names."""
        shutil.copytree(self.image, host, dirs_exist_ok=True)

    def table(self, index: int) -> str:
        return table_url(self.bucket, index)

    def committed_tables(self) -> set[str]:
        """The tables with a first commit on S3 (one listing: the watcher below polls it)."""
        keys = self.server.keys(f"s3://{self.bucket}/lake/")
        return {f"s3://{self.bucket}/{k.split('/_delta_log/')[0]}" for k in keys if "/_delta_log/0" in k}

    def shard_tables(self, shard: int) -> list[str]:
        provider = FileProvider(self.metadata)
        provider.initialize()
        try:
            mine = JobDistributor(job_num=SHARDS, job_index=shard).select(provider.get_dataflows(stage=STAGE))
        finally:
            provider.close()
        return [self.table(int(str(d.name).removeprefix("df_"))) for d in mine]


def deploy(root: Path, broker: str, database: dict[str, str], db: int, server: S3Server) -> Deployment:
    """The stage on a new bucket, the executor/worker config (deploy/celery/worker.yaml, a short
    visibility timeout) and the environment every process gets; Redis databases ``db`` and ``db + 1``."""
    image = root / "image"
    image.mkdir()
    bucket = server.bucket()
    write_stage(image / METADATA, server, bucket, dataflows=DATAFLOWS, rows=ROWS, credentials=(KEY_ID_VAR, SECRET_VAR))
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
        "DATACOOLIE_TEST_METADATA": METADATA,
        "DATACOOLIE_LOG_PATH": "-",  # the engine's execution and system logs: in each step's log
        # the secrets the connections' secrets_ref name: every process resolves them from its environment
        KEY_ID_VAR: ACCESS_KEY_ID,
        SECRET_VAR: SECRET_ACCESS_KEY,
        # the steps' captured logs: S3 (deploy/celery/dagster.yaml), boto3's credentials
        "DATACOOLIE_LOG_BUCKET": bucket,
        "DATACOOLIE_LOG_PREFIX": LOG_PREFIX,
        "DATACOOLIE_S3_ENDPOINT": server.endpoint,
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
        # the state store every worker shares: PostgreSQL (the instance's database, its own schema)
        "DATACOOLIE_STATE_URL": "postgresql://{DATACOOLIE_PG_USER}:{DATACOOLIE_PG_PASSWORD}@{DATACOOLIE_PG_HOST}:"
        "{DATACOOLIE_PG_PORT}/{DATACOOLIE_PG_DB}".format(**database),
    }
    deployment = Deployment(root, image, env, server, bucket)
    home = deployment.launcher / "dagster_home"
    home.mkdir(parents=True)
    (deployment.launcher / "tmp").mkdir()
    deployment.provision(deployment.launcher)
    (home / "dagster.yaml").write_bytes(INSTANCE_FILE.read_bytes())
    return deployment


def process_env(deployment: Deployment) -> dict[str, str]:
    """A worker's environment: the deployment's, the repository importable, the venv's ``celery`` on PATH."""
    path = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, **deployment.env, "PYTHONPATH": str(REPOSITORY), "PATH": path}


@dataclass
class Run:
    """The stage job run by its own coordinator process (``python -m tests.dagster.celery_location``)."""

    process: subprocess.Popen[str]
    home: Path

    def wait(self) -> str:
        """The run's id, once the coordinator has exited (it prints the id last)."""
        try:
            out, _ = self.process.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()  # a run waiting for a lost step waits for ever: never leave it behind
            out, _ = self.process.communicate()
            pytest.fail(f"the run did not finish in {RUN_TIMEOUT:.0f} s (a lost step?):\n{out[-3000:]}")
        lines = out.strip().splitlines()
        assert lines, f"the coordinator printed nothing (exit {self.process.returncode})"
        return lines[-1]


def launch(deployment: Deployment) -> Run:
    """Start the run's coordinator: a process of its own, like a run worker (a fresh code location load),
    on the launching host."""
    home = deployment.launcher / "dagster_home"
    process = subprocess.Popen(
        [sys.executable, "-m", LOCATION, str(SHARDS)], cwd=deployment.launcher,
        env={**process_env(deployment), "DAGSTER_HOME": str(home), "TMPDIR": str(deployment.launcher / "tmp")},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    return Run(process, home)


@pytest.fixture
def instance_of(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Opens a deployment's Dagster instance in this process (its settings are environment references)."""
    opened: list[dg.DagsterInstance] = []

    def open_instance(deployment: Deployment) -> dg.DagsterInstance:
        for name, value in deployment.env.items():
            monkeypatch.setenv(name, value)
        opened.append(dg.DagsterInstance.from_config(str(deployment.launcher / "dagster_home")))
        return opened[-1]

    yield open_instance
    for instance in opened:
        instance.dispose()


def worker_of_steps(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, str]]:
    """``(step key, worker)`` of every Celery task that started a step, in order (Dagster's engine events)."""
    taken = []
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        event = record.dagster_event
        if event is None or event.engine_event_data is None:
            continue
        worker = event.engine_event_data.metadata.get("Celery worker")
        if worker is not None:
            taken.append((str(event.step_key), str(worker.value)))
    return taken


def assert_tables_exact(deployment: Deployment) -> None:
    """Every table is committed on S3 and, read back, holds its source's rows exactly once."""
    assert len(deployment.committed_tables()) == DATAFLOWS
    assert_tables_hold_their_sources(deployment.server, deployment.bucket, dataflows=DATAFLOWS, rows=ROWS)


def assert_state_in_postgres(deployment: Deployment) -> None:
    """One watermark per dataflow in the PostgreSQL state store (no state folder on disk: see below)."""
    connection = psycopg2.connect(deployment.env["DATACOOLIE_STATE_URL"])
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM datacoolie_state.watermarks")
            assert cursor.fetchone() == (DATAFLOWS,)
    finally:
        connection.close()


def assert_nothing_local(deployment: Deployment, workers: list[Worker], run_id: str) -> None:
    """No process wrote a table, a source copy, state or a step output on a local disk: not in the
    hosts' own working directories (DAGSTER_HOMEs and temporary folders in them), nowhere under the
    test's root."""
    assert all(worker.cwd.is_relative_to(deployment.root) for worker in workers)  # so the walk below sees them
    names = {"_delta_log", "watermarks", "lake", "landing", "state"}
    local = [p.relative_to(deployment.root) for p in deployment.root.rglob("*") if p.name in names]
    assert local == [], f"written locally: {local}"
    outputs = [p.relative_to(deployment.root) for p in deployment.root.rglob(f"storage/{run_id}/**/*") if p.is_file()]
    assert outputs == [], f"step outputs on a host's disk: {outputs}"


def step_log(instance: dg.DagsterInstance, run_id: str, step: str) -> str:
    """The captured stdout and stderr of ``step``'s last attempt, read through ``instance`` (from S3)."""
    captured = [
        r.dagster_event.logs_captured_data
        for r in instance.all_logs(run_id, of_type=dg.DagsterEventType.LOGS_CAPTURED)
        if r.dagster_event and step in (r.dagster_event.logs_captured_data.step_keys or [])
    ]
    assert captured, f"no captured logs for {step}"
    manager = instance.compute_log_manager
    assert type(manager).__name__ == "S3ComputeLogManager"
    data = manager.get_log_data(manager.build_log_key_for_run(run_id, captured[-1].file_key))
    return (data.stdout or b"").decode() + (data.stderr or b"").decode()


def assert_step_logs_on_s3(deployment: Deployment, instance: dg.DagsterInstance, run_id: str) -> None:
    """Each shard step's log, uploaded to S3 by the worker that ran it, holds the step's own lines:
    Dagster's, and the engine's execution log (a row per dataflow of the shard)."""
    assert deployment.server.keys(f"s3://{deployment.bucket}/{LOG_PREFIX}/")
    for i in range(SHARDS):
        text = step_log(instance, run_id, f"datacoolie_run_shard[shard_{i}]")
        assert f"shard {i}/{SHARDS}:" in text, text[-2000:]
        rows = [json.loads(line) for line in text.splitlines() if line.startswith('{"_type": "dataflow_run_log"')]
        assert {row["dataflow_name"] for row in rows} >= {f"df_{int(t[-2:]):02d}" for t in deployment.shard_tables(i)}
        assert SECRET_ACCESS_KEY not in text


def assert_secret_nowhere(deployment: Deployment, instance: dg.DagsterInstance, run_id: str) -> None:
    """The S3 secret every worker resolved appears in no file the run left (worker logs, step logs,
    configs) and in no event of the run."""
    leaks = [p for p in deployment.root.rglob("*") if p.is_file() and SECRET_ACCESS_KEY.encode() in p.read_bytes()]
    assert leaks == [], f"the S3 secret is in {leaks}"
    assert not any(SECRET_ACCESS_KEY in str(record) for record in instance.all_logs(run_id))


def steps(instance: dg.DagsterInstance, run_id: str, event_type: dg.DagsterEventType) -> list[str]:
    """The step keys of a run's events of one type, in order."""
    return [str(r.dagster_event.step_key) for r in instance.all_logs(run_id, of_type=event_type) if r.dagster_event]


def shard_steps(instance: dg.DagsterInstance, run_id: str) -> set[str]:
    return {s for s in steps(instance, run_id, dg.DagsterEventType.STEP_SUCCESS) if "run_shard" in s}


def assert_succeeded(instance: dg.DagsterInstance, run_id: str, run: Run) -> None:
    record = instance.get_run_by_id(run_id)
    assert record is not None
    assert record.status == dg.DagsterRunStatus.SUCCESS, run_id
    assert run.process.returncode == 0


def test_a_stage_fans_out_over_two_celery_workers(
    tmp_path: Path, broker: str, postgres_database: dict[str, str], s3_server: S3Server, instance_of: Any
) -> None:
    deployment = deploy(tmp_path, broker, postgres_database, db=0, server=s3_server)
    instance = instance_of(deployment)  # creates Dagster's tables once: two workers starting on an empty
    # database race to create them ("type runs already exists"), as any deployment's first start would
    worker_yaml = tmp_path / "worker.yaml"
    with celery_workers(2, tmp_path, worker_yaml, INSTANCE_FILE, process_env(deployment), f"{broker}/0",
                        deployment.provision) as workers:  # fmt: skip
        run = launch(deployment)
        run_id = run.wait()
    taken = worker_of_steps(instance, run_id)

    assert_succeeded(instance, run_id, run)
    assert shard_steps(instance, run_id) == {f"datacoolie_run_shard[shard_{i}]" for i in range(SHARDS)}
    assert_tables_exact(deployment)
    assert_state_in_postgres(deployment)
    # both workers ran steps, and no step ran twice
    assert {w for _, w in taken} == {w.hostname for w in workers}
    assert len(taken) == len({s for s, _ in taken})
    assert_nothing_local(deployment, workers, run_id)
    assert_secret_nowhere(deployment, instance, run_id)
    assert_step_logs_on_s3(deployment, instance, run_id)


class KillMidStep:
    """SIGKILLs ``victim`` once it is inside a shard step (started on it, no STEP_SUCCESS yet) that
    has written at least one of its shard's tables: the step's work is partly or wholly committed,
    but neither Dagster nor the broker has seen it end."""

    def __init__(self, deployment: Deployment, victim: Worker) -> None:
        self.deployment, self.victim = deployment, victim
        self.tables = {shard: deployment.shard_tables(shard) for shard in range(SHARDS)}
        self.killed_step: str | None = None
        self.written_before_kill = 0

    def watch(self, instance: dg.DagsterInstance, run: Run) -> None:
        """Until the victim is killed or the run's coordinator has exited."""
        deadline = time.monotonic() + RUN_TIMEOUT
        while run.process.poll() is None and time.monotonic() < deadline:
            runs = instance.get_runs(limit=1)
            if runs and self._caught(instance, runs[0].run_id):
                return
            time.sleep(0.02)

    def _caught(self, instance: dg.DagsterInstance, run_id: str) -> bool:
        for step, worker in worker_of_steps(instance, run_id):
            if worker != self.victim.hostname or "[shard_" not in step:
                continue
            shard = int(step.rsplit("_", 1)[1].rstrip("]"))
            written = len(self.deployment.committed_tables().intersection(self.tables[shard]))
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
    tmp_path: Path, broker: str, postgres_database: dict[str, str], s3_server: S3Server, instance_of: Any
) -> None:
    deployment = deploy(tmp_path, broker, postgres_database, db=2, server=s3_server)
    instance = instance_of(deployment)  # Dagster's tables created before the workers start (see above)
    with celery_workers(2, tmp_path, tmp_path / "worker.yaml", INSTANCE_FILE, process_env(deployment),
                        f"{broker}/2", deployment.provision) as workers:  # fmt: skip
        victim, survivor = workers
        killer = KillMidStep(deployment, victim)
        run = launch(deployment)
        killer.watch(instance, run)
        run_id = run.wait()
    taken = worker_of_steps(instance, run_id)

    assert killer.killed_step is not None, f"the victim was never caught inside a shard step: {taken}\n{victim.log()}"
    assert victim.process.returncode is not None
    assert_succeeded(instance, run_id, run)
    # the killed step started twice: on the victim, then (redelivered by Redis) on the survivor
    assert steps(instance, run_id, dg.DagsterEventType.STEP_START).count(killer.killed_step) == 2
    assert [w for s, w in taken if s == killer.killed_step] == [victim.hostname, survivor.hostname]
    assert shard_steps(instance, run_id) == {f"datacoolie_run_shard[shard_{i}]" for i in range(SHARDS)}
    # the tables the victim had committed before it died were not appended again: 0 lost, 0 duplicated
    assert killer.written_before_kill > 0
    assert_tables_exact(deployment)
    assert_state_in_postgres(deployment)
    assert_nothing_local(deployment, workers, run_id)
    assert_secret_nowhere(deployment, instance, run_id)
    assert_step_logs_on_s3(deployment, instance, run_id)
