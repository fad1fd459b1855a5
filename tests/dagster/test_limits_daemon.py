"""``max_runs`` on a real daemon, on SQLite and on PostgreSQL: 4 runs of a stage with ``max_runs=2``
queued at once are never more than 2 live, all of them run, and the runs are stored in the
instance's database."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dagster as dg
import psycopg2
import pytest

from datacoolie_dagster.automation.limits import pool_for
from tests.dagster.conftest import LINEAGE, InstanceSettings, land_lineage, write_metadata
from tests.dagster.daemon_support import FINISHED, prepare, running, wait_until

pytestmark = pytest.mark.daemon  # the whole module runs a real Dagster daemon

LIVE = {dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED}
STAGE = "landing2bronze"
JOB = f"datacoolie_{STAGE}"
RUNS = 4
CODE_LOCATION = f"""
from datacoolie_dagster import build_definitions

defs = build_definitions(
    "metadata.json", state_base_path="state", max_runs={{"{STAGE}": 2}}, include_sensors=False, run_retries=0
)
"""
WORKSPACE = "load_from:\n  - python_file: {relative_path: defs.py, location_name: limited, working_directory: .}\n"


def test_a_stage_with_max_runs_2_never_has_3_live_runs(tmp_path: Path, instance_settings: InstanceSettings) -> None:
    write_metadata(tmp_path, LINEAGE)
    land_lineage(tmp_path)
    (tmp_path / "defs.py").write_text(CODE_LOCATION, encoding="utf-8")
    daemon = prepare(tmp_path, instance_settings.config, instance_settings.env, workspace=WORKSPACE)
    pool = pool_for(STAGE)
    with running(daemon), daemon.instance() as instance:
        # the limits sensor (running by default) stores max_runs; before that the default limit (1) holds
        wait_until(
            lambda: _limit(instance, pool) == 2, 60, "the pool limit stored by the sensor", daemon.root / "daemon.log"
        )
        with ThreadPoolExecutor(RUNS) as launches:
            list(launches.map(lambda _: daemon.launch(JOB), range(RUNS)))
        live_counts = _watch(instance, count=RUNS, timeout=600)
        statuses = [r.status for r in instance.get_runs()]

    assert statuses == [dg.DagsterRunStatus.SUCCESS] * RUNS
    assert max(live_counts) == 2  # the queue held the others back (no pool: 4 live; default limit: 1)
    if instance_settings.storage == "postgres":
        with psycopg2.connect(instance_settings.dsn()) as connection, connection.cursor() as cursor:
            cursor.execute("SELECT pipeline_name, status FROM runs")
            assert sorted(cursor.fetchall()) == [(JOB, "SUCCESS")] * RUNS


def _limit(instance: dg.DagsterInstance, pool: str) -> int | None:
    info = instance.event_log_storage.get_concurrency_info(pool)
    return None if info.using_default_limit else info.limit


def _watch(instance: dg.DagsterInstance, *, count: int, timeout: float) -> list[int]:
    """Poll the run statuses until ``count`` runs finished; the number live at each poll."""
    seen: list[int] = []

    def finished() -> bool:
        runs = instance.get_runs()
        seen.append(sum(r.status in LIVE for r in runs))
        return len(runs) == count and all(r.status in FINISHED for r in runs)

    wait_until(finished, timeout, f"{count} finished runs", poll=0.1)
    return seen
