"""Automation switched on over the populated example, on a real ``dagster-daemon`` (SQLite and PostgreSQL).

The example is loaded as ``./make.sh example`` loads it, with the instance configured (``DAGSTER_HOME``,
so the CLI runs are recorded): batch 1 landed, both stages run, Q1 replayed. Then the sensors are
switched on as the docs say (``dagster sensor start``) and, in order:

1. no new data: several ticks of every sensor, no run;
2. a batch lands with a late file: one run loads bronze, then exactly the partitions of silver orders
   its rows fall in (the late month too), each once, and silver customers once;
3. the source sensor is stopped and a cron-style ``datacoolie run`` loads the next batch: its readers
   run once (silver orders' windows by the watermark sensor, silver customers by the automation);
4. the cursors are deleted: no history is replayed;
5. a Dagster stage run loads the next batch: the watermark sensor never requests the readers the
   automation follows, and requests silver orders' windows only after the run finished.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest

from datacoolie_dagster.automation.sensing.sensors import AUTOMATION_SENSOR_NAME, SOURCE_SENSOR_NAME, TRIGGER_TAG
from datacoolie_dagster.automation.sensing.watermark_sensor import WATERMARK_SENSOR_NAME
from datacoolie_dagster.dagster_internal import tick_status
from datacoolie_dagster.example import METADATA_PATH
from tests.dagster.cli_support import BIN
from tests.dagster.conftest import InstanceSettings
from tests.dagster.daemon_support import Daemon, prepare, running, wait_until
from tests.dagster.test_watermark_daemon import TIMEOUT, all_finished, cursor_of, runs_of, settle, ticks

pytestmark = pytest.mark.daemon

CODE_LOCATION = """
from datacoolie_dagster.location.example_jobs import build_example_definitions

defs = build_example_definitions(
    state_base_path="data/state", log_base_path="data/logs", sensor_interval_seconds=2, run_retries=0
)
"""
WORKSPACE = "load_from:\n  - python_file: {relative_path: defs.py, location_name: example, working_directory: .}\n"
SENSORS = (SOURCE_SENSOR_NAME, WATERMARK_SENSOR_NAME, AUTOMATION_SENSOR_NAME)
BRONZE_ORDERS, BRONZE_CUSTOMERS = "bronze/sales/orders", "bronze/crm/customers"
SILVER_ORDERS, SILVER_CUSTOMERS = "silver/sales/orders", "silver/crm/customers"


def command(daemon: Daemon, *args: str) -> None:
    """A console script of the venv in the project folder, with the daemon's instance configured."""
    done = subprocess.run(
        [str(BIN / args[0]), *args[1:]], cwd=daemon.root, env=dict(daemon.env), capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"{args}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def land_batch(daemon: Daemon) -> None:
    command(daemon, "python", "-m", "datacoolie_dagster.example.generate", "--root", "data")


def datacoolie(daemon: Daemon, verb: str, stage: str, *more: str) -> None:
    state = ("--state-path", "data/state", "--log-path", "data/logs")
    command(daemon, "datacoolie", verb, "--metadata", str(METADATA_PATH), "--stage", stage, *state, *more)


def populate(daemon: Daemon) -> None:
    """``./make.sh example``: batch 1, both stages, the replay of Q1 (recorded in the instance)."""
    land_batch(daemon)
    datacoolie(daemon, "run", "landing2bronze")
    datacoolie(daemon, "run", "bronze2silver")
    replay = ("--dataflow", "orders_bronze_to_silver", "--start", "2024-01-01", "--end", "2024-04-01")
    datacoolie(daemon, "replay", "bronze2silver", *replay, "--chunk-interval-json", '{"months": 1}',
               "--chunk-column", "created_at")  # fmt: skip


def sensor(daemon: Daemon, verb: str, name: str, *more: str) -> None:
    command(daemon, "dagster", "sensor", verb, name, *more, "-w", "workspace.yaml")


def quiet(daemon: Daemon, instance: dg.DagsterInstance, names: tuple[str, ...], count: int = 3) -> None:
    """``count`` more evaluations of each sensor ``names``."""
    seen = {name: ticks(instance, name) for name in names}
    for name in names:
        what = f"{count} more ticks of {name}"
        wait_until(lambda n=name: ticks(instance, n) >= seen[n] + count, TIMEOUT, what, daemon.root / "daemon.log")  # type: ignore[misc]


def stopped(daemon: Daemon, instance: dg.DagsterInstance, name: str, attempts: int = 3) -> None:
    """``name`` was stopped and the daemon has seen it: two more ticks of another sensor (the daemon
    reads the sensors' states again on each pass), no tick of ``name`` left in progress, and its
    stored state still stopped.

    Dagster's sensor daemon can store a tick's state over a stop that landed during that tick, and
    the sensor then runs on (seen once with PostgreSQL); the stop is given again until it holds.
    """
    for _ in range(attempts):
        quiet(daemon, instance, (WATERMARK_SENSOR_NAME,), count=2)
        log = daemon.root / "daemon.log"
        wait_until(lambda: not tick_in_progress(instance, name), TIMEOUT, f"{name}'s last tick", log)
        if all(str(s.status.value) == "STOPPED" for s in instance.all_instigator_state() if s.name == name):
            return
        sensor(daemon, "stop", name)
    raise AssertionError(f"{name} is still running after {attempts} stops")


def tick_in_progress(instance: dg.DagsterInstance, name: str) -> bool:
    states = [s for s in instance.all_instigator_state() if s.name == name]
    latest = [t for s in states for t in instance.get_ticks(s.instigator_origin_id, s.selector_id, limit=1)]
    return any(tick_status(t) == "STARTED" for t in latest)


def test_switched_on_over_the_example_it_runs_exactly_what_changes(
    tmp_path: Path, instance_settings: InstanceSettings
) -> None:
    daemon = prepare(tmp_path, instance_settings.config, instance_settings.env, workspace=WORKSPACE)
    (tmp_path / "defs.py").write_text(CODE_LOCATION, encoding="utf-8")
    log = tmp_path / "daemon.log"
    populate(daemon)

    with running(daemon), daemon.instance() as instance:
        for name in SENSORS:
            sensor(daemon, "start", name)
        # 1. nothing new: the present is every sensor's baseline
        quiet(daemon, instance, SENSORS)
        assert instance.get_runs() == [], log.read_text()[-3000:]

        # 2. batch 2: July's orders, updates of June's, a late file of February's
        land_batch(daemon)
        wait_until(lambda: (SILVER_CUSTOMERS, None, "automation") in runs_of(instance), TIMEOUT, "the readers", log)
        wait_until(lambda: len(runs_of(instance)) >= 5, TIMEOUT, "every run", log)
        settle(daemon, instance, *SENSORS)
        landed = runs_of(instance)
        assert landed == Counter(
            {(BRONZE_ORDERS, None, "sensor"): 1, (BRONZE_CUSTOMERS, None, "sensor"): 1,
             (SILVER_ORDERS, "2024-02", "watermark"): 1, (SILVER_ORDERS, "2024-06..2024-07", "watermark"): 1,
             (SILVER_CUSTOMERS, None, "automation"): 1}
        ), log.read_text()[-3000:]  # fmt: skip
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in instance.get_runs())

        # 3. cron loads batch 3 (August, updates of July, late March) with the source sensor off
        sensor(daemon, "stop", SOURCE_SENSOR_NAME)
        stopped(daemon, instance, SOURCE_SENSOR_NAME)
        land_batch(daemon)
        datacoolie(daemon, "run", "landing2bronze")
        wait_until(lambda: len(runs_of(instance) - landed) >= 3, TIMEOUT, "the readers of the CLI load", log)
        settle(daemon, instance, WATERMARK_SENSOR_NAME, AUTOMATION_SENSOR_NAME)
        cron = runs_of(instance) - landed
        assert cron == Counter(
            {(SILVER_ORDERS, "2024-03", "watermark"): 1, (SILVER_ORDERS, "2024-07..2024-08", "watermark"): 1,
             (SILVER_CUSTOMERS, None, "automation"): 1}
        ), log.read_text()[-3000:]  # fmt: skip

        # 4. the cursors lost: each sensor takes the present as its baseline again, nothing replayed
        before = runs_of(instance)
        for name in (SOURCE_SENSOR_NAME, WATERMARK_SENSOR_NAME):
            sensor(daemon, "cursor", name, "--delete")
        sensor(daemon, "start", SOURCE_SENSOR_NAME)
        quiet(daemon, instance, SENSORS)
        wait_until(lambda: all_finished(instance), TIMEOUT, "every run finished", log)
        assert runs_of(instance) == before, log.read_text()[-3000:]

        # 5. a Dagster stage run loads the next batch (September, updates of August, late January).
        #    The watermark sensor ticks every 2 s while the run commits its tables and records them
        #    only at its end: it never requests a reader the automation follows, and requests the
        #    windows of silver orders (no automation over an unpartitioned upstream) after the run.
        sensor(daemon, "stop", SOURCE_SENSOR_NAME)
        stopped(daemon, instance, SOURCE_SENSOR_NAME)
        saved = cursor_of(instance, WATERMARK_SENSOR_NAME)
        assert saved is not None
        sensor(daemon, "cursor", WATERMARK_SENSOR_NAME, "--set", saved)  # the documented recovery
        before = runs_of(instance)
        land_batch(daemon)
        daemon.launch("datacoolie_landing2bronze")
        wait_until(lambda: len(runs_of(instance) - before) >= 3, TIMEOUT, "the readers of the stage run", log)
        settle(daemon, instance, WATERMARK_SENSOR_NAME, AUTOMATION_SENSOR_NAME)
        staged = runs_of(instance) - before
        assert staged == Counter(
            {(SILVER_ORDERS, "2024-01", "watermark"): 1, (SILVER_ORDERS, "2024-08..2024-09", "watermark"): 1,
             (SILVER_CUSTOMERS, None, "automation"): 1}
        ), log.read_text()[-3000:]  # fmt: skip
        (stage,) = [r for r in instance.get_run_records() if r.dagster_run.job_name == "datacoolie_landing2bronze"]
        assert stage.dagster_run.status == dg.DagsterRunStatus.SUCCESS
        assert stage.end_time is not None
        followed = [r for r in instance.get_run_records() if r.dagster_run.tags.get(TRIGGER_TAG) == "watermark"]
        since = [r for r in followed if r.create_timestamp > stage.create_timestamp]
        assert len(since) == 2  # the stage run's exact readers: requested after it finished, never before
        assert all(r.create_timestamp.timestamp() >= stage.end_time for r in since)
