"""The watermark sensor and partition following on a real ``dagster-daemon``.

* A ``datacoolie run`` (the CLI, no Dagster instance configured) moves bronze watermarks: each
  reader runs once, and not again after the daemon is SIGKILLed and restarted; a later Dagster run
  of the upstream is left to the automation (the watermark sensor requests only the windows nothing
  else follows). On SQLite and PostgreSQL.
* A monthly table over a daily one: the month runs after all its days, never before (SQLite).
"""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from datacoolie_dagster import build_definitions
from datacoolie_dagster.automation.sensing.sensors import AUTOMATION_SENSOR_NAME, TRIGGER_TAG
from datacoolie_dagster.automation.sensing.watermark_sensor import WATERMARK_SENSOR_NAME
from tests.dagster.cli_support import BIN, REPOSITORY
from tests.dagster.conftest import InstanceSettings, land, materialize
from tests.dagster.daemon_support import FINISHED, Daemon, prepare, running, wait_until
from tests.dagster.watermark_support import DAYS, LATE_ORDERS, deploy

pytestmark = pytest.mark.daemon

CODE_LOCATION = """
import dagster as dg
from datacoolie_dagster import build_definitions

defs = build_definitions(
    "metadata.json",
    state_base_path="state",
    include_jobs=False,
    sensor_interval_seconds=2,
    sensor_status=dg.DefaultSensorStatus.RUNNING,
    run_retries=0,
)
"""
WORKSPACE = "load_from:\n  - python_file: {relative_path: defs.py, location_name: followed, working_directory: .}\n"
ORDERS, ORDERS_MONTHLY, EVENTS_MONTHLY = (
    "silver/sales/orders",
    "silver/sales/orders_monthly",
    "silver/sales/events_monthly",
)
TIMEOUT = 180


def start(root: Path, settings: InstanceSettings) -> tuple[Daemon, dg.Definitions]:
    daemon = prepare(root, settings.config, settings.env, workspace=WORKSPACE)
    (root / "defs.py").write_text(CODE_LOCATION, encoding="utf-8")
    metadata = deploy(root)
    return daemon, build_definitions(metadata, state_base_path=root / "state", include_jobs=False)


def cli_run(daemon: Daemon) -> None:
    """``datacoolie run`` as cron would: no DAGSTER_HOME, so nothing tells Dagster."""
    env = {k: v for k, v in daemon.env.items() if k != "DAGSTER_HOME"}
    args = [str(BIN / "datacoolie"), "run", "--metadata", "metadata.json", "--state-path", "state"]
    done = subprocess.run(
        [*args, "--stage", "landing2bronze"], cwd=daemon.root, env=env, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def ticks(instance: dg.DagsterInstance, name: str) -> int:
    states = [s for s in instance.all_instigator_state() if s.name == name]
    return sum(len(instance.get_ticks(s.instigator_origin_id, s.selector_id)) for s in states)


def cursor_of(instance: dg.DagsterInstance, name: str) -> str | None:
    states = [s for s in instance.all_instigator_state() if s.name == name]
    # pinned: dagster 1.13.27 keeps a sensor's cursor on SensorInstigatorData.cursor
    return getattr(states[0].instigator_data, "cursor", None) if states else None


def runs_of(instance: dg.DagsterInstance) -> Counter[tuple[str, str | None, str | None]]:
    """``(table, partition, trigger)`` of every run, each counted."""
    return Counter(
        (key.to_user_string(), _partitions(run.tags), run.tags.get(TRIGGER_TAG))
        for run in instance.get_runs()
        for key in run.asset_selection or []
    )


def _partitions(tags: Mapping[str, str]) -> str | None:
    """A run's partition, or its partition range as ``first..last``."""
    start, end = tags.get("dagster/asset_partition_range_start"), tags.get("dagster/asset_partition_range_end")
    return f"{start}..{end}" if start and end else tags.get("dagster/partition")


def all_finished(instance: dg.DagsterInstance) -> bool:
    return all(r.status in FINISHED for r in instance.get_runs())


def settle(daemon: Daemon, instance: dg.DagsterInstance, *names: str) -> None:
    """Every run finished and two more evaluations of each sensor ``names`` after that."""
    log = daemon.root / "daemon.log"
    wait_until(lambda: all_finished(instance), TIMEOUT, "every run finished", log)
    seen = {name: ticks(instance, name) for name in names}
    for name in names:
        wait_until(lambda n=name: ticks(instance, n) >= seen[n] + 2, TIMEOUT, f"two more ticks of {name}", log)  # type: ignore[misc]
    wait_until(lambda: all_finished(instance), TIMEOUT, "every run finished", log)


def test_a_cli_load_runs_each_reader_once_across_a_crash(
    tmp_path: Path, instance_settings: InstanceSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    daemon, defs = start(tmp_path, instance_settings)
    log = tmp_path / "daemon.log"
    # orders_monthly reads the unpartitioned bronze table: the watermark sensor requests the windows
    # its new rows fall in (one range run, read from bronze's Delta change), and the other readers
    expected = Counter(
        {(ORDERS, None, "watermark"): 1, (ORDERS_MONTHLY, "2024-01..2024-02", "watermark"): 1,
         (EVENTS_MONTHLY, "2024-01", "watermark"): 1}
    )  # fmt: skip

    with running(daemon, crash=True), daemon.instance() as instance:
        wait_until(lambda: cursor_of(instance, WATERMARK_SENSOR_NAME) is not None, TIMEOUT, "the first cursor", log)
        cli_run(daemon)
        wait_until(lambda: sum(runs_of(instance).values()) >= 3, TIMEOUT, "the readers requested", log)
        settle(daemon, instance, WATERMARK_SENSOR_NAME)
    with daemon.instance() as instance:
        assert runs_of(instance) == expected
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in instance.get_runs())

    # SIGKILLed above; restarted: the cursor holds, nothing is requested again
    with running(daemon, crash=True), daemon.instance() as instance:
        settle(daemon, instance, WATERMARK_SENSOR_NAME, AUTOMATION_SENSOR_NAME)
        assert runs_of(instance) == expected

        # a Dagster run of the upstream: silver/sales/orders follows by eager(), not by the sensor
        land(tmp_path, "sales/orders", LATE_ORDERS, batch=2)
        assert materialize(defs, instance, ["bronze/sales/orders"]).success
        wait_until(lambda: (ORDERS, None, "automation") in runs_of(instance), TIMEOUT, "the automation run", log)
        settle(daemon, instance, WATERMARK_SENSOR_NAME, AUTOMATION_SENSOR_NAME)
        after = runs_of(instance) - expected
    # (the test's in-process run of bronze/sales/orders records no asset selection: not counted)
    # the late March order: exactly its window, not the windows between the old and new watermark
    assert after == Counter(
        {(ORDERS, None, "automation"): 1, (ORDERS_MONTHLY, "2024-03", "watermark"): 1}
    ), log.read_text()[-3000:]  # fmt: skip


def materialized_at(instance: dg.DagsterInstance, key: str) -> dict[str, float]:
    """Latest materialization time of each partition of ``key``."""
    records = instance.fetch_materializations(dg.AssetKey.from_user_string(key), limit=100).records
    times: dict[str, float] = {}
    for record in records:
        partition = record.partition_key or ""
        times[partition] = max(times.get(partition, 0.0), record.timestamp)
    return times


def test_the_month_runs_after_all_its_days(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    daemon, defs = start(tmp_path, InstanceSettings("sqlite", REPOSITORY / "dagster.yaml"))
    log = tmp_path / "daemon.log"
    with running(daemon, crash=True), daemon.instance() as instance:
        wait_until(lambda: ticks(instance, AUTOMATION_SENSOR_NAME) >= 1, TIMEOUT, "the automation's first tick", log)
        for day in DAYS[:2]:
            assert materialize(defs, instance, ["bronze/sales/events"], partition_key=day).success
        settle(daemon, instance, AUTOMATION_SENSOR_NAME)
        assert not [r for r in runs_of(instance) if r[0] == EVENTS_MONTHLY], "two of three days: the month waits"

        assert materialize(defs, instance, ["bronze/sales/events"], partition_key=DAYS[2]).success
        wait_until(lambda: any(r[0] == EVENTS_MONTHLY for r in runs_of(instance)), TIMEOUT, "the month's run", log)
        settle(daemon, instance, AUTOMATION_SENSOR_NAME)
        (month,) = [r for r in instance.get_runs() if EVENTS_MONTHLY in _keys(r)]
        record = instance.get_run_record_by_id(month.run_id)
        days = materialized_at(instance, "bronze/sales/events")
        months = materialized_at(instance, EVENTS_MONTHLY)

    assert month.status == dg.DagsterRunStatus.SUCCESS
    assert month.tags.get(TRIGGER_TAG) == "automation"
    assert month.tags.get("dagster/partition") == "2024-01"
    assert sorted(days) == DAYS
    assert record is not None
    assert record.start_time is not None
    assert record.start_time > max(days.values()), "the month started after its last day materialized"
    assert list(months) == ["2024-01"]
    assert months["2024-01"] > max(days.values())


def _keys(run: Any) -> list[str]:
    return [k.to_user_string() for k in run.asset_selection or []]
