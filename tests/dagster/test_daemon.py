"""``dagster job launch`` through the run queue and a real ``dagster-daemon``: N shards, N runs.

This is how CI scales a stage out: one launch per ``job_index``, each queued, dequeued by the daemon
(the repository's ``dagster.yaml``: queued coordinator, 4 concurrent runs) and run by its own worker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from datacoolie_core.columns import DATAFLOW_RUN_ID
from tests.dagster.cli_support import BIN, Deployment, deploy, explain

SHARDS = 3
TIMEOUT = 120.0
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Deployment]:
    """The example deployment with ``dagster-daemon run -w workspace.yaml`` running; stopped after."""
    deployment = deploy(tmp_path)
    log = (tmp_path / "daemon.log").open("w")
    process = subprocess.Popen(
        [str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"],
        cwd=deployment.project,
        env=deployment.env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the code server and run workers stop with it
    )
    try:
        yield deployment
    finally:
        _stop(process)
        log.close()


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def launch_shards(deployment: Deployment) -> None:
    """``dagster job launch`` once per shard, the launches side by side (each loads the code location)."""
    base = [str(BIN / "dagster"), "job", "launch", "-w", "workspace.yaml", "-j", "datacoolie_landing2bronze"]
    commands = [[*base, "--config-json", json.dumps({"job_num": SHARDS, "job_index": i})] for i in range(SHARDS)]
    launches = [
        subprocess.Popen(
            c, cwd=deployment.project, env=deployment.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
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


def test_launched_shards_run_through_the_queue_and_write_every_dataflow_once(
    daemon: Deployment, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    launch_shards(daemon)

    monkeypatch.setenv("DAGSTER_HOME", str(daemon.home))
    with dg.DagsterInstance.get() as instance:
        runs = wait_for_runs(instance, SHARDS)
    log = (tmp_path / "daemon.log").read_text()
    assert [r.status for r in runs] == [dg.DagsterRunStatus.SUCCESS] * SHARDS, log[-3000:]
    assert {r.run_config["job_index"] for r in runs} == set(range(SHARDS))

    # each dataflow of the stage ran in exactly one shard: every landed row once, one dataflow run each
    orders = pl.read_delta(str(daemon.data / "bronze" / "sales" / "orders"))
    customers = pl.read_delta(str(daemon.data / "bronze" / "crm" / "customers"))
    assert (orders.height, orders["order_id"].n_unique(), orders[DATAFLOW_RUN_ID].n_unique()) == (600, 600, 1)
    assert (customers.height, customers[DATAFLOW_RUN_ID].n_unique()) == (40, 1)
