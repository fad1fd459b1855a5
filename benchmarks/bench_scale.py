"""One stage job on one host: Dagster's multiprocess executor against Celery with 2 workers.

    .venv/bin/python benchmarks/bench_scale.py [--small 200] [--small-rows 100] [--large 8]
                                               [--large-rows 1000000] [--shards 4] [--rounds 2]
                                               [--out /tmp/bench_scale.json]

Two workloads, each a stage ``landing2bronze`` of append dataflows (parquet -> Delta, an
``updated_at`` watermark): ``small`` (200 dataflows of 100 rows) and ``large`` (8 of 1M rows). The
stage job fans out ``--shards`` shard steps; a run is ``dg.execute_job`` of that job, the run's
coordinator in this process, the Dagster instance on a private PostgreSQL, timed from launch to the
run's end, with the tables and the state removed before each run (a first load, every round).

* ``multiprocess/file``: ``{multiprocess: {max_concurrent: 2}}``, one process per step on this
  host, the file state store (the one-host default).
* ``forkserver/file``: the same with ``start_method: {forkserver: {}}``: step processes forked
  from a server that imported the code location once, instead of a fresh interpreter per step.
* ``multiprocess/postgres``: the same with the PostgreSQL state store (``DATACOOLIE_STATE_URL``).
* ``celery/postgres``: deploy/celery/worker.yaml's executor; a private Redis (broker and results)
  and two ``dagster-celery`` workers of one process each (tests/dagster/celery_support.py), started
  once; the PostgreSQL state store (the distributed path).

Both read the code location tests/dagster/celery_location.py (the one the Celery tests use), whose
``__main__`` is the run's coordinator: a process per run (``process_s``: its whole life, with the
~3-5 s of imports and code-location load); ``wall_s`` is the run itself, RUN_START -> RUN_SUCCESS
in the event log. The
per-dataflow overheads are wall-time differences / dataflows: the state store (multiprocess/postgres
- multiprocess/file) and the broker (celery/postgres - multiprocess/postgres). The event log splits each step's life into dispatch (the executor handing the step over -> the step
starting: broker + worker pick-up, or process spawn) and the step itself.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

import dagster as dg  # noqa: E402
import polars as pl  # noqa: E402
import yaml  # noqa: E402

from tests.dagster.celery_support import celery_workers  # noqa: E402
from tests.support.postgres import postgres_url  # noqa: E402
from tests.support.redis import redis_url  # noqa: E402

STAGE = "landing2bronze"
LOCATION = "tests.dagster.celery_location"
CONFIGS = {
    # name: (executor file, state in PostgreSQL)
    "multiprocess/file": ("multiprocess", False),
    "forkserver/file": ("forkserver", False),
    "multiprocess/postgres": ("multiprocess", True),
    "celery/postgres": ("celery", True),
}
"""One host's default; the same with the state store of several hosts; the distributed path."""


def write_stage(shared: Path, dataflows: int, rows: int) -> None:
    """``dataflows`` landing folders of ``rows`` rows and their metadata (absolute paths)."""
    lake = shared / "lake"
    flows = []
    for i in range(dataflows):
        folder = lake / "landing" / f"s_{i:03d}"
        folder.mkdir(parents=True)
        start = datetime(2024, 1, 1)
        pl.DataFrame(
            {
                "id": pl.int_range(i * rows, (i + 1) * rows, eager=True),
                "value": pl.int_range(0, rows, eager=True).cast(pl.Float64),
                "updated_at": pl.datetime_range(start, start + timedelta(seconds=rows - 1), "1s", eager=True),
            }
        ).write_parquet(folder / "batch_001.parquet")
        flows.append(
            {
                "name": f"df_{i:03d}",
                "stage": STAGE,
                "source": {"connection_name": "landing", "table": f"s_{i:03d}", "watermark_columns": ["updated_at"]},
                "destination": {"connection_name": "bronze", "table": f"t_{i:03d}", "load_type": "append"},
            }
        )
    connections = [
        {"name": "landing", "connection_type": "file", "format": "parquet", "configure": {"base_path": str(lake / "landing")}},
        {"name": "bronze", "connection_type": "lakehouse", "format": "delta", "configure": {"base_path": str(lake / "bronze")}},
    ]  # fmt: skip
    (shared / "metadata.json").write_text(
        json.dumps({"connections": connections, "dataflows": flows}), encoding="utf-8"
    )


def executor_files(root: Path) -> dict[str, Path]:
    files = {n: root / f"{n}.yaml" for n in ("multiprocess", "forkserver")} | {"celery": root / "worker.yaml"}
    files["multiprocess"].write_text("executor: {multiprocess: {max_concurrent: 2}}\n", encoding="utf-8")
    files["forkserver"].write_text(
        "executor: {multiprocess: {max_concurrent: 2, start_method: {forkserver: {}}}}\n", encoding="utf-8"
    )
    shutil.copyfile(REPOSITORY / "deploy" / "celery" / "worker.yaml", files["celery"])
    return files


def run_once(root: Path, executor_file: Path, state_url: str | None, shards: int) -> dict[str, Any]:
    """One run on a fresh lake and state, by its own coordinator process; its wall times and step times."""
    shared, home = root / "shared", root / "coordinator_home"
    shutil.rmtree(shared / "lake" / "bronze", ignore_errors=True)
    shutil.rmtree(shared / "state", ignore_errors=True)
    _reset_state(os.environ["BENCH_STATE_URL"])
    env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(REPOSITORY),
           "DATACOOLIE_EXECUTOR_CONFIG": str(executor_file)}  # fmt: skip
    env.pop("DATACOOLIE_STATE_URL", None)
    if state_url:
        env["DATACOOLIE_STATE_URL"] = state_url
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", LOCATION, str(shards)], cwd=root, env=env, capture_output=True, text=True
    )
    process = time.perf_counter() - started
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run_id = done.stdout.strip().splitlines()[-1]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return {"process_s": round(process, 2), **run_times(instance, run_id)}


def run_times(instance: dg.DagsterInstance, run_id: str) -> dict[str, Any]:
    """The run's wall time (RUN_START -> RUN_SUCCESS) and its shard steps' dispatch and run times."""
    marks = {
        r.dagster_event.event_type: r.timestamp
        for r in instance.all_logs(run_id)
        if r.dagster_event
        and r.dagster_event.event_type in (dg.DagsterEventType.RUN_START, dg.DagsterEventType.RUN_SUCCESS)
    }
    wall = marks[dg.DagsterEventType.RUN_SUCCESS] - marks[dg.DagsterEventType.RUN_START]
    return {"wall_s": round(wall, 2), **step_times(instance, run_id)}


def step_times(instance: dg.DagsterInstance, run_id: str) -> dict[str, Any]:
    """Median dispatch (first engine event of a step -> STEP_START) and run (STEP_START -> STEP_SUCCESS) of the shard steps."""
    first: dict[str, float] = {}
    start: dict[str, float] = {}
    end: dict[str, float] = {}
    for record in instance.all_logs(run_id):
        event = record.dagster_event
        key = event.step_key if event else None
        if event is None or not key or "run_shard" not in key:
            continue
        first.setdefault(key, record.timestamp)
        if event.event_type == dg.DagsterEventType.STEP_START:
            start[key] = record.timestamp
        elif event.event_type == dg.DagsterEventType.STEP_SUCCESS:
            end[key] = record.timestamp
    dispatch = [start[k] - first[k] for k in start]
    running = [end[k] - start[k] for k in end if k in start]
    return {
        "steps": len(end),
        "dispatch_median_s": round(statistics.median(dispatch), 2),
        "dispatch_min_s": round(min(dispatch), 2),  # a step that found a free worker/slot: no queueing
        "step_median_s": round(statistics.median(running), 2),
    }


def _reset_state(url: str) -> None:
    import psycopg2

    connection = psycopg2.connect(url)
    connection.autocommit = True
    try:
        cursor = connection.cursor()
        cursor.execute("SELECT to_regclass('datacoolie_state.watermarks')")
        if cursor.fetchone() != (None,):  # emptied, not dropped: a long-lived store keeps its tables
            cursor.execute("TRUNCATE datacoolie_state.watermarks, datacoolie_state.commit_journal, "
                           "datacoolie_state.watermark_history")  # fmt: skip
    finally:
        connection.close()


@contextmanager
def servers(root: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """Redis and PostgreSQL (a fresh database), the environment every process gets."""
    with ExitStack() as stack:
        broker = stack.enter_context(redis_url())
        pg = stack.enter_context(postgres_url())
        import psycopg2

        admin = psycopg2.connect(pg)
        admin.autocommit = True
        admin.cursor().execute('CREATE DATABASE "bench_scale"')
        admin.close()
        from urllib.parse import urlparse

        parsed = urlparse(pg)
        env = {
            "DATACOOLIE_PG_HOST": parsed.hostname or "127.0.0.1",
            "DATACOOLIE_PG_PORT": str(parsed.port),
            "DATACOOLIE_PG_USER": parsed.username or "postgres",
            "DATACOOLIE_PG_PASSWORD": parsed.password or "",
            "DATACOOLIE_PG_DB": "bench_scale",
            "DATACOOLIE_CELERY_BROKER": f"{broker}/0",
            "DATACOOLIE_CELERY_BACKEND": f"{broker}/1",
            "DATACOOLIE_TEST_METADATA": str(root / "shared" / "metadata.json"),
            "DATACOOLIE_TEST_STATE": str(root / "shared" / "state"),
            "BENCH_STATE_URL": f"postgresql://{parsed.username}:{parsed.password}@{parsed.hostname}:{parsed.port}/bench_scale",
        }
        yield f"{broker}/0", env


def write_instance(root: Path, target: Path) -> None:
    """deploy/celery/dagster.yaml with the step logs in a local folder: one host, no S3 server here."""
    config = yaml.safe_load((REPOSITORY / "deploy" / "celery" / "dagster.yaml").read_text(encoding="utf-8"))
    config["compute_logs"] = {
        "module": "dagster._core.storage.local_compute_log_manager",
        "class": "LocalComputeLogManager",
        "config": {"base_dir": str(root / "compute_logs")},
    }
    target.write_text(yaml.safe_dump(config), encoding="utf-8")


def bench_workload(name: str, dataflows: int, rows: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    root = Path(tempfile.mkdtemp(prefix=f"bench-scale-{name}-"))
    results = []
    try:
        shared = root / "shared"
        write_stage(shared, dataflows, rows)
        files = executor_files(root)
        home = root / "coordinator_home"
        home.mkdir()
        write_instance(root, home / "dagster.yaml")
        with servers(root) as (broker, env):
            os.environ.update(env)
            worker_env = {**os.environ, "PYTHONPATH": str(REPOSITORY), "DATACOOLIE_EXECUTOR_CONFIG": str(files["celery"]),
                          "DATACOOLIE_STATE_URL": env["BENCH_STATE_URL"],
                          "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # fmt: skip
            with celery_workers(2, root, files["celery"], home / "dagster.yaml", worker_env, broker):
                for round_ in range(args.rounds):
                    names = list(CONFIGS) if round_ % 2 == 0 else list(CONFIGS)[::-1]
                    for config in names:
                        executor, in_postgres = CONFIGS[config]
                        url = env["BENCH_STATE_URL"] if in_postgres else None
                        sample = run_once(root, files[executor], url, args.shards)
                        sample |= {"workload": name, "config": config, "round": round_, "dataflows": dataflows}
                        print(json.dumps(sample), flush=True)
                        results.append(sample)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return results


def summary(results: list[dict[str, Any]]) -> list[str]:
    lines = []
    for workload in dict.fromkeys(r["workload"] for r in results):
        walls = {
            c: statistics.median(r["wall_s"] for r in results if r["workload"] == workload and r["config"] == c)
            for c in CONFIGS
        }
        count = next(r["dataflows"] for r in results if r["workload"] == workload)
        state = (walls["multiprocess/postgres"] - walls["multiprocess/file"]) / count * 1000
        broker = (walls["celery/postgres"] - walls["multiprocess/postgres"]) / count * 1000
        lines.append(
            f"{workload} ({count} dataflows): "
            + ", ".join(f"{c} {w:.1f} s" for c, w in walls.items())
            + f"; per dataflow: state store {state:+.0f} ms, broker path {broker:+.0f} ms"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--small-rows", type=int, default=100)
    parser.add_argument("--large", type=int, default=8)
    parser.add_argument("--large-rows", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("POLARS_MAX_THREADS", "2")
    results = bench_workload("small", args.small, args.small_rows, args) if args.small else []
    results += bench_workload("large", args.large, args.large_rows, args) if args.large else []
    for line in summary(results):
        print(line)
    if args.out:
        args.out.write_text(json.dumps({"load_average": os.getloadavg(), "results": results}, indent=1))


if __name__ == "__main__":
    main()
