"""What the retry sensor decides, apart from any instance: the run tags it reads and writes, the
delay of each retry, which runs are automated or died, which backfill tags a retry keeps, and the
sensor's cursor. The sensor itself, and the reasons for these rules, are in :mod:`.retries`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field

from datacoolie_dagster.constants import (  # noqa: F401  (re-exported: the sensor and tests read them here)
    AUTOMATED,
    DATACOOLIE_BACKFILL,
    PARENT_RUN_ID,
    RETRY_DECISION,
    RETRY_DELAY,
    RETRY_DUE_AT,
    RETRY_NUMBER,
    ROOT_RUN_ID,
    RUN_RETRIES,
)
from datacoolie_dagster.dagster_internal import AUTO_RETRY_RUN_ID_TAG as AUTO_RETRY_RUN_ID_TAG
from datacoolie_dagster.dagster_internal import BACKFILL_ID_TAG, PARENT_BACKFILL_ID_TAG, ROOT_BACKFILL_ID_TAG
from datacoolie_dagster.dagster_internal import WILL_RETRY_TAG as WILL_RETRY_TAG

# Dagster's own tags, read by its backfill daemon and UI (private: see dagster_internal).
BACKFILL_TAG = BACKFILL_ID_TAG
BACKFILL_TAGS = (BACKFILL_TAG, PARENT_BACKFILL_ID_TAG, ROOT_BACKFILL_ID_TAG)
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
