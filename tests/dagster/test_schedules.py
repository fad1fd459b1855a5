"""Stage schedules from factory settings or ``configure.dagster.schedule``, and the catch-up sensor.

Catch-up runs against a real instance with a fixed clock: the requests are recorded as runs (what
the daemon's submission leaves behind), so the tag dedupe between schedule and sensor is real.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from datacoolie_core import FileProvider, MetadataError
from datacoolie_dagster.automation.schedules import (
    CATCHUP_SENSOR,
    FIRE_TAG,
    ScheduleSettings,
    build_schedules,
    catchup_requests,
    schedule_settings,
)
from tests.dagster.conftest import dataflow, definitions, write_metadata

SILVER_JOB = "datacoolie_bronze2silver"
SILVER_SCHEDULE = "datacoolie_bronze2silver_schedule"
HOURLY = {"cron": "0 * * * *", "timezone": "Europe/Paris", "catchup": True}


@pytest.fixture
def defs(tmp_path: Path) -> dg.Definitions:
    return definitions(tmp_path)


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as test_instance:
        yield test_instance


def stage_jobs(defs: dg.Definitions) -> dict[str, dg.JobDefinition]:
    jobs = [j for j in defs.jobs or [] if isinstance(j, dg.JobDefinition)]
    return {j.tags["datacoolie/stage"]: j for j in jobs if j.tags.get("datacoolie/stage", "*") != "*"}


def scheduled(defs: dg.Definitions, settings: dict[str, Any]) -> dg.Definitions:
    """The code location with the schedules built from ``settings`` (stage -> settings)."""
    parsed = {stage: ScheduleSettings.model_validate(value) for stage, value in settings.items()}
    built = build_schedules(stage_jobs(defs), parsed)
    return dg.Definitions.merge(
        defs,
        dg.Definitions(
            schedules=[b for b in built if isinstance(b, dg.ScheduleDefinition)],
            sensors=[b for b in built if isinstance(b, dg.SensorDefinition)],
        ),
    )


def settings_from(tmp_path: Path, edit: Any, overrides: dict[str, Any] | None = None) -> dict[str, ScheduleSettings]:
    provider = FileProvider(
        write_metadata(tmp_path, Path(__file__).parents[1] / "fixtures/metadata/dagster_lineage.json", edit)
    )
    provider.initialize()
    return schedule_settings(provider.get_dataflows(), overrides)


def declare(*names: str, **schedule: Any) -> Any:
    def edit(document: dict[str, Any]) -> None:
        for name in names:
            dataflow(document, name).setdefault("configure", {})["dagster"] = {"schedule": schedule}

    return edit


def test_factory_settings_give_one_running_schedule_per_stage_with_the_automated_tags(
    defs: dg.Definitions, instance: dg.DagsterInstance
) -> None:
    merged = scheduled(defs, {"bronze2silver": HOURLY | {"catchup": False}, "silver2gold": {"cron": "30 6 * * *"}})

    schedules = {s.name: s for s in merged.schedules or [] if isinstance(s, dg.ScheduleDefinition)}
    assert {n: (s.cron_schedule, s.execution_timezone, s.job_name) for n, s in schedules.items()} == {
        SILVER_SCHEDULE: ("0 * * * *", "Europe/Paris", SILVER_JOB),
        "datacoolie_silver2gold_schedule": ("30 6 * * *", "UTC", "datacoolie_silver2gold"),
    }
    assert {s.default_status for s in schedules.values()} == {dg.DefaultScheduleStatus.RUNNING}
    # catchup false everywhere: no catch-up sensor, only Dagster's own latest-tick behaviour
    assert "datacoolie_schedule_catchup" not in {s.name for s in merged.sensors or []}

    fire = datetime(2024, 3, 1, 10, tzinfo=UTC)
    context = dg.build_schedule_context(instance=instance, scheduled_execution_time=fire)
    data = schedules[SILVER_SCHEDULE].evaluate_tick(context)
    assert [(r.run_key, r.tags) for r in data.run_requests or []] == [
        (
            f"{SILVER_SCHEDULE}:2024-03-01T10:00:00+00:00",
            {
                "datacoolie/trigger": "schedule",
                "datacoolie/automated": "true",
                FIRE_TAG: f"{SILVER_SCHEDULE}:2024-03-01T10:00:00+00:00",
                "datacoolie/schedule": SILVER_SCHEDULE,
                "dagster/schedule_name": SILVER_SCHEDULE,
            },
        )
    ]


def test_configure_declares_a_stage_schedule_and_factory_settings_win(tmp_path: Path) -> None:
    edit = declare("orders_to_silver", "customers_to_silver", cron="*/15 * * * *", catchup=True)

    assert settings_from(tmp_path, edit) == {"bronze2silver": ScheduleSettings(cron="*/15 * * * *", catchup=True)}
    assert settings_from(tmp_path, edit, {"bronze2silver": {"cron": "0 1 * * *"}}) == {
        "bronze2silver": ScheduleSettings(cron="0 1 * * *")
    }


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: (declare("orders_to_silver", cron="0 * * * *")(d), declare("customers_to_silver", cron="5 * * * *")(d)),
         "dataflows 'orders_to_silver', 'customers_to_silver'"),
        (declare("orders_to_silver", cron="every hour"), "not a 5-field cron"),
        (declare("orders_to_silver", cron="0 * * * *", timezone="Mars/Olympus"), "unknown time zone"),
        (declare("orders_to_silver", cron="0 * * * *", cron_typo=1), "cron_typo"),
    ],
    ids=["stage-disagrees", "bad-cron", "bad-timezone", "unknown-key"],
)  # fmt: skip
def test_bad_schedule_declarations_are_metadata_errors_naming_the_dataflows(
    tmp_path: Path, edit: Any, message: str
) -> None:
    with pytest.raises(MetadataError, match=message) as error:
        settings_from(tmp_path, edit)
    assert "orders_to_silver" in str(error.value)


def test_a_setting_for_an_unknown_stage_suggests_the_nearest(defs: dg.Definitions) -> None:
    with pytest.raises(MetadataError, match="did you mean 'bronze2silver'"):
        build_schedules(stage_jobs(defs), {"bronze2silvr": ScheduleSettings(cron="0 * * * *")})


def record(instance: dg.DagsterInstance, defs: dg.Definitions, requests: list[dg.RunRequest]) -> None:
    """What the daemon's submission leaves behind: one run per request, carrying its tags."""
    for request in requests:
        job = defs.resolve_job_def(request.job_name or SILVER_JOB)
        instance.create_run_for_job(job, run_config={}, tags={**request.tags, "dagster/run_key": request.run_key or ""})


def fires(instance: dg.DagsterInstance) -> list[str]:
    return sorted(r.tags[FIRE_TAG].split(":", 1)[1] for r in instance.get_runs() if FIRE_TAG in r.tags)


def test_catchup_runs_each_missed_fire_once_and_never_twice(defs: dg.Definitions, instance: dg.DagsterInstance) -> None:
    merged = scheduled(defs, {"bronze2silver": HOURLY})
    schedule = merged.resolve_schedule_def(SILVER_SCHEDULE)
    targets = {SILVER_SCHEDULE: (SILVER_JOB, ScheduleSettings.model_validate(HOURLY))}

    def tick(hour: int) -> list[dg.RunRequest]:
        context = dg.build_schedule_context(
            instance=instance, scheduled_execution_time=datetime(2024, 3, 1, hour, tzinfo=UTC)
        )
        return list(schedule.evaluate_tick(context).run_requests or [])

    # 08:00 — the schedule runs its fire; the sensor starts from it
    record(instance, merged, tick(8))
    requests, cursor = catchup_requests(instance, targets, None, datetime(2024, 3, 1, 8, 10, tzinfo=UTC))
    assert requests == []

    # the daemon is down 09:00..12:00 (N = 4 fires); at 12:30 the schedule runs only the latest
    record(instance, merged, tick(12))
    now = datetime(2024, 3, 1, 12, 30, tzinfo=UTC)
    requests, cursor = catchup_requests(instance, targets, cursor, now)
    assert [r.run_key for r in requests] == [
        f"{SILVER_SCHEDULE}:2024-03-01T{h}:00:00+00:00" for h in ("09", "10", "11")
    ]
    assert {r.tags["datacoolie/catchup"] for r in requests} == {"true"}
    record(instance, merged, requests)
    assert fires(instance) == [f"2024-03-01T{h}:00:00+00:00" for h in ("08", "09", "10", "11", "12")]

    # the catch-up logic runs again, with its cursor and with a lost cursor; the schedule re-ticks 12:00
    assert catchup_requests(instance, targets, cursor, now)[0] == []
    assert catchup_requests(instance, targets, None, now)[0] == []
    assert catchup_requests(instance, targets, json.dumps({SILVER_SCHEDULE: "2024-03-01T07:00:00+00:00"}), now)[0] == []
    # a re-tick asks for the fire under the same run_key, which Dagster launches once per schedule
    assert [r.run_key for r in tick(12)] == [f"{SILVER_SCHEDULE}:2024-03-01T12:00:00+00:00"]
    assert len(instance.get_runs()) == 5


def test_with_nothing_recorded_fires_count_from_the_first_evaluation(instance: dg.DagsterInstance) -> None:
    targets = {SILVER_SCHEDULE: (SILVER_JOB, ScheduleSettings.model_validate(HOURLY))}

    # registered at 08:10: no fire-tagged run, no cursor — the 08:00 fire was due before registration
    requests, cursor = catchup_requests(instance, targets, None, datetime(2024, 3, 1, 8, 10, tzinfo=UTC))
    assert requests == []

    # down until 10:30: 09:00 was missed; 10:00 is the schedule's own; 08:00 is never run
    requests, _ = catchup_requests(instance, targets, cursor, datetime(2024, 3, 1, 10, 30, tzinfo=UTC))
    assert [r.run_key for r in requests] == [f"{SILVER_SCHEDULE}:2024-03-01T09:00:00+00:00"]


def test_the_catchup_sensor_evaluates_against_the_instance_and_rejects_an_unreadable_cursor(
    defs: dg.Definitions, instance: dg.DagsterInstance
) -> None:
    yearly = {"cron": "0 0 1 1 *", "catchup": True}  # the real clock: a yearly cron cannot roll over mid-test
    merged = scheduled(defs, {"bronze2silver": yearly, "silver2gold": {"cron": "0 6 * * *"}})
    sensor = merged.resolve_sensor_def(CATCHUP_SENSOR)
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING

    # a fresh sensor records where it starts and requests nothing; only catch-up schedules are tracked
    first = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=None, definitions=merged))
    assert first.run_requests == []
    assert list(json.loads(first.cursor or "")) == [SILVER_SCHEDULE]

    # last handled 3 years ago: the two fires before this year's (the schedule's own) are requested
    year = datetime.now(UTC).year
    cursor = json.dumps({SILVER_SCHEDULE: datetime(year - 3, 1, 1, tzinfo=UTC).isoformat()})
    data = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=cursor, definitions=merged))
    assert [r.run_key for r in data.run_requests or []] == [
        f"{SILVER_SCHEDULE}:{year - 2}-01-01T00:00:00+00:00",
        f"{SILVER_SCHEDULE}:{year - 1}-01-01T00:00:00+00:00",
    ]
    assert [r.job_name for r in data.run_requests or []] == [SILVER_JOB, SILVER_JOB]

    with pytest.raises(Exception, match="unreadable cursor"):
        sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor="not json", definitions=merged))


def test_only_fires_before_the_schedules_newest_tick_are_caught_up(instance: dg.DagsterInstance) -> None:
    targets = {SILVER_SCHEDULE: (SILVER_JOB, ScheduleSettings.model_validate(HOURLY))}
    cursor = json.dumps({SILVER_SCHEDULE: "2024-03-01T07:00:00+00:00"})
    now = datetime(2024, 3, 1, 11, 0, 5, tzinfo=UTC)  # just past the 11:00 fire

    # the schedule is still busy with its 10:00 tick (no run yet): 10:00 is its own, not the sensor's
    ticked = {SILVER_SCHEDULE: datetime(2024, 3, 1, 10, tzinfo=UTC)}
    requests, _ = catchup_requests(instance, targets, cursor, now, ticked)
    assert [r.run_key for r in requests] == [f"{SILVER_SCHEDULE}:2024-03-01T0{h}:00:00+00:00" for h in (8, 9)]

    # the schedule never ticked since the daemon came back: it has not started counting, nothing yet
    assert catchup_requests(instance, targets, cursor, now, {SILVER_SCHEDULE: None})[0] == []


def test_only_runs_of_this_code_location_count_for_a_fire(defs: dg.Definitions, instance: dg.DagsterInstance) -> None:
    """Two locations with a ``bronze2silver`` stage share the instance: each catches up its own fires."""
    merged = scheduled(defs, {"bronze2silver": HOURLY})
    targets = {SILVER_SCHEDULE: (SILVER_JOB, ScheduleSettings.model_validate(HOURLY))}
    theirs = {FIRE_TAG: f"{SILVER_SCHEDULE}:2024-03-01T09:00:00+00:00", "dagster/code_location": "location-a"}
    record(instance, merged, [dg.RunRequest(run_key="x", job_name=SILVER_JOB, tags=theirs)])
    cursor = json.dumps({SILVER_SCHEDULE: "2024-03-01T08:00:00+00:00"})
    now, ticked = datetime(2024, 3, 1, 10, 30, tzinfo=UTC), {SILVER_SCHEDULE: datetime(2024, 3, 1, 10, tzinfo=UTC)}

    assert catchup_requests(instance, targets, cursor, now, ticked, location="location-a")[0] == []
    (ours,) = catchup_requests(instance, targets, cursor, now, ticked, location="location-b")[0]
    assert ours.run_key == f"{SILVER_SCHEDULE}:2024-03-01T09:00:00+00:00"
