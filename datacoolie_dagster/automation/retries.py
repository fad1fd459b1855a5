"""Retries of failed automated runs: 60 s doubling with each attempt, up to 10 % jitter, never manual runs.

Dagster's own ``run_retries`` re-launches a failed run *at once* and also retries runs a person
launched, so the instance keeps it off (``run_retries.max_retries: 0`` in ``dagster.yaml``) and this
sensor does the retrying instead:

* **Which runs.** A run is *automated* when it carries ``datacoolie/automated: "true"`` (our sensors,
  schedules and backfill CLI set it), ``dagster/backfill`` (any backfill, also one started in the UI)
  or ``datacoolie/backfill``. Every other run is manual and is never retried.
* **One budget per dataflow.** A dataflow that fails is retried by the driver inside its run, up to
  the resource's ``retry_count``; its step then fails with ``datacoolie/final_failure`` in its
  metadata, and so does a step refused because the metadata changed since the code location loaded.
  A run with such a step is not re-launched (``datacoolie/retry: <reason>``): the sensor's retries
  are for runs that failed around their dataflows (a dead run worker, a crashed step, an
  unreachable code server), so a dataflow's attempts never multiply (``docs/snapshot-retries.md``).
* **When.** Retry ``n`` (1, 2, …) of a run that failed is due ``base * 2**(n-1) * (1 + U(0, jitter))``
  seconds after the failure (:func:`retry_delay`), up to ``max_retries`` retries per root run (a
  ``datacoolie/run_retries`` run tag overrides the budget). A run whose process died is retried at
  once (delay 0), within the same budget (:func:`is_process_death`). Under the default run launcher
  the code server notices a killed run worker within 0.5 s and fails the run *without* a
  ``dagster/failure_reason``, logging "Run execution process for … was terminated by signal 9
  (SIGKILL)"; run monitoring takes no part (that launcher has no worker health check). The retry
  then starts one sensor evaluation and one queue dequeue later.
* **How.** A sensor cannot sleep for minutes: each evaluation (1) finds runs that failed since its
  cursor, decides their retry and records the due time on the failed run (tag
  ``datacoolie/retry_due_at``, so a re-evaluation after a crash reuses it and the jitter never
  changes) and in the cursor, then (2) requests the retries that are due. A retry re-executes the
  same job, run config, asset selection, partition and user tags, plus ``datacoolie/retry_number``,
  ``datacoolie/root_run_id`` and ``datacoolie/parent_run_id``; its ``run_key`` is
  ``retry:<root run id>:<n>``, so Dagster launches each retry once even if the sensor asks twice.
  Like Dagster's own retries, the failed run gets ``dagster/will_retry: "true"`` once its retry is
  decided and ``dagster/auto_retry_run_id`` once the retry run exists (a later evaluation links it).
* **Backfills.** The asset backfill daemon counts a run as its own by ``dagster/backfill`` (its
  materializations fill the backfill, and a partition that failed in one run but materialized in a
  retry is no longer failed), and it stays in progress while a failed run of it has
  ``dagster/will_retry: "true"`` and no ``dagster/auto_retry_run_id``
  (``asset_backfill.backfill_runs_are_complete`` in Dagster 1.13.27). So, as Dagster's own
  re-execution does (``create_reexecuted_run``), a retry keeps the backfill tags while its backfill
  is ``REQUESTED``: the backfill waits for the retry and then continues downstream. A run of a
  backfill that was stopped (canceling, canceled, failing, failed) is not retried. A backfill that
  already completed — it can complete between a failure and this sensor's decision, Dagster issue
  #34204 — or was deleted is not re-opened: the retry runs on its own, without ``dagster/backfill``
  (a finished backfill is never evaluated again, so tagging a run into it would only mislead its
  page), with the backfill's id in ``datacoolie/backfill``.
* **Targets.** A sensor can only launch the jobs it targets, and targets either job definitions
  or ONE job by name. The code location therefore has two: ``datacoolie_retry_sensor`` over its op
  jobs, and ``datacoolie_asset_retry_sensor`` over ``__ASSET_JOB`` (Dagster's implicit job over every
  asset, under which UI materializations, sensed runs and backfills run) — an asset job of our own
  would cost as much code-location load time as the implicit one. Each ignores the other's runs; a
  standalone sensor (``refuse_unknown``) logs a run of any other job and does not retry it.

An unreadable cursor is an error (``dagster sensor cursor NAME --delete`` resets it deliberately).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import dagster as dg

from datacoolie_dagster.automation.retry_policy import (
    _KEPT_SYSTEM_TAGS,
    AUTO_RETRY_RUN_ID_TAG,
    AUTOMATED,
    BACKFILL_TAG,
    FAILURE_REASON_TAG,
    LINK_TIMEOUT_SECONDS,
    PARENT_RUN_ID,
    PARTITION_TAG,
    RETRY_DECISION,
    RETRY_DELAY,
    RETRY_DUE_AT,
    RETRY_NUMBER,
    ROOT_RUN_ID,
    STOPPED_BACKFILL,
    WILL_RETRY_TAG,
    DueRetry,
    RequestedRetry,
    RetryCursor,
    RetryPolicy,
    is_automated,
    is_process_death,
    retry_backfill_tags,
    retry_delay,
)
from datacoolie_dagster.constants import FINAL_FAILURE

SENSOR_NAME = "datacoolie_retry_sensor"
ASSET_SENSOR_NAME = "datacoolie_asset_retry_sensor"
IMPLICIT_ASSET_JOB = "__ASSET_JOB"
"""Dagster's implicit job over every asset (the name is fixed in Dagster 1.13.27)."""


@dataclass(frozen=True)
class _Targets:
    """The jobs the sensor may launch, and the job asset runs are retried under."""

    names: frozenset[str]
    asset_job: str | None

    def job_name(self, run: dg.DagsterRun) -> str | None:
        if run.job_name in self.names:
            return run.job_name
        if run.asset_selection and self.asset_job is not None:
            return self.asset_job
        return None


def build_retry_sensor(
    *,
    base_delay_seconds: float = 60,
    max_retries: int = 3,
    jitter: float = 0.1,
    jobs: Sequence[dg.JobDefinition | dg.UnresolvedAssetJobDefinition] = (),
    asset_job: dg.UnresolvedAssetJobDefinition | str | None = None,
    name: str = SENSOR_NAME,
    refuse_unknown: bool = True,
    minimum_interval_seconds: int = 15,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.RUNNING,
    clock: Callable[[], float] = time.time,
    rng: random.Random | None = None,
) -> dg.SensorDefinition:
    """A sensor retrying failed automated runs with exponential backoff (see the module docstring).

    Args:
        base_delay_seconds, max_retries, jitter: the policy; the seed's defaults are 60 s, 3, 10 %.
        jobs: the jobs whose runs may be retried (a sensor launches only jobs it targets).
        asset_job: the job retried asset runs launch under: an asset job, or the NAME of one —
            ``"__ASSET_JOB"``, Dagster's implicit job over every asset, which costs nothing more to
            load (a sensor targets either job definitions or one job by name, so then no ``jobs``).
        refuse_unknown: tag a failed automated run of any other job ``datacoolie/retry: no target``;
            off when another retry sensor handles those runs.
        clock, rng: injectable for tests (epoch seconds; the jitter's random source).

    Example:
        >>> sensors = [build_retry_sensor(jobs=stage_jobs, refuse_unknown=False),
        ...            build_retry_sensor(name="assets_retry", asset_job="__ASSET_JOB", refuse_unknown=False)]
    """
    if isinstance(asset_job, str) and jobs:
        raise ValueError("a sensor targets job definitions or one job by name: give `jobs` or a named `asset_job`")
    policy = RetryPolicy(base_delay_seconds, max_retries, jitter)
    random_source = rng or random.Random()
    defined = [*jobs, *([asset_job] if asset_job is not None and not isinstance(asset_job, str) else [])]
    asset_job_name = asset_job if asset_job is None or isinstance(asset_job, str) else asset_job.name
    targets = _Targets(frozenset(job.name for job in jobs), asset_job_name)
    target: dict[str, Any] = {"job_name": asset_job} if isinstance(asset_job, str) else {"jobs": defined or None}

    @dg.sensor(
        name=name,
        **target,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description="Retries failed automated runs after a doubling delay with jitter; never manual runs.",
    )
    def _retry_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        cursor = RetryCursor.loads(context.cursor, name)
        now = clock()
        cursor.requested = _link_requested(context, cursor.requested, now)
        pending = {d.run_id for d in cursor.due} | {r.run_id for r in cursor.requested}
        for record in _failed_since(context.instance, cursor.since):
            cursor.since = max(cursor.since, record.update_timestamp.timestamp())
            run = record.dagster_run
            if not _of_this_location(context, run):
                continue  # the instance is shared: another code location's run is not ours to retry
            if not refuse_unknown and targets.job_name(run) is None:
                continue  # another retry sensor's run
            failed_at = max(now, record.end_time or now)  # it may have ended after the clock was read
            due = _decide(context, run, policy, random_source, failed_at, targets)
            if due is not None and due.run_id not in pending:
                cursor.due.append(due)
                pending.add(due.run_id)
        ready = [d for d in cursor.due if d.due_at <= now]
        cursor.due = [d for d in cursor.due if d.due_at > now]
        requests = [(d, _request(context, d, targets)) for d in ready]
        cursor.requested += [RequestedRetry(d.run_id, now) for d, r in requests if r is not None]
        run_requests = [r for _, r in requests if r is not None]
        if not run_requests:  # a readable line in the tick history instead of "returned an empty result"
            return dg.SensorResult(skip_reason=_nothing_due(cursor.due, now), cursor=cursor.dumps())
        return dg.SensorResult(run_requests=run_requests, cursor=cursor.dumps())

    return _retry_sensor


def _nothing_due(waiting: Sequence[DueRetry], now: float) -> str:
    """The skip reason of an evaluation that launched no retry: what it waits for, if anything."""
    if not waiting:
        return "no failed automated run to retry"
    soonest = min(d.due_at for d in waiting) - now
    return f"{len(waiting)} retr{'y' if len(waiting) == 1 else 'ies'} waiting; the next is due in {soonest:.0f} s"


def _of_this_location(context: dg.SensorEvaluationContext, run: dg.DagsterRun) -> bool:
    """Whether ``run`` ran in the sensor's code location (unknown on either side: assumed so).

    Without it, an automated asset run of another location would be re-launched here, under a job
    that does not hold its assets, and fail the sensor's every evaluation.
    """
    here, origin = context.code_location_origin, run.remote_job_origin
    return here is None or origin is None or origin.location_name == here.location_name


def _failed_since(instance: dg.DagsterInstance, since: float) -> Iterator[Any]:
    """Failed runs updated after ``since``, oldest first (a re-seen run is harmless: decisions are tags)."""
    filters = dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE], updated_after=datetime.fromtimestamp(since, UTC))
    yield from instance.get_run_records(filters=filters, order_by="update_timestamp", ascending=True)


def _decide(
    context: dg.SensorEvaluationContext,
    run: dg.DagsterRun,
    policy: RetryPolicy,
    rng: random.Random,
    failed_at: float,
    targets: _Targets,
) -> DueRetry | None:
    """The retry of a failed run, due the delay after ``failed_at``, recorded on the run; ``None`` when it is
    not retried (or already was)."""
    tags = run.tags
    if not is_automated(tags) or RETRY_DECISION in tags or AUTO_RETRY_RUN_ID_TAG in tags:
        return None
    number = int(tags.get(RETRY_NUMBER, "0")) + 1
    if RETRY_DUE_AT in tags:  # decided by an earlier evaluation: keep its due time (and its jitter)
        return DueRetry(run.run_id, number, float(tags[RETRY_DUE_AT]))
    refusal = _refusal(context.instance, run, number, policy, targets)
    if refusal is not None:
        _refuse(context, run, *refusal)
        return None
    messages = () if FAILURE_REASON_TAG in tags else _failure_messages(context.instance, run.run_id)
    died = is_process_death(tags, messages)
    delay = 0.0 if died else retry_delay(number - 1, policy.base_delay_seconds, policy.jitter, rng)
    due = DueRetry(run.run_id, number, failed_at + delay)
    decided = {RETRY_DUE_AT: repr(due.due_at), RETRY_DELAY: f"{delay:.3f}", WILL_RETRY_TAG: "true"}
    context.instance.add_run_tags(run.run_id, decided)
    cause = "its process died" if died else "failed"
    context.log.info(f"run {run.run_id} ({run.job_name}) {cause}: retry {number} in {delay:.1f} s")
    return due


def _refusal(
    instance: dg.DagsterInstance, run: dg.DagsterRun, number: int, policy: RetryPolicy, targets: _Targets
) -> tuple[str, str] | None:
    """Why a failed automated run is not retried (decision, explanation), ``None`` when it is."""
    final = _final_failure(instance, run.run_id)
    if final is not None:
        return final, f"a step failed for good ({final}); a re-launch would fail the same way"
    if number > policy.budget(run.tags):
        return "exhausted", f"retry budget of {policy.budget(run.tags)} used"
    if targets.job_name(run) is None:
        return "no target", f"job '{run.job_name}' is not a target of the retry sensor"
    status = _backfill_status(instance, run.tags)
    if status in STOPPED_BACKFILL:
        return "backfill stopped", f"its backfill {run.tags[BACKFILL_TAG]} is {status}"
    return None


def _refuse(context: dg.SensorEvaluationContext, run: dg.DagsterRun, decision: str, why: str) -> None:
    tags = {RETRY_DECISION: decision}
    if run.tags.get(WILL_RETRY_TAG) == "true":  # a backfill waiting for this retry must stop waiting
        tags[WILL_RETRY_TAG] = "false"
    context.instance.add_run_tags(run.run_id, tags)
    context.log.warning(f"run {run.run_id} ({run.job_name}) failed and is not retried: {why}")


def _final_failure(instance: dg.DagsterInstance, run_id: str) -> str | None:
    """The :data:`FINAL_FAILURE` reason of one of the run's step failures, ``None`` without one.

    A dataflow that failed has used its retries inside the run (the driver's ``retry_count``), and a
    step refused for changed metadata fails again until the code location is reloaded: re-launching
    either would only multiply attempts (see ``docs/snapshot-retries.md``).
    """
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        failure = entry.dagster_event.step_failure_data if entry.dagster_event else None
        metadata = failure.user_failure_data.metadata if failure and failure.user_failure_data else {}
        if FINAL_FAILURE in metadata:
            return str(getattr(metadata[FINAL_FAILURE], "value", metadata[FINAL_FAILURE]))
    return None


def _failure_messages(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    kinds = {dg.DagsterEventType.ENGINE_EVENT, dg.DagsterEventType.RUN_FAILURE}
    return [entry.message for entry in instance.all_logs(run_id, of_type=kinds)]


def _backfill_status(instance: dg.DagsterInstance, tags: Mapping[str, str]) -> str | None:
    """The ``BulkActionStatus`` of the run's backfill; ``None`` without one, ``DELETED`` when gone."""
    backfill_id = tags.get(BACKFILL_TAG)
    if backfill_id is None:
        return None
    backfill = instance.get_backfill(backfill_id)  # DagsterInstance method, Dagster 1.13.27
    return "DELETED" if backfill is None else backfill.status.value


def _request(context: dg.SensorEvaluationContext, due: DueRetry, targets: _Targets) -> dg.RunRequest | None:
    """The re-execution of the failed run (same job, config, selection, partition and user tags)."""
    run = context.instance.get_run_by_id(due.run_id)
    if run is None:  # deleted meanwhile: nothing left to re-execute
        return None
    status = _backfill_status(context.instance, run.tags)
    if status in STOPPED_BACKFILL:  # stopped while the retry was waiting
        _refuse(context, run, "backfill stopped", f"its backfill {run.tags[BACKFILL_TAG]} is {status}")
        return None
    root = run.tags.get(ROOT_RUN_ID, run.run_id)
    kept = {k: v for k, v in run.tags.items() if not k.startswith("dagster/") or k in _KEPT_SYSTEM_TAGS}
    for tag in (RETRY_DUE_AT, RETRY_DELAY, RETRY_DECISION):
        kept.pop(tag, None)
    lineage = {AUTOMATED: "true", RETRY_NUMBER: str(due.number), ROOT_RUN_ID: root, PARENT_RUN_ID: run.run_id}
    return dg.RunRequest(
        run_key=f"retry:{root}:{due.number}",
        job_name=targets.job_name(run) or run.job_name,
        run_config=run.run_config,
        tags=kept | retry_backfill_tags(run.tags, status) | lineage,
        asset_selection=list(run.asset_selection) if run.asset_selection else None,
        asset_check_keys=list(run.asset_check_selection) if run.asset_check_selection else None,
        partition_key=run.tags.get(PARTITION_TAG),
    )


def _link_requested(
    context: dg.SensorEvaluationContext, requested: list[RequestedRetry], now: float
) -> list[RequestedRetry]:
    """Tag each failed run whose retry now exists with ``dagster/auto_retry_run_id``; keep the rest.

    A retry still missing after :data:`LINK_TIMEOUT_SECONDS` is given up, so a backfill never waits
    forever for it.
    """
    still: list[RequestedRetry] = []
    for entry in requested:
        children = context.instance.get_run_ids(dg.RunsFilter(tags={PARENT_RUN_ID: entry.run_id}), limit=1)
        if children:
            context.instance.add_run_tags(entry.run_id, {AUTO_RETRY_RUN_ID_TAG: children[0]})
        elif now - entry.requested_at > LINK_TIMEOUT_SECONDS:
            context.instance.add_run_tags(entry.run_id, {WILL_RETRY_TAG: "false", RETRY_DECISION: "lost"})
            context.log.warning(f"the retry requested for run {entry.run_id} never started; given up")
        else:
            still.append(entry)
    return still
