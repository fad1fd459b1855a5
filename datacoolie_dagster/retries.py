"""Retries of failed automated runs: 60 s doubling with each attempt, up to 10 % jitter, never manual runs.

Dagster's own ``run_retries`` re-launches a failed run *at once* and also retries runs a person
launched, so the instance keeps it off (``run_retries.max_retries: 0`` in ``dagster.yaml``) and this
sensor does the retrying instead:

* **Which runs.** A run is *automated* when it carries ``datacoolie/automated: "true"`` (our sensors,
  schedules and backfill CLI set it), ``dagster/backfill`` (any backfill, also one started in the UI)
  or ``datacoolie/backfill``. Every other run is manual and is never retried.
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
* **Targets.** A sensor can only launch the jobs it targets: pass the code location's jobs and one
  asset job for asset runs (``asset_job``); a run of any other job is logged and not retried.

An unreadable cursor is an error (``dagster sensor cursor NAME --delete`` resets it deliberately).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import dagster as dg

AUTOMATED = "datacoolie/automated"
RETRY_NUMBER = "datacoolie/retry_number"
ROOT_RUN_ID = "datacoolie/root_run_id"
PARENT_RUN_ID = "datacoolie/parent_run_id"
RETRY_DUE_AT = "datacoolie/retry_due_at"
RETRY_DELAY = "datacoolie/retry_delay_seconds"
RUN_RETRIES = "datacoolie/run_retries"
"""Per-run override of the sensor's ``max_retries``."""
RETRY_DECISION = "datacoolie/retry"
"""On a failed automated run: why it is not retried (``exhausted``, ``no target``, ``backfill stopped``, ``lost``)."""
DATACOOLIE_BACKFILL = "datacoolie/backfill"
"""On a retry of a run whose backfill had already finished: that backfill's id."""

# Dagster 1.13.27 system tags (dagster._core.storage.tags), read by its backfill daemon and UI.
BACKFILL_TAG = "dagster/backfill"
BACKFILL_TAGS = (BACKFILL_TAG, "dagster/parent_backfill_id", "dagster/root_backfill_id")
WILL_RETRY_TAG = "dagster/will_retry"
AUTO_RETRY_RUN_ID_TAG = "dagster/auto_retry_run_id"
FAILURE_REASON_TAG = "dagster/failure_reason"
PARTITION_TAG = "dagster/partition"
_KEPT_SYSTEM_TAGS = ("dagster/asset_partition_range_start", "dagster/asset_partition_range_end", "dagster/priority")

PROCESS_DEATH_REASONS = frozenset({"UNEXPECTED_TERMINATION", "RUN_WORKER_RESTART", "START_TIMEOUT"})
PROCESS_DEATH_MESSAGES = ("Run execution process for ", "Detected run worker status ")
"""How Dagster 1.13.27 words a dead run worker when it records no failure reason: the code server's
engine event (``DagsterApiServer._check_for_orphaned_runs``: "[DagsterApiServer] Run execution process
for <run id> was terminated by signal 9 (SIGKILL). …" or "… unexpectedly exited with code N.") and the
run monitoring daemon's failure message (launchers with worker health checks)."""
STOPPED_BACKFILL = frozenset({"CANCELING", "CANCELED", "FAILING", "FAILED"})
LINK_TIMEOUT_SECONDS = 3600.0
"""A requested retry that has not become a run after this long is given up (``datacoolie/retry: lost``)."""
SENSOR_NAME = "datacoolie_retry_sensor"


def retry_delay(attempt: int, base: float, jitter: float, rng: random.Random) -> float:
    """Seconds before retry ``attempt + 1``: ``base * 2**attempt * (1 + U(0, jitter))``.

    ``attempt`` counts the retries already made (0 for the first retry).
    """
    if attempt < 0 or base < 0 or jitter < 0:
        raise ValueError(f"attempt, base and jitter must be >= 0, got {attempt}, {base}, {jitter}")
    return base * 2**attempt * (1 + rng.uniform(0, jitter))


def is_automated(tags: Mapping[str, str]) -> bool:
    """A run our sensors, schedules or backfills started (manual runs are never retried)."""
    return tags.get(AUTOMATED) == "true" or BACKFILL_TAG in tags or DATACOOLIE_BACKFILL in tags


def is_process_death(tags: Mapping[str, str], messages: Iterable[str] = ()) -> bool:
    """A failed run whose process died rather than whose code failed.

    Args:
        tags: the failed run's tags; a ``dagster/failure_reason`` of a terminated, restarted or never
            started run worker is a death, any other reason is not.
        messages: without a failure reason, the messages of the run's engine and failure events: a
            death when one is Dagster's report of a dead run worker (:data:`PROCESS_DEATH_MESSAGES`).
            Other reason-less failures (a job that does not load, a lost code server, the maximum
            runtime) keep the backoff.
    """
    reason = tags.get(FAILURE_REASON_TAG)
    if reason is not None:
        return reason in PROCESS_DEATH_REASONS
    return any(marker in message for message in messages for marker in PROCESS_DEATH_MESSAGES)


def retry_backfill_tags(tags: Mapping[str, str], backfill_status: str | None) -> dict[str, str]:
    """The backfill tags a retry of a run with ``tags`` carries (see the module docstring).

    ``backfill_status`` is the ``BulkActionStatus`` value of the run's backfill, ``None`` without one.
    """
    if BACKFILL_TAG not in tags:
        return {}
    if backfill_status == "REQUESTED":
        return {key: tags[key] for key in BACKFILL_TAGS if key in tags}
    return {DATACOOLIE_BACKFILL: tags[BACKFILL_TAG]}


@dataclass(frozen=True)
class DueRetry:
    """A retry decided for ``run_id`` (the failed run), to launch at ``due_at`` (epoch seconds)."""

    run_id: str
    number: int
    due_at: float


@dataclass(frozen=True)
class RequestedRetry:
    """A retry of ``run_id`` requested at ``requested_at``, not yet linked to its run."""

    run_id: str
    requested_at: float


@dataclass
class RetryCursor:
    """The sensor's state: failures seen up to ``since`` (update timestamp), retries not yet due, and
    requested retries whose run is not yet linked to the failed run."""

    since: float = 0.0
    due: list[DueRetry] = field(default_factory=list)
    requested: list[RequestedRetry] = field(default_factory=list)

    def dumps(self) -> str:
        return json.dumps(
            {
                "since": self.since,
                "due": [asdict(d) for d in self.due],
                "requested": [asdict(r) for r in self.requested],
            }
        )

    @classmethod
    def loads(cls, text: str | None, sensor_name: str) -> RetryCursor:
        """Parse a cursor; ``None`` is a fresh start, anything unreadable is an error.

        A cursor without ``requested`` (written before it existed) reads as having none.
        """
        if not text:
            return cls()
        try:
            raw = json.loads(text)
            due = [DueRetry(**d) for d in raw["due"]]
            return cls(float(raw["since"]), due, [RequestedRetry(**r) for r in raw.get("requested", [])])
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(
                f"sensor '{sensor_name}': unreadable cursor {text[:200]!r}; reset it deliberately with "
                f"`dagster sensor cursor {sensor_name} --delete` (pending retries are then lost)"
            ) from e


@dataclass(frozen=True)
class RetryPolicy:
    base_delay_seconds: float
    max_retries: int
    jitter: float

    def budget(self, tags: Mapping[str, str]) -> int:
        override = tags.get(RUN_RETRIES)
        return int(override) if override is not None and override.isdigit() else self.max_retries


@dataclass(frozen=True)
class _Targets:
    """The jobs the sensor may launch, and the one asset runs are retried under."""

    names: frozenset[str]
    asset_job: dg.UnresolvedAssetJobDefinition | None

    def job_name(self, run: dg.DagsterRun) -> str | None:
        if run.job_name in self.names:
            return run.job_name
        if run.asset_selection and self.asset_job is not None:
            return self.asset_job.name
        return None


def build_retry_sensor(
    *,
    base_delay_seconds: float = 60,
    max_retries: int = 3,
    jitter: float = 0.1,
    jobs: Sequence[dg.JobDefinition | dg.UnresolvedAssetJobDefinition] = (),
    asset_job: dg.UnresolvedAssetJobDefinition | None = None,
    name: str = SENSOR_NAME,
    minimum_interval_seconds: int = 15,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.RUNNING,
    clock: Callable[[], float] = time.time,
    rng: random.Random | None = None,
) -> dg.SensorDefinition:
    """A sensor retrying failed automated runs with exponential backoff (see the module docstring).

    Args:
        base_delay_seconds, max_retries, jitter: the policy; the seed's defaults are 60 s, 3, 10 %.
        jobs: the jobs whose runs may be retried (a sensor launches only jobs it targets).
        asset_job: the job retried asset runs (``__ASSET_JOB`` or any asset job) launch under.
        clock, rng: injectable for tests (epoch seconds; the jitter's random source).

    Example:
        >>> assets_job = dg.define_asset_job("datacoolie_assets", selection=dg.AssetSelection.all())
        >>> sensor = build_retry_sensor(jobs=defs.jobs, asset_job=assets_job)
    """
    policy = RetryPolicy(base_delay_seconds, max_retries, jitter)
    random_source = rng or random.Random()
    targets_list = [*jobs, *([asset_job] if asset_job is not None else [])]
    targets = _Targets(frozenset(job.name for job in targets_list), asset_job)

    @dg.sensor(
        name=name,
        jobs=targets_list or None,
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
            due = _decide(context, record.dagster_run, policy, random_source, now, targets)
            if due is not None and due.run_id not in pending:
                cursor.due.append(due)
                pending.add(due.run_id)
        ready = [d for d in cursor.due if d.due_at <= now]
        cursor.due = [d for d in cursor.due if d.due_at > now]
        requests = [(d, _request(context, d, targets)) for d in ready]
        cursor.requested += [RequestedRetry(d.run_id, now) for d, r in requests if r is not None]
        return dg.SensorResult(run_requests=[r for _, r in requests if r is not None], cursor=cursor.dumps())

    return _retry_sensor


def _failed_since(instance: dg.DagsterInstance, since: float) -> Iterator[Any]:
    """Failed runs updated after ``since``, oldest first (a re-seen run is harmless: decisions are tags)."""
    filters = dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE], updated_after=datetime.fromtimestamp(since, UTC))
    yield from instance.get_run_records(filters=filters, order_by="update_timestamp", ascending=True)


def _decide(
    context: dg.SensorEvaluationContext,
    run: dg.DagsterRun,
    policy: RetryPolicy,
    rng: random.Random,
    now: float,
    targets: _Targets,
) -> DueRetry | None:
    """The retry of a failed run, recorded on the run; ``None`` when it is not retried (or already was)."""
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
    due = DueRetry(run.run_id, number, now + delay)
    decided = {RETRY_DUE_AT: repr(due.due_at), RETRY_DELAY: f"{delay:.3f}", WILL_RETRY_TAG: "true"}
    context.instance.add_run_tags(run.run_id, decided)
    cause = "its process died" if died else "failed"
    context.log.info(f"run {run.run_id} ({run.job_name}) {cause}: retry {number} in {delay:.1f} s")
    return due


def _refusal(
    instance: dg.DagsterInstance, run: dg.DagsterRun, number: int, policy: RetryPolicy, targets: _Targets
) -> tuple[str, str] | None:
    """Why a failed automated run is not retried (decision, explanation), ``None`` when it is."""
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
