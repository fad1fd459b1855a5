"""The daemon on PostgreSQL with ``dagster.postgres.yaml``: runs go through the queue, one at a time
for a pipeline whose pool admits one (``max_runs=1``), and the runs are stored in PostgreSQL."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dagster as dg
import psycopg2

from datacoolie_dagster.limits import apply_pool_limits, pool_for
from tests.dagster.cli_support import REPOSITORY
from tests.dagster.daemon_support import FINISHED, prepare, running, wait_until

LIVE = {dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED}


def test_the_daemon_on_postgres_runs_one_run_of_a_pipeline_at_a_time(
    tmp_path: Path, postgres_database: dict[str, str]
) -> None:
    database = postgres_database
    daemon = prepare(tmp_path, REPOSITORY / "dagster.postgres.yaml", database)
    with running(daemon), daemon.instance() as instance:
        apply_pool_limits(instance, {pool_for("p"): 1})  # max_runs=1 for pipeline "p"
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(lambda _: daemon.launch("pooled"), range(3)))
        live_counts = _watch(instance, count=3, timeout=50)
        statuses = [r.status for r in instance.get_runs()]

    assert statuses == [dg.DagsterRunStatus.SUCCESS] * 3
    assert max(live_counts) == 1  # the queue held the others back: never two live at once

    with psycopg2.connect(_dsn(database)) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT pipeline_name, status FROM runs")
        assert sorted(cursor.fetchall()) == [("pooled", "SUCCESS")] * 3
        cursor.execute("SELECT count(*) FROM event_logs WHERE dagster_event_type = 'PIPELINE_SUCCESS'")
        assert cursor.fetchone() == (3,)


def _watch(instance: dg.DagsterInstance, *, count: int, timeout: float) -> list[int]:
    """Poll the run statuses until ``count`` runs finished; the number live at each poll."""
    seen: list[int] = []

    def finished() -> bool:
        runs = instance.get_runs()
        seen.append(sum(r.status in LIVE for r in runs))
        return len(runs) == count and all(r.status in FINISHED for r in runs)

    wait_until(finished, timeout, f"{count} finished runs", poll=0.1)
    return seen


def _dsn(env: dict[str, str]) -> str:
    return (
        f"host={env['DATACOOLIE_PG_HOST']} port={env['DATACOOLIE_PG_PORT']} user={env['DATACOOLIE_PG_USER']} "
        f"password={env['DATACOOLIE_PG_PASSWORD']} dbname={env['DATACOOLIE_PG_DB']}"
    )
