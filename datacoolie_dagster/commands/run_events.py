"""What ``datacoolie-dagster wait`` prints about a run: progress lines, the summary, the verdict.

Pure functions over :class:`RunEvent` and :class:`RunState`, the two shapes both readers
(the instance, a webserver's GraphQL API; see :mod:`.run_sources`) turn Dagster's records into, so
the CI log reads the same whichever way the runs are followed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from datacoolie_dagster import constants

FINISHED = ("SUCCESS", "FAILURE", "CANCELED")
"""Run statuses after which nothing more happens to a run."""
RUN_FAILED = 1
"""Exit code: a run failed or was canceled."""
USAGE = 2
"""Exit code: bad arguments, an unknown run, an unreachable deployment."""
GAVE_UP = 3
"""Exit code: stopped waiting (``--timeout``, or a run stuck in the queue); the runs may go on."""

_TABLE_ROWS = (
    (constants.ROWS_INSERTED, "inserted"),
    (constants.ROWS_UPDATED, "updated"),
    (constants.ROWS_DELETED, "deleted"),
)
_ENGINE_NOISE = ("Emitting implicit Nothing",)
"""Dagster's own INFO lines in a step's log that say nothing to a CI reader."""
_SUMMARY_CHARS = 400
_STEP_DURATION = re.compile(r" in ([0-9.]+ ?[a-z]+)\.?$")


@dataclass(frozen=True)
class RunEvent:
    """One event of a run's event log, as the wait command needs it."""

    kind: str
    """Dagster's event type name (``STEP_START``, ``ASSET_MATERIALIZATION``, ``RUN_FAILURE`` …), or
    ``LOG_MESSAGE`` for a line an op logged."""
    message: str
    step: str | None = None
    level: str = "INFO"
    asset: str | None = None
    """``a/b/c``: the table of a materialization."""
    partition: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """A materialization's metadata, values unwrapped (ints, floats, text)."""
    error: str | None = None
    """A failure's cause: the ``dg.Failure`` description (the failing dataflows) or the error message."""


@dataclass(frozen=True)
class RunState:
    run_id: str
    status: str
    """Dagster's run status name (``QUEUED``, ``STARTED``, ``SUCCESS`` …)."""
    job: str
    created: float
    """Epoch seconds the run was created (queued)."""
    started: float | None = None
    ended: float | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


@dataclass
class RunProgress:
    """What a run has done so far, collected from its events for the summary line."""

    tables: dict[str, int] = field(default_factory=dict)
    """Rows written (inserted + updated + deleted) per table, counted once per table and step."""
    failures: list[str] = field(default_factory=list)
    _counted: set[tuple[str, str | None]] = field(default_factory=set)

    def add(self, event: RunEvent) -> None:
        if event.kind == "ASSET_MATERIALIZATION" and event.asset is not None:
            # a partitioned table has one event per touched partition, each with the write's totals
            if (event.asset, event.step) not in self._counted:
                self._counted.add((event.asset, event.step))
                self.tables[event.asset] = self.tables.get(event.asset, 0) + rows_written(event.metadata)
        elif event.kind == "STEP_FAILURE":
            self.failures.append(f"step {event.step} failed: {event.error or event.message}")
        elif event.kind == "RUN_FAILURE" and not self.failures:
            self.failures.append(event.error or event.message)


def rows_written(metadata: Mapping[str, Any]) -> int:
    return sum(int(metadata.get(key) or 0) for key, _ in _TABLE_ROWS)


def progress_lines(event: RunEvent) -> list[str]:
    """The CI log lines of one event; empty for the events a reader does not need (engine chatter)."""
    step = f"step {event.step}"
    if event.kind == "STEP_START":
        return [f"{step} started"]
    if event.kind == "STEP_SUCCESS":
        duration = _STEP_DURATION.search(event.message)
        return [f"{step} succeeded" + (f" in {duration.group(1)}" if duration else "")]
    if event.kind == "STEP_FAILURE":
        return [f"{step} FAILED:", *_indented(event.error or event.message)]
    if event.kind in ("STEP_UP_FOR_RETRY", "STEP_SKIPPED", "STEP_RESTARTED"):
        return [f"{step}: {event.message}"]
    if event.kind == "ASSET_MATERIALIZATION":
        return [table_line(event)]
    if event.kind == "LOG_MESSAGE" and event.step and event.level not in ("DEBUG", "NOTSET"):
        if event.message.startswith(_ENGINE_NOISE):
            return []
        return [f"{step}: {line}" for line in event.message.splitlines()]
    if event.kind in ("RUN_ENQUEUED", "RUN_DEQUEUED", "RUN_START", "RUN_CANCELING", "RUN_CANCELED"):
        return [event.message] if event.message else []  # the queue's events carry no message
    if event.kind == "RUN_FAILURE":
        # after a step failure the run's error repeats it; otherwise (a worker died, …) it is the cause
        cause = [] if "Steps failed" in event.message else _indented(event.error or "")
        return [f"run failed: {event.message}", *cause]
    return []


def table_line(event: RunEvent) -> str:
    """``wrote silver/sales/orders: 120 inserted, 30 updated, 0 deleted (Delta version 3)``."""
    rows = ", ".join(f"{int(event.metadata.get(key) or 0)} {word}" for key, word in _TABLE_ROWS)
    where = f"{event.asset} [{event.partition}]" if event.partition else str(event.asset)
    details = []
    if constants.DELTA_VERSION in event.metadata:
        details.append(f"Delta version {event.metadata[constants.DELTA_VERSION]}")
    if constants.PARTITION_ROWS in event.metadata:
        details.append(f"{event.metadata[constants.PARTITION_ROWS]} rows in this partition")
    return f"wrote {where}: {rows}" + (f" ({', '.join(details)})" if details else "")


def summary_line(state: RunState, progress: RunProgress, reason: str | None = None) -> str:
    """One line per run: its job, how it ended (or why we stopped waiting) and what it wrote."""
    head = f"run {state.run_id} ({state.job}): {state.status}"
    if state.started is not None and state.ended is not None:
        head += f" in {state.ended - state.started:.1f} s"
    wrote = f"{len(progress.tables)} table(s), {sum(progress.tables.values())} rows written"
    if reason:
        return f"{head}: {reason}; {wrote}"
    if state.status != "SUCCESS" and progress.failures:
        return f"{head}: {_one_line(progress.failures[0])}; {wrote}"
    return f"{head}: {wrote}"


def exit_code(states: Mapping[str, RunState], gave_up: Mapping[str, str]) -> int:
    """0 only when every run succeeded; :data:`GAVE_UP` before :data:`RUN_FAILED` (a run may still run)."""
    if gave_up:
        return GAVE_UP
    return 0 if all(s.status == "SUCCESS" for s in states.values()) else RUN_FAILED


def stuck_in_queue(
    state: RunState, now: float, last_heartbeat: float | None, *, queued_timeout: float, heartbeat_stale: float
) -> str | None:
    """Why ``state`` will not leave the queue, or ``None`` while it may.

    A run QUEUED longer than ``queued_timeout`` with no heartbeat of the daemon that dequeues runs
    within ``heartbeat_stale`` seconds waits for a daemon that is not there. With a live daemon a
    queued run waits for a free slot (the queue limit, a pool): ``--timeout`` bounds that wait.
    """
    if state.status != "QUEUED" or now - state.created < queued_timeout:
        return None
    if last_heartbeat is not None and now - last_heartbeat <= heartbeat_stale:
        return None
    seen = "never" if last_heartbeat is None else f"{now - last_heartbeat:.0f} s ago"
    return (
        f"still QUEUED after {now - state.created:.0f} s and no run-queue daemon heartbeat (last: {seen}): "
        "is dagster-daemon running?"
    )


def _one_line(text: str) -> str:
    flat = " ".join(line.strip() for line in text.splitlines() if line.strip())
    return flat if len(flat) <= _SUMMARY_CHARS else flat[: _SUMMARY_CHARS - 1] + "…"


def _indented(text: str) -> list[str]:
    return [f"    {line}" for line in text.strip().splitlines()]
