"""The CI recipe of ``docs/ci.md`` (``deploy/ci/launch-stage.sh``, run verbatim) against a real
``dagster-webserver`` and ``dagster-daemon`` on the bundled example, SQLite and PostgreSQL instances.

One deployment per storage, four CI jobs in a row: with no daemon yet the wait gives up with the queued
reason; with it running a stage succeeds (exit 0, the rows of every table it wrote printed, equal to the
Delta commits); a stage with one broken source fails (exit 1, the dataflow's error printed); with the
daemon stopped again the wait gives up once its last heartbeat is stale (90 s).
Each storage runs the success and the failure through the two launch paths the other one does not
(``--url`` with no instance in the CI process, or ``dagster job launch`` into ``DAGSTER_HOME``).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import dagster as dg
import pytest
from deltalake import DeltaTable

from datacoolie_dagster.example.generate import land_batch
from tests.dagster.cli_support import BIN, REPOSITORY, explain
from tests.dagster.conftest import InstanceSettings
from tests.dagster.daemon_support import Daemon, prepare, running
from tests.dagster.webserver_support import webserver

pytestmark = [pytest.mark.slow, pytest.mark.daemon]

RECIPE = REPOSITORY / "deploy" / "ci" / "launch-stage.sh"
SHARDS = 3
STAGE_JOB = "datacoolie_landing2bronze"
WROTE = re.compile(r"wrote (\S+): (\d+) inserted, (\d+) updated, (\d+) deleted \(Delta version (\d+)")
PATHS = {"sqlite": ("url", "instance"), "postgres": ("instance", "url")}
"""Per storage: the launch path of the successful stage, then of the failing one."""


def recipe(daemon: Daemon, path: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """``deploy/ci/launch-stage.sh`` as a CI job runs it; ``path == "url"``: no instance in its environment."""
    env = {k: v for k, v in daemon.env.items() if path == "instance" or not k.startswith(("DAGSTER_", "DATACOOLIE_"))}
    env |= {"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "JOB": STAGE_JOB, "SHARDS": str(SHARDS)}
    env |= {"CI_RUN_ID": "ci-42", **settings}
    return subprocess.run(
        ["bash", str(RECIPE)], cwd=daemon.root, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def url_settings(url: str) -> dict[str, str]:
    return {"DAGSTER_URL": url}


def written(output: str) -> dict[tuple[str, int], int]:
    """``{(table, Delta version): rows inserted}`` of every ``wrote …`` line."""
    return {(m[1], int(m[5])): int(m[2]) for m in WROTE.finditer(output)}


def committed_rows(data: Path, table: str, version: int) -> int:
    """Rows the Delta commit ``version`` of ``table`` added, from the Delta log's operation metrics."""
    history = DeltaTable(str(data / table)).history()
    commit = next(c for c in history if c["version"] == version)
    return int(commit["operationMetrics"]["num_added_rows"])


def test_the_ci_recipe_gates_on_the_runs(tmp_path: Path, instance_settings: InstanceSettings) -> None:
    data = tmp_path / "data"
    workspace = (REPOSITORY / "workspace.yaml").read_text()
    env = {"DATACOOLIE_HOME": str(data), **instance_settings.env}
    daemon = prepare(tmp_path, instance_settings.config, env, workspace=workspace)
    land_batch(data, 1)
    success_path, failure_path = PATHS[instance_settings.storage]

    with webserver(daemon) as url:
        # CI job 1 — no daemon dequeues the runs: the wait gives up with the reason, not a silent hang
        stuck = recipe(daemon, "url", QUEUED_TIMEOUT="5", TIMEOUT="120", **url_settings(url))
        assert stuck.returncode == 3, explain(stuck)
        assert stuck.stdout.count("is dagster-daemon running?") == 2 * SHARDS, explain(stuck)  # progress + summary
        cancel_queued(daemon, "ci-42")

        with running(daemon):
            # CI job 2 — a stage that succeeds: exit 0, every table written with the rows of its Delta commit
            settings = url_settings(url) if success_path == "url" else {}
            done = recipe(daemon, success_path, **settings)
            assert done.returncode == 0, explain(done)
            tables = written(done.stdout)
            assert {t for t, _ in tables} == {"bronze/sales/orders", "bronze/crm/customers"}, explain(done)
            assert tables == {(t, v): committed_rows(data, t, v) for t, v in tables}
            assert sorted(tables.values()) == [40, 600]
            assert done.stdout.count(f"({STAGE_JOB}): SUCCESS in ") == SHARDS
            # the shard that got no dataflow says why (the example's stage has 2 dataflows for 3 shards)
            assert f"has no dataflow of stage landing2bronze: 2 active dataflow(s) spread over {SHARDS}" in done.stdout

            # CI job 3 — one dataflow of the stage fails: exit 1 with that dataflow's error
            (data / "landing" / "crm" / "customers" / "customers.parquet").write_bytes(b"not a parquet file")
            settings = url_settings(url) if failure_path == "url" else {}
            failed = recipe(daemon, failure_path, **settings)
            assert failed.returncode == 1, explain(failed)
            assert "- customers_landing_to_bronze [" in failed.stdout, explain(failed)
            assert re.search(rf"\({STAGE_JOB}\): FAILURE in .*customers_landing_to_bronze", failed.stdout)

        # CI job 4 — the daemon has stopped: its last heartbeat ages, and the wait gives up once it is stale
        stopped = recipe(daemon, "url", QUEUED_TIMEOUT="5", TIMEOUT="600", CI_RUN_ID="ci-43", **url_settings(url))
        assert stopped.returncode == 3, explain(stopped)
        assert re.search(
            r"no run-queue daemon heartbeat \(last: \d+ s ago\): is dagster-daemon running\?", stopped.stdout
        )
        assert "--timeout" not in stopped.stdout
        cancel_queued(daemon, "ci-43")


def cancel_queued(daemon: Daemon, ci_run: str) -> None:
    """Cancel the runs one CI job left QUEUED, so the next one does not find them."""
    with daemon.instance() as instance:
        queued = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.QUEUED]))
        assert {r.tags["ci/run"] for r in queued} == {ci_run}
        assert len(queued) == SHARDS
        for run in queued:
            instance.report_run_canceled(run)
