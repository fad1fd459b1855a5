"""``datacoolie-dagster tick`` against a temp DAGSTER_HOME: one daemon pass, then exit.

The code location is the bundled example plus a stage schedule (ours) and a one-shot sensor; runs go
to the instance's queue (nobody dequeues them here), which is exactly what ``tick`` promises.
"""

from __future__ import annotations

import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.scheduler.instigation import InstigatorType, ScheduleInstigatorData

from datacoolie_dagster.commands.cli import main
from tests.dagster.cli_support import Deployment, deploy

LOCATION = """
from pathlib import Path

import dagster as dg

import datacoolie_dagster.definitions as example_location
from datacoolie_dagster.automation.limits import build_limits_sensor
from datacoolie_dagster.automation.schedules import ScheduleSettings, build_schedules

JOB = next(j for j in example_location.defs.jobs if j.name == "datacoolie_landing2bronze")
built = build_schedules({"landing2bronze": JOB}, {"landing2bronze": ScheduleSettings(cron="0 * * * *")})


@dg.sensor(name="landing_once", jobs=[JOB], minimum_interval_seconds=1, default_status=dg.DefaultSensorStatus.RUNNING)
def landing_once(context):
    if (Path(__file__).parent / "break_the_sensor").exists():
        raise RuntimeError("the sensor is broken on purpose")
    return dg.RunRequest(run_key="landing-once")


limits = build_limits_sensor({"datacoolie/landing2bronze": 2})
defs = dg.Definitions.merge(
    example_location.defs, dg.Definitions(schedules=built, sensors=[landing_once, limits])
)
"""
SCHEDULE = "datacoolie_landing2bronze_schedule"


@pytest.fixture
def deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Deployment:
    deployed = deploy(tmp_path)
    (deployed.project / "tick_location.py").write_text(LOCATION, encoding="utf-8")
    for name, value in deployed.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("DATACOOLIE_METADATA", raising=False)
    monkeypatch.chdir(deployed.project)
    return deployed


def tick(deployment: Deployment) -> int:
    time.sleep(1.1)  # the sensor's minimum interval, as the daemon honours it
    return main(["tick", "-f", "tick_location.py", "--instance", str(deployment.home)])


def runs(instance: dg.DagsterInstance) -> list[tuple[str, str]]:
    """(origin, status) of every run: the schedule's fire or the sensor's run key."""
    return sorted(
        (r.tags.get("datacoolie/fire", "").split(":")[0] or r.tags.get("dagster/run_key", ""), r.status.value)
        for r in instance.get_runs()
    )


def rewind_schedule(instance: dg.DagsterInstance, hours: int) -> None:
    """As if the schedule's state had been recorded ``hours`` ago (a fire is now due)."""
    (state,) = instance.all_instigator_state(instigator_type=InstigatorType.SCHEDULE)
    data = state.instigator_data
    assert isinstance(data, ScheduleInstigatorData)
    rewound = ScheduleInstigatorData(data.cron_schedule, start_timestamp=time.time() - hours * 3600)
    instance.update_instigator_state(state.with_data(rewound))


@pytest.mark.slow
def test_tick_submits_what_is_due_once_and_reports_a_failed_evaluation(
    deployment: Deployment, capsys: pytest.CaptureFixture[str]
) -> None:
    with dg.DagsterInstance.from_config(str(deployment.home)) as instance:
        # tick 1 — the sensor is due; the new schedule only records when it started (as the daemon does)
        assert tick(deployment) == 0
        assert runs(instance) == [("landing-once", "QUEUED")]
        # ... and the summary says so, with the id of the run it queued
        (sensed,) = instance.get_run_ids()
        printed = capsys.readouterr().out.splitlines()
        assert f"sensor 'landing_once': queued: 1 run(s): {sensed}" in printed
        assert f"schedule '{SCHEDULE}': not evaluated: not due yet" in printed
        assert (
            "sensor 'datacoolie_sources': not evaluated: stopped (start it in the UI, or: dagster sensor start datacoolie_sources)"
            in printed
        )
        # the pool limits sensor (running by default) stored max_runs in the instance
        assert instance.event_log_storage.get_concurrency_info("datacoolie/landing2bronze").slot_count == 2

        # tick 2 — the schedule's state is hours old: its latest fire is due; the sensor's key ran already
        rewind_schedule(instance, hours=3)
        assert tick(deployment) == 0
        assert runs(instance) == [(SCHEDULE, "QUEUED"), ("landing-once", "QUEUED")]
        fired = next(r.run_id for r in instance.get_runs() if r.run_id != sensed)
        printed = capsys.readouterr().out.splitlines()
        assert f"schedule '{SCHEDULE}': queued: 1 run(s): {fired}" in printed
        assert any(line.startswith("sensor 'landing_once': skipped: ") for line in printed), printed

        # tick 3 — nothing due
        assert tick(deployment) == 0
        assert len(instance.get_runs()) == 2

        # tick 4 — an evaluation fails: exit 1, nothing submitted
        (deployment.project / "break_the_sensor").touch()
        capsys.readouterr()
        assert tick(deployment) == 1
        assert "sensor 'landing_once' failed" in capsys.readouterr().err
        assert len(instance.get_runs()) == 2
