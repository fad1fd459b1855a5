"""Cron schedules per stage job, and the catch-up sensor that runs every missed fire once.

Settings come from the factory (``schedules={"bronze2silver": {"cron": "0 * * * *", "timezone":
"Europe/Paris", "catchup": true}}``) or from the dataflows of a stage (``configure.dagster.schedule``,
same keys; the factory wins). Every scheduled run carries ``datacoolie/fire = <schedule>:<fire UTC
ISO>`` and the ``run_key`` of the same value.

Catch-up: Dagster 1.13.27 launches only the latest missed tick after downtime (dagster-io/dagster#10335). With
``catchup: true`` one sensor, :data:`CATCHUP_SENSOR`, requests one run per earlier missed fire. A
fire is never run twice:

* the schedule runs a fire at most once (Dagster's tick store and ``run_key``, per code location);
* the sensor only requests fires *before the schedule's newest tick* in Dagster's tick store. The
  schedule ticks in order and never returns to an earlier fire, so no fire is ever the schedule's
  and the sensor's both — even while the schedule is busy with its newest tick, or when the clock
  passes the next fire between the two. Should the schedule's tick not have run its fire, the
  sensor picks it up once the next tick exists;
* the sensor skips a fire that has a run of THIS code location (tag ``datacoolie/fire`` and
  Dagster's ``dagster/code_location``: two locations may have a stage, hence a schedule, of the
  same name), and Dagster launches each of its ``run_key`` s once.

Fires are counted from the last one recorded, or from when the sensor first saw the schedule. Our stage jobs
are not partitioned, so no fire ever maps to a partition before the first one; a partitioned job
would need that check here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import dagster as dg
from pydantic import ValidationError

from datacoolie_core import DataFlow, MetadataError, MetadataIssue
from datacoolie_core.api import did_you_mean
from datacoolie_dagster.constants import AUTOMATED, CATCHUP, CONFIGURE_KEY, FIRE, SCHEDULE, TRIGGER
from datacoolie_dagster.dagster_internal import CODE_LOCATION_TAG, newest_tick_time
from datacoolie_dagster.location.dataflow_settings import ScheduleSettings, dagster_settings

TRIGGER_TAG = TRIGGER
AUTOMATED_TAG = AUTOMATED
FIRE_TAG = FIRE
SCHEDULE_TAG = SCHEDULE
CATCHUP_TAG = CATCHUP
AUTOMATED_TAGS = {TRIGGER_TAG: "schedule", AUTOMATED_TAG: "true"}
CATCHUP_SENSOR = "datacoolie_schedule_catchup"
MAX_CATCHUP_PER_EVALUATION = 100
"""Runs requested by one evaluation; the cursor then stops at the last one and the next continues."""
_RECENT_RUNS = 50


def schedule_settings(
    dataflows: Iterable[DataFlow], overrides: Mapping[str, ScheduleSettings | Mapping[str, Any]] | None = None
) -> dict[str, ScheduleSettings]:
    """Settings per stage: ``configure.dagster.schedule`` of its dataflows, then ``overrides`` on top.

    Dataflows of a stage that declare a schedule must declare the same one (the others ride along);
    a bad or disagreeing declaration is a MetadataError naming the dataflows.
    """
    declared: dict[str, dict[str, ScheduleSettings]] = {}
    for dataflow in dataflows:
        settings = dagster_settings(dataflow).schedule
        if settings is None:
            continue
        if not dataflow.stage:
            raise _issue(f"dataflow '{dataflow.name}'", "a schedule runs a stage job; give the dataflow a stage")
        declared.setdefault(str(dataflow.stage), {})[str(dataflow.name)] = settings
    result = {stage: _agreed(stage, by_name) for stage, by_name in declared.items()}
    for stage, value in (overrides or {}).items():
        result[stage] = _parse(value, f"stage '{stage}'", "schedules")
    for stage, settings in result.items():
        # the pure check of settings.py, confirmed by Dagster's own parser
        if not dagster_accepts_cron(settings.cron):
            raise _issue(f"stage '{stage}'", f"'{settings.cron}' is not a cron string Dagster accepts")
    return result


def build_schedules(
    stage_jobs: Mapping[str, dg.JobDefinition], settings: Mapping[str, ScheduleSettings]
) -> list[dg.ScheduleDefinition | dg.SensorDefinition]:
    """One RUNNING schedule per scheduled stage job, plus :data:`CATCHUP_SENSOR` if any catches up.

    ``stage_jobs`` maps a stage name to its job; a setting for an unknown stage is a MetadataError.
    """
    for stage in settings:
        if stage not in stage_jobs:
            raise _issue(f"stage '{stage}'", f"no job for this stage{did_you_mean(stage, stage_jobs)}")
    targets = {schedule_name(stage_jobs[s]): (stage_jobs[s], s_settings) for s, s_settings in settings.items()}
    built: list[dg.ScheduleDefinition | dg.SensorDefinition] = [
        _schedule(name, job, s) for name, (job, s) in targets.items()
    ]
    catchup = {name: target for name, target in targets.items() if target[1].catchup}
    if catchup:
        built.append(_catchup_sensor(catchup))
    return built


def schedule_name(job: dg.JobDefinition) -> str:
    return f"{job.name}_schedule"


def fire_id(schedule: str, fire: datetime) -> str:
    """``<schedule>:<fire in UTC, ISO>``: the same for a schedule tick and a catch-up request."""
    return f"{schedule}:{fire.astimezone(UTC).isoformat()}"


def fire_request(schedule: str, job: str, fire: datetime, *, catchup: bool) -> dg.RunRequest:
    """The run of one fire (its ``run_key`` is the fire: Dagster launches it once per instigator)."""
    key = fire_id(schedule, fire)
    tags = AUTOMATED_TAGS | {FIRE_TAG: key, SCHEDULE_TAG: schedule} | ({CATCHUP_TAG: "true"} if catchup else {})
    return dg.RunRequest(run_key=key, job_name=job, tags=tags)


def has_run(instance: dg.DagsterInstance, schedule: str, fire: datetime, location: str | None) -> bool:
    """Whether a run of ``location`` (any, when unknown) was made for the fire."""
    return bool(instance.get_runs_count(dg.RunsFilter(tags={FIRE_TAG: fire_id(schedule, fire)} | _of(location))))


def _of(location: str | None) -> dict[str, str]:
    # Dagster tags every run launched from a code location with it (CODE_LOCATION_TAG)
    return {CODE_LOCATION_TAG: location} if location else {}


def catchup_requests(
    instance: dg.DagsterInstance,
    schedules: Mapping[str, tuple[str, ScheduleSettings]],
    cursor: str | None,
    now: datetime,
    ticked: Mapping[str, datetime | None] | None = None,
    location: str | None = None,
) -> tuple[list[dg.RunRequest], str]:
    """Run requests for the fires each schedule missed before ``now``, and the new cursor.

    ``schedules`` maps a schedule name to (job name, settings). The cursor is JSON ``{schedule: time
    up to which fires are handled}``; without an entry, the newest run tagged with a fire of the
    schedule is the start, and without one either the start is ``now``: fires are counted from when
    the sensor first saw the schedule, never from before it was registered. The newest fire at or
    before ``now`` is the schedule's own and is left to it.

    ``ticked`` (``{schedule: fire time of its newest tick in Dagster's tick store}``, ``None`` when it
    never ticked) makes the hand-over race-free: only fires *before* the schedule's newest tick are
    requested. Dagster's schedule ticks in order and never goes back to an earlier fire, so such a
    fire is never run by the schedule — even while the schedule is still busy with its newest tick,
    or when the clock passes the next fire between the two evaluations. The fire of that newest tick
    is the schedule's, whatever ``now`` says. ``location``: only runs of this code location count.
    """
    handled = _read_cursor(cursor)
    requests: list[dg.RunRequest] = []
    for name, (job, settings) in schedules.items():
        last = handled.get(name) or _last_recorded_fire(instance, name, location)
        if last is None:
            # nothing recorded: a fire before now was due before the schedule was registered (Dagster
            # counts a new schedule's ticks from when the daemon first sees it, too), so none is missed
            handled[name] = now
            continue
        bound = now if ticked is None else ticked.get(name)
        if bound is None:  # the schedule never ticked: it has not started counting fires either
            handled[name] = last
            continue
        fires = [f for f in _fires_before_latest(settings, last, now) if ticked is None or f < bound]
        handled[name] = last
        for fire in fires[: max(0, MAX_CATCHUP_PER_EVALUATION - len(requests))]:
            if not has_run(instance, name, fire, location):
                requests.append(fire_request(name, job, fire, catchup=True))
            handled[name] = fire
    cursor_out = {name: fire.astimezone(UTC).isoformat() for name, fire in handled.items()}
    return requests, json.dumps(cursor_out, sort_keys=True)


def dagster_accepts_cron(cron: str) -> bool:
    """Whether Dagster takes ``cron`` as a schedule's cron string (its own check, via the public API)."""
    try:
        dg.ScheduleDefinition(name="datacoolie_cron_check", cron_schedule=cron, job_name="datacoolie_cron_check")
    except dg.DagsterInvalidDefinitionError:
        return False
    return True


_FIRE_FORMAT = "%Y-%m-%dT%H:%M:%S%z"
"""Partition keys of :func:`_fires_before_latest`: the fire with its UTC offset (unique across DST)."""


def _fires_before_latest(settings: ScheduleSettings, last: datetime, now: datetime) -> list[datetime]:
    """Fires in ``(last, latest)`` (in UTC) where ``latest`` is the newest fire at or before ``now``.

    A cron time-window partitions definition has one window per fire, and its windows that ended by
    ``now`` are exactly the fires before the latest; Dagster's schedules and partitions iterate a cron
    string with the same code (daylight saving included), so these are the fires the schedule made.
    The definition's start is read as wall time in the timezone, and its first window begins at the
    first fire at or after it: a day before ``last``, in the schedule's zone, leaves none out.
    """
    start = (last - timedelta(days=1)).astimezone(ZoneInfo(settings.timezone))
    windows = dg.TimeWindowPartitionsDefinition(
        start=start, cron_schedule=settings.cron, timezone=settings.timezone, fmt=_FIRE_FORMAT
    )
    keys = windows.get_partition_keys(current_time=now)
    fires = (datetime.strptime(key, _FIRE_FORMAT).astimezone(UTC) for key in keys)
    return [fire for fire in fires if fire > last]


def _last_recorded_fire(instance: dg.DagsterInstance, schedule: str, location: str | None) -> datetime | None:
    runs = instance.get_runs(dg.RunsFilter(tags={SCHEDULE_TAG: schedule} | _of(location)), limit=_RECENT_RUNS)
    fires = [datetime.fromisoformat(r.tags[FIRE_TAG].removeprefix(f"{schedule}:")) for r in runs if FIRE_TAG in r.tags]
    return max(fires, default=None)


def _read_cursor(cursor: str | None) -> dict[str, datetime]:
    if not cursor:
        return {}
    try:
        return {name: datetime.fromisoformat(value) for name, value in json.loads(cursor).items()}
    except (ValueError, TypeError, AttributeError) as e:
        # a silent restart from zero would skip (or repeat) fires: refuse instead
        raise MetadataError(
            f"sensor '{CATCHUP_SENSOR}': unreadable cursor {cursor!r} ({e}); fix or clear it with "
            f"`dagster sensor cursor {CATCHUP_SENSOR} --set '{{}}'`"
        ) from e


def _schedule(name: str, job: dg.JobDefinition, settings: ScheduleSettings) -> dg.ScheduleDefinition:
    @dg.schedule(
        name=name,
        cron_schedule=settings.cron,
        execution_timezone=settings.timezone,
        job=job,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=f"Run {job.name} at '{settings.cron}' ({settings.timezone}); catch-up {settings.catchup}.",
    )
    def _fire(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
        # no check for a catch-up run: the sensor never makes a fire at or after this tick
        return fire_request(name, job.name, context.scheduled_execution_time or datetime.now(UTC), catchup=False)

    return _fire


def _catchup_sensor(schedules: Mapping[str, tuple[dg.JobDefinition, ScheduleSettings]]) -> dg.SensorDefinition:
    targets = {name: (job.name, settings) for name, (job, settings) in schedules.items()}

    @dg.sensor(
        name=CATCHUP_SENSOR,
        jobs=list(dict.fromkeys(job for job, _ in schedules.values())),
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=30,
        description="Requests one run per fire a catch-up schedule missed (Dagster runs only the latest).",
    )
    def _catchup(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        ticked = _newest_ticks(context, targets)
        location = context.code_location_origin.location_name if context.code_location_origin else None
        now = datetime.now(UTC)
        requests, cursor = catchup_requests(context.instance, targets, context.cursor, now, ticked, location)
        return dg.SensorResult(run_requests=requests, cursor=cursor)

    return _catchup


def _newest_ticks(context: dg.SensorEvaluationContext, schedules: Iterable[str]) -> dict[str, datetime | None] | None:
    """The fire time of each schedule's newest tick, from the instance's tick store.

    The schedules live in the sensor's own code location and repository; ``None`` when the context
    does not say which (a sensor evaluated outside the daemon, e.g. ``build_sensor_context``).
    """
    location, repository = context.code_location_origin, context.repository_name
    if location is None or repository is None:
        return None
    return {name: newest_tick_time(context.instance, location, repository, name) for name in schedules}


def _parse(value: ScheduleSettings | Mapping[str, Any], subject: str, path: str) -> ScheduleSettings:
    if isinstance(value, ScheduleSettings):
        return value
    try:
        return ScheduleSettings.model_validate(value)
    except ValidationError as e:
        issues = [
            MetadataIssue(".".join([path, *(str(p) for p in err["loc"])]), err["msg"], subject=subject)
            for err in e.errors(include_url=False)
        ]
        raise MetadataError(issues) from None


def _agreed(stage: str, by_name: Mapping[str, ScheduleSettings]) -> ScheduleSettings:
    if len(set(by_name.values())) > 1:
        names = ", ".join(f"'{n}'" for n in by_name)
        raise _issue(
            f"dataflows {names}",
            f"stage '{stage}' has one job: its dataflows must declare the same schedule; "
            "declare it on one dataflow or pass schedules= to build_definitions",
        )
    return next(iter(by_name.values()))


def _issue(subject: str, message: str) -> MetadataError:
    return MetadataError([MetadataIssue(f"configure.{CONFIGURE_KEY}.schedule", message, subject=subject)])
