"""Retries of failed automated runs: 60 s doubling with each attempt, up to 10 % jitter, never manual runs.

Dagster's own ``run_retries`` re-launches a failed run *at once* and also retries runs a person
launched, so the instance keeps it off (``run_retries.max_retries: 0`` in ``dagster.yaml``) and this
sensor does the retrying instead:

* **Which runs.** A run is *automated* when it carries ``datacoolie/automated: "true"`` (our sensors,
  schedules and backfill CLI set it) or ``dagster/backfill`` (any backfill, also one started in the
  UI). Every other run is manual and is never retried.
* **When.** Retry ``n`` (1, 2, …) of a run that failed is due ``base * 2**(n-1) * (1 + U(0, jitter))``
  seconds after the failure (:func:`retry_delay`), up to ``max_retries`` retries per root run (a
  ``datacoolie/run_retries`` run tag overrides the budget). A run whose process died — no failure
  reason recorded (the code server reports a killed run worker that way), or
  ``UNEXPECTED_TERMINATION`` / ``RUN_WORKER_RESTART`` / ``START_TIMEOUT`` — is retried at once
  (delay 0), within the same budget.
* **How.** A sensor cannot sleep for minutes: each evaluation (1) finds runs that failed since its
  cursor, decides their retry and records the due time on the failed run (tag
  ``datacoolie/retry_due_at``, so a re-evaluation after a crash reuses it and the jitter never
  changes) and in the cursor, then (2) requests the retries that are due. A retry re-executes the
  same job, run config, asset selection, partition and user tags, plus ``datacoolie/retry_number``,
  ``datacoolie/root_run_id`` and ``datacoolie/parent_run_id``; its ``run_key`` is
  ``retry:<root run id>:<n>``, so Dagster launches each retry once even if the sensor asks twice.
* **Targets.** A sensor can only launch the jobs it targets: pass the code location's jobs and one
  asset job for asset runs (``asset_job``); a run of any other job is logged and not retried.

An unreadable cursor is an error (``dagster sensor cursor NAME --delete`` resets it deliberately).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
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
"""On a failed automated run: why it is not retried (``exhausted``, ``no target``)."""

BACKFILL_TAG = "dagster/backfill"
FAILURE_REASON_TAG = "dagster/failure_reason"
PARTITION_TAG = "dagster/partition"
_KEPT_SYSTEM_TAGS = ("dagster/asset_partition_range_start", "dagster/asset_partition_range_end", "dagster/priority")
PROCESS_DEATH_REASONS = frozenset({"UNEXPECTED_TERMINATION", "RUN_WORKER_RESTART", "START_TIMEOUT"})
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
    return tags.get(AUTOMATED) == "true" or BACKFILL_TAG in tags


def is_process_death(tags: Mapping[str, str]) -> bool:
    """A failed run whose process died rather than whose code failed.

    The code server reports a killed run worker without a failure reason, so none counts as death.
    """
    reason = tags.get(FAILURE_REASON_TAG)
    return reason is None or reason in PROCESS_DEATH_REASONS


@dataclass(frozen=True)
class DueRetry:
    """A retry decided for ``run_id`` (the failed run), to launch at ``due_at`` (epoch seconds)."""

    run_id: str
    number: int
    due_at: float


@dataclass
class RetryCursor:
    """The sensor's state: failures seen up to ``since`` (update timestamp) and retries not yet due."""

    since: float = 0.0
    due: list[DueRetry] = field(default_factory=list)

    def dumps(self) -> str:
        return json.dumps({"since": self.since, "due": [asdict(d) for d in self.due]})

    @classmethod
    def loads(cls, text: str | None, sensor_name: str) -> RetryCursor:
        """Parse a cursor; ``None`` is a fresh start, anything unreadable is an error."""
        if not text:
            return cls()
        try:
            raw = json.loads(text)
            return cls(float(raw["since"]), [DueRetry(**d) for d in raw["due"]])
        except (ValueError, KeyError, TypeError) as e:
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
    targets = [*jobs, *([asset_job] if asset_job is not None else [])]
    target_names = {job.name for job in targets}

    @dg.sensor(
        name=name,
        jobs=targets or None,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description="Retries failed automated runs after a doubling delay with jitter; never manual runs.",
    )
    def _retry_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        cursor = RetryCursor.loads(context.cursor, name)
        now = clock()
        for record in _failed_since(context.instance, cursor.since):
            cursor.since = max(cursor.since, record.update_timestamp.timestamp())
            due = _decide(context, record.dagster_run, policy, random_source, now, target_names, asset_job)
            if due is not None and all(d.run_id != due.run_id for d in cursor.due):
                cursor.due.append(due)
        ready = [d for d in cursor.due if d.due_at <= now]
        cursor.due = [d for d in cursor.due if d.due_at > now]
        requests = [r for r in (_request(context, d, target_names, asset_job) for d in ready) if r is not None]
        return dg.SensorResult(run_requests=requests, cursor=cursor.dumps())

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
    target_names: set[str],
    asset_job: dg.UnresolvedAssetJobDefinition | None,
) -> DueRetry | None:
    """The retry of a failed run, recorded on the run; ``None`` when it is not retried."""
    tags = run.tags
    if not is_automated(tags) or RETRY_DECISION in tags:
        return None
    number = int(tags.get(RETRY_NUMBER, "0")) + 1
    if RETRY_DUE_AT in tags:  # decided by an earlier evaluation: keep its due time (and its jitter)
        return DueRetry(run.run_id, number, float(tags[RETRY_DUE_AT]))
    if number > policy.budget(tags):
        _refuse(context, run, "exhausted", f"retry budget of {policy.budget(tags)} used")
        return None
    if _job_name(run, target_names, asset_job) is None:
        _refuse(context, run, "no target", f"job '{run.job_name}' is not a target of the retry sensor")
        return None
    delay = 0.0 if is_process_death(tags) else retry_delay(number - 1, policy.base_delay_seconds, policy.jitter, rng)
    due = DueRetry(run.run_id, number, now + delay)
    context.instance.add_run_tags(run.run_id, {RETRY_DUE_AT: repr(due.due_at), RETRY_DELAY: f"{delay:.3f}"})
    context.log.info(f"run {run.run_id} ({run.job_name}) failed: retry {number} in {delay:.1f} s")
    return due


def _refuse(context: dg.SensorEvaluationContext, run: dg.DagsterRun, decision: str, why: str) -> None:
    context.instance.add_run_tags(run.run_id, {RETRY_DECISION: decision})
    context.log.warning(f"run {run.run_id} ({run.job_name}) failed and is not retried: {why}")


def _job_name(
    run: dg.DagsterRun, target_names: set[str], asset_job: dg.UnresolvedAssetJobDefinition | None
) -> str | None:
    if run.job_name in target_names:
        return run.job_name
    if run.asset_selection and asset_job is not None:
        return asset_job.name
    return None


def _request(
    context: dg.SensorEvaluationContext,
    due: DueRetry,
    target_names: set[str],
    asset_job: dg.UnresolvedAssetJobDefinition | None,
) -> dg.RunRequest | None:
    """The re-execution of the failed run (same job, config, selection, partition and user tags)."""
    run = context.instance.get_run_by_id(due.run_id)
    if run is None:  # deleted meanwhile: nothing left to re-execute
        return None
    root = run.tags.get(ROOT_RUN_ID, run.run_id)
    kept = {k: v for k, v in run.tags.items() if not k.startswith("dagster/") or k in _KEPT_SYSTEM_TAGS}
    for tag in (RETRY_DUE_AT, RETRY_DELAY, RETRY_DECISION):
        kept.pop(tag, None)
    tags = kept | {AUTOMATED: "true", RETRY_NUMBER: str(due.number), ROOT_RUN_ID: root, PARENT_RUN_ID: run.run_id}
    return dg.RunRequest(
        run_key=f"retry:{root}:{due.number}",
        job_name=_job_name(run, target_names, asset_job) or run.job_name,
        run_config=run.run_config,
        tags=tags,
        asset_selection=list(run.asset_selection) if run.asset_selection else None,
        asset_check_keys=list(run.asset_check_selection) if run.asset_check_selection else None,
        partition_key=run.tags.get(PARTITION_TAG),
    )
