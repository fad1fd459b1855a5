"""Schedule catch-up on a real ``dagster-daemon``, on SQLite and PostgreSQL side by side.

The code location (``tests.dagster.catchup_location``) has two stages on a minutely cron: ``caught_up``
(``catchup: true``) and ``latest_only`` (``catchup: false``). Each daemon first registers them (the
schedules' start and the catch-up sensor's cursor are stored), is killed, stays down for
:data:`MISSED` minute boundaries and is restarted. Both storages share the one wall-clock wait.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from datacoolie_dagster.automation.schedules import CATCHUP_SENSOR, CATCHUP_TAG, FIRE_TAG
from tests.dagster.conftest import LINEAGE, REPOSITORY, dataflow, write_metadata
from tests.dagster.daemon_support import Daemon, prepare, running, wait_until

pytestmark = pytest.mark.daemon  # the whole module runs a real Dagster daemon

MISSED = 2
"""Fires the daemons are down for."""
CAUGHT_UP, LATEST_ONLY = "datacoolie_caught_up", "datacoolie_latest_only"
SCHEDULES = (f"{CAUGHT_UP}_schedule", f"{LATEST_ONLY}_schedule")
WORKSPACE = f"""load_from:
  - python_module:
      module_name: tests.dagster.catchup_location
      location_name: catchup_location
      working_directory: {REPOSITORY}
"""


def two_stages(document: dict[str, Any]) -> None:
    """One dataflow per stage, each reading a landing folder the test leaves empty."""
    document["dataflows"] = [
        dataflow(document, "orders_eu_to_bronze") | {"stage": "caught_up"},
        dataflow(document, "customers_to_bronze") | {"stage": "latest_only"},
    ]


def deploy(root: Path, config: Path, env: dict[str, str]) -> Daemon:
    daemon = prepare(root, config, env, workspace=WORKSPACE)
    write_metadata(root, LINEAGE, two_stages)
    for folder in ("sales/orders_eu", "crm/customers"):
        (root / "lake" / "landing" / folder).mkdir(parents=True)
    return daemon


@contextmanager
def up(daemons: Sequence[Daemon]) -> Iterator[list[dg.DagsterInstance]]:
    """Every daemon running (SIGKILLed afterwards: a crash, nothing flushed), and its instance."""
    with ExitStack() as stack:
        for daemon in daemons:
            stack.enter_context(running(daemon, crash=True))
        # opened with every daemon's environment set: the PostgreSQL settings are env references
        yield [stack.enter_context(daemon.instance()) for daemon in daemons]


def wait_all(
    daemons: Sequence[Daemon],
    instances: Sequence[dg.DagsterInstance],
    condition: Callable[[dg.DagsterInstance], bool],
    what: str,
) -> None:
    for daemon, instance in zip(daemons, instances, strict=True):
        wait_until(partial(condition, instance), 90, f"{what} ({daemon.root.name})", daemon.root / "daemon.log")


def registered(instance: dg.DagsterInstance) -> bool:
    """Both schedules have a stored state and the catch-up sensor has stored a cursor."""
    states = {s.name: s for s in instance.all_instigator_state()}
    sensor = states.get(CATCHUP_SENSOR)
    # pinned: dagster 1.13.27 keeps a sensor's cursor on SensorInstigatorData.cursor
    cursor = getattr(sensor.instigator_data, "cursor", None) if sensor else None
    return set(SCHEDULES) <= states.keys() and bool(cursor)


def catchup_ticks(instance: dg.DagsterInstance) -> int:
    (state,) = [s for s in instance.all_instigator_state() if s.name == CATCHUP_SENSOR]
    return len(instance.get_ticks(state.instigator_origin_id, state.selector_id))


def fires(instance: dg.DagsterInstance, job: str) -> list[str]:
    """The fire (UTC ISO) of every run of ``job``, sorted; a fire run twice appears twice."""
    runs = instance.get_runs(dg.RunsFilter(job_name=job))
    return sorted(r.tags.get(FIRE_TAG, "untagged:").split(":", 1)[1] for r in runs)


def made(instance: dg.DagsterInstance, until: datetime) -> dict[str, list[str]]:
    """Fires per job up to ``until``; a later one (a slow machine) is the schedule's own, left out."""
    return {job: [f for f in fires(instance, job) if f <= until.isoformat()] for job in (CAUGHT_UP, LATEST_ONLY)}


def runs_made(instance: dg.DagsterInstance, until: datetime) -> int:
    return sum(len(fs) for fs in made(instance, until).values())


def test_a_restart_runs_each_missed_fire_once_with_catchup_and_only_the_latest_without(
    tmp_path: Path, postgres_database: dict[str, str]
) -> None:
    daemons = [
        deploy(tmp_path / "sqlite", REPOSITORY / "dagster.yaml", {}),
        deploy(tmp_path / "postgres", REPOSITORY / "dagster.postgres.yaml", postgres_database),
    ]
    # registration must end before the next minute boundary, so that no fire happens while up
    wait_until(lambda: datetime.now(UTC).second < 30, 35, "the first half of a minute")
    started = datetime.now(UTC)
    with up(daemons) as instances:
        wait_all(daemons, instances, registered, "the schedules and the catch-up cursor stored")
    stopped = datetime.now(UTC)
    minute = stopped.replace(second=0, microsecond=0)
    assert minute == started.replace(second=0, microsecond=0), "registration crossed a fire: the test needs it not to"

    # down for MISSED fires; restarted just after the last one
    missed = [minute + timedelta(minutes=n) for n in range(1, MISSED + 1)]
    wait_until(lambda: datetime.now(UTC) > missed[-1] + timedelta(seconds=2), 130, "the missed fires to pass")
    expected = {CAUGHT_UP: [f.isoformat() for f in missed], LATEST_ONLY: [missed[-1].isoformat()]}

    with up(daemons) as instances:
        wait_all(daemons, instances, lambda i: runs_made(i, missed[-1]) >= MISSED + 1, "a run per missed fire")
        # the catch-up sensor evaluates again with every run made: nothing more, nothing twice
        ticks = {id(i): catchup_ticks(i) for i in instances}
        wait_all(daemons, instances, lambda i: catchup_ticks(i) > ticks[id(i)], "another catch-up evaluation")
        after = [made(i, missed[-1]) for i in instances]
        by_sensor = [[r.tags[FIRE_TAG] for r in i.get_runs() if CATCHUP_TAG in r.tags] for i in instances]

    assert after == [expected, expected]
    # the sensor made every missed fire but the newest, which is the schedule's own tick
    assert [sorted(f.split(":", 1)[1] for f in fs) for fs in by_sensor] == [expected[CAUGHT_UP][:-1]] * 2
