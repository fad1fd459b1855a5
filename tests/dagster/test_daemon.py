"""``dagster job launch`` through the run queue and a real ``dagster-daemon``: N shards, N runs.

This is how CI scales a stage out: one launch per ``job_index``, each queued, dequeued by the daemon
(the repository's ``dagster.yaml``: queued coordinator, 4 concurrent runs) and run by its own worker.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from datacoolie_core.columns import DATAFLOW_RUN_ID
from datacoolie_dagster.example.generate import land_batch
from tests.dagster.cli_support import BIN, REPOSITORY, explain
from tests.dagster.daemon_support import FINISHED, Daemon, prepare, running

pytestmark = pytest.mark.daemon  # the whole module runs a real Dagster daemon

SHARDS = 3
TIMEOUT = 120.0


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    """The example deployment (batch 1 landed) with ``dagster-daemon run`` running; stopped after."""
    data = tmp_path / "data"
    workspace = (REPOSITORY / "workspace.yaml").read_text()
    deployment = prepare(tmp_path, REPOSITORY / "dagster.yaml", {"DATACOOLIE_HOME": str(data)}, workspace=workspace)
    land_batch(data, 1)
    with running(deployment):
        yield deployment


def launch_shards(daemon: Daemon) -> None:
    """``dagster job launch`` once per shard, the launches side by side (each loads the code location)."""
    base = [str(BIN / "dagster"), "job", "launch", "-w", "workspace.yaml", "-j", "datacoolie_landing2bronze"]
    commands = [[*base, "--config-json", json.dumps({"job_num": SHARDS, "job_index": i})] for i in range(SHARDS)]
    launches = [
        subprocess.Popen(
            c, cwd=daemon.root, env=dict(daemon.env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for c in commands
    ]
    for launch in launches:
        stdout, stderr = launch.communicate(timeout=TIMEOUT)
        result = subprocess.CompletedProcess(launch.args, launch.returncode, stdout, stderr)
        assert launch.returncode == 0, explain(result)


def wait_for_runs(instance: dg.DagsterInstance, count: int) -> list[dg.DagsterRun]:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        runs = instance.get_runs()
        if len(runs) >= count and all(r.status in FINISHED for r in runs):
            return list(runs)
        time.sleep(1)
    raise AssertionError(f"runs not finished after {TIMEOUT} s: {[(r.run_id, r.status) for r in instance.get_runs()]}")


def test_launched_shards_run_through_the_queue_and_write_every_dataflow_once(daemon: Daemon) -> None:
    launch_shards(daemon)

    with daemon.instance() as instance:
        runs = wait_for_runs(instance, SHARDS)
    log = (daemon.root / "daemon.log").read_text()
    assert [r.status for r in runs] == [dg.DagsterRunStatus.SUCCESS] * SHARDS, log[-3000:]
    assert {r.run_config["job_index"] for r in runs} == set(range(SHARDS))

    # each dataflow of the stage ran in exactly one shard: every landed row once, one dataflow run each
    data = daemon.root / "data"
    orders = pl.read_delta(str(data / "bronze" / "sales" / "orders"))
    customers = pl.read_delta(str(data / "bronze" / "crm" / "customers"))
    assert (orders.height, orders["order_id"].n_unique(), orders[DATAFLOW_RUN_ID].n_unique()) == (600, 600, 1)
    assert (customers.height, customers[DATAFLOW_RUN_ID].n_unique()) == (40, 1)
