"""What the driver does for ONE dataflow in a run, a replay, a dry run or a maintenance pass.

Each function returns a runtime record and never raises for the dataflow's own failure; the
executor calls them from its worker threads. Preparation (deep copy, ``.sql`` files, secrets) happens
once, before the retry boundary; every attempt gets a fresh copy of the prepared dataflow.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from datacoolie_core.logging.context import dataflow_context
from datacoolie_core.logging.execution_logger import ExecutionLogger, Scrubber
from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.models.run_config import DataCoolieRunConfig, ReplayConfig
from datacoolie_core.models.runtime import DataFlowRuntimeInfo, DestinationRuntimeInfo, OperationType, utc_now
from datacoolie_core.orchestration.dataflow_runner import DataflowRun, prepare_baseline, run_dataflow
from datacoolie_core.orchestration.maintenance import run_maintenance_target
from datacoolie_core.orchestration.preparation import QueryRoots, prepare_dataflow
from datacoolie_core.orchestration.replay import Chunk, chunk_key, chunk_windows
from datacoolie_core.orchestration.retry import RetryHandler
from datacoolie_core.orchestration.state_check import check_state
from datacoolie_core.secrets import SecretProvider, secret_values
from datacoolie_core.sources.base import ReadRange
from datacoolie_core.watermark.journal import CommitJournal
from datacoolie_core.watermark.manager import WatermarkManager

ChunkObserver = Callable[[DataFlow, Chunk, DataFlowRuntimeInfo], None]
_LOG = logging.getLogger("datacoolie.driver")


@dataclass(frozen=True)
class ExecutionServices:
    """The driver's components a dataflow execution uses."""

    config: DataCoolieRunConfig
    roots: QueryRoots = field(default_factory=QueryRoots)
    watermarks: WatermarkManager | None = None
    journal: CommitJournal | None = None
    secrets: SecretProvider | None = None
    logger: ExecutionLogger | None = None
    """Execution log; one row per dataflow run and per replay chunk."""
    system_logger: Any | None = None
    """System log; told about resolved secret values so they are masked there too."""
    scrubber: Scrubber = field(default_factory=Scrubber)
    """Every secret value resolved in this session: masked in the driver's own log records."""
    writer_locks: WriterLocks = field(default_factory=lambda: WriterLocks())
    """One writer per physical destination at a time (fan-in dataflows in different groups)."""


class WriterLocks:
    """A lock per ``destination_key``: two writers of one table never run at the same time.

    DataCoolie leaves fan-in ordering to the metadata (same group, distinct orders); unordered
    writers of one table would race on its first commit or conflict on merges, so they take turns.
    Within a run a thread lock does it; ``cross_process`` (the provider's ``destination_lock``) also
    excludes other processes — two Dagster runs loading one table, or the same dataflow twice, which
    would read the same watermark and append the same rows twice.
    """

    def __init__(self, cross_process: Callable[[str], AbstractContextManager[None]] | None = None) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._cross_process = cross_process

    @contextmanager
    def hold(self, dataflow: DataFlow) -> Iterator[LockWait]:
        """Hold the table's lock; the yielded :class:`LockWait` says how long taking it took."""
        try:
            key = dataflow.destination.destination_key
        except ValueError:
            key = f"dataflow:{dataflow.dataflow_id}"
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        started = time.perf_counter()
        with lock, self._cross_process(key) if self._cross_process is not None else nullcontext():
            yield LockWait(time.perf_counter() - started, key)


@dataclass(frozen=True)
class LockWait:
    """How long a dataflow waited for the one-writer-per-table lock of ``key``."""

    seconds: float
    key: str

    NOTICEABLE = 0.1
    """Below this, taking the lock is overhead, not a wait worth reporting."""

    def stamp(self, runtime: DataFlowRuntimeInfo, dataflow: DataFlow) -> None:
        """Say in the result (``phase_seconds["lock_wait"]``) and the log that the dataflow waited."""
        if self.seconds < self.NOTICEABLE:
            return
        runtime.phase_seconds["lock_wait"] = round(self.seconds, 6)
        _LOG.info(
            "dataflow.lock_wait %s: waited %.1f s for the writer lock of %s",
            dataflow.name,
            self.seconds,
            dataflow.destination.path or dataflow.destination.table,
            extra={"event": "dataflow.lock_wait", "dataflow_id": str(dataflow.dataflow_id)},
        )


def inactive_reason(dataflow: DataFlow) -> str | None:
    """Why an explicitly supplied dataflow must be skipped, if it must (seed: activation)."""
    if not dataflow.is_active:
        return "dataflow is inactive"
    for side, ref in (("source", dataflow.source), ("destination", dataflow.destination)):
        if not ref.connection.is_active:
            return f"{side} connection '{ref.connection.name}' is inactive"
    return None


def execute_etl(dataflow: DataFlow, services: ExecutionServices) -> DataFlowRuntimeInfo:
    """Prepare once, settle an interrupted write, then run with retries."""
    with dataflow_context(str(dataflow.dataflow_id)), services.writer_locks.hold(dataflow) as waited:
        runtime = _etl(dataflow, services)
        waited.stamp(runtime, dataflow)
        _log(services, runtime, dataflow)
        return runtime


def _etl(dataflow: DataFlow, services: ExecutionServices) -> DataFlowRuntimeInfo:
    reason = inactive_reason(dataflow)
    if reason:
        return _record(dataflow, "skipped", reason=reason)
    try:
        prepared = _prepare(dataflow, services)
        state = check_state(prepared, services.watermarks, services.journal)
    except Exception as e:  # preparation failures are terminal: no source action happened
        return _record(dataflow, "failed", error=e)
    run = DataflowRun(
        watermarks=services.watermarks,
        journal=services.journal,
        baseline=state.watermark,
        state=state,
        run_config=services.config,
        reference_time=utc_now(),
    )
    run_id = str(uuid.uuid4())
    # prepare_dataflow already made a private copy; only retries need fresh ones of it
    fresh = (lambda: copy.deepcopy(prepared)) if services.config.retry_count else (lambda: prepared)
    return RetryHandler.from_config(services.config).run(
        lambda _attempt: run_dataflow(fresh(), run, dataflow_run_id=run_id)
    )


def execute_replay(
    dataflow: DataFlow,
    replay: ReplayConfig,
    services: ExecutionServices,
    *,
    on_chunk: ChunkObserver | None = None,
) -> DataFlowRuntimeInfo:
    """Run the replay chunks of one dataflow in order, stopping at the first failed chunk.

    Returns one aggregate record (``chunks`` holds each chunk's own record).
    """
    with dataflow_context(str(dataflow.dataflow_id)), services.writer_locks.hold(dataflow) as waited:
        outer = _record(dataflow, "running", operation="replay")
        waited.stamp(outer, dataflow)
        reason = inactive_reason(dataflow)
        if reason:
            outer.finish("skipped", reason=reason)
            _log(services, outer, dataflow)
            return outer
        try:
            column = replay_column(dataflow, replay)
            chunks = chunk_windows(replay.start, replay.end, replay.chunk_interval)
            prepared = _prepare(dataflow, services)
            prepare_baseline(prepared, services.watermarks, services.journal, job_id=services.config.job_id)
        except Exception as e:
            outer.finish("failed", error=e)
            outer.exception = e
            _log(services, outer, dataflow)
            return outer
        for chunk in chunks:
            runtime = _replay_chunk(prepared, chunk, column, replay, services)
            _log(services, runtime, dataflow)
            outer.chunks.append(runtime)
            if on_chunk is not None:
                on_chunk(dataflow, chunk, runtime)
            if runtime.status == "failed":
                break
        return _aggregate(outer)


def _replay_chunk(
    prepared: DataFlow, chunk: Chunk, column: str, replay: ReplayConfig, services: ExecutionServices
) -> DataFlowRuntimeInfo:
    run = DataflowRun(
        watermarks=services.watermarks,
        journal=services.journal,
        read_range=ReadRange(column, chunk.start, chunk.end),
        save_watermark=replay.save_watermark,
        operation_type="replay",
        run_config=services.config,
        reference_time=utc_now(),
    )
    run_id = str(uuid.uuid4())  # rows of a chunk carry the chunk's own run id
    runtime = RetryHandler.from_config(services.config).run(
        lambda _attempt: run_dataflow(copy.deepcopy(prepared), run, dataflow_run_id=run_id)
    )
    runtime.replay_chunk = {"index": chunk.index, "key": chunk_key(chunk), "start": chunk.start, "end": chunk.end}
    return runtime


def replay_column(dataflow: DataFlow, replay: ReplayConfig) -> str:
    """The column a replay selects on: ``chunk_column``, else the first watermark column."""
    if replay.chunk_column:
        return replay.chunk_column
    if dataflow.source.watermark_columns:
        return dataflow.source.watermark_columns[0]
    raise ValueError(
        f"dataflow '{dataflow.name}' has no watermark_columns; give the replay a chunk_column to select on"
    )


def _aggregate(outer: DataFlowRuntimeInfo) -> DataFlowRuntimeInfo:
    statuses = [c.status for c in outer.chunks]
    outer.source.rows_read = sum(c.source.rows_read for c in outer.chunks)
    outer.destination = combined_writes([c.destination for c in outer.chunks])
    outer.retry_attempts = sum(c.retry_attempts for c in outer.chunks)
    failed = next((c for c in outer.chunks if c.status == "failed"), None)
    if failed is not None:
        outer.finish("failed", error=failed.exception or RuntimeError(failed.error_message or "chunk failed"))
        outer.exception = failed.exception
    elif statuses and all(s == "skipped" for s in statuses):
        outer.finish("skipped", reason="no chunk had source rows")
    else:
        outer.finish("succeeded")
    return outer


def combined_writes(writes: Sequence[DestinationRuntimeInfo]) -> DestinationRuntimeInfo:
    """One record for several commits to one table (a replay's chunks): counts summed, last version.

    Every count is summed, not only ``rows_written``: callers report the inserted / updated /
    deleted rows of a replay (a Dagster partition) from this record.
    """
    versions = [w.table_version for w in writes if w.table_version is not None]
    sequences = [w.commit_sequence for w in writes if w.commit_sequence is not None]
    return DestinationRuntimeInfo(
        operation_type=next((w.operation_type for w in writes if w.operation_type), ""),
        rows_written=sum(w.rows_written for w in writes),
        rows_inserted=sum(w.rows_inserted for w in writes),
        rows_updated=sum(w.rows_updated for w in writes),
        rows_deleted=sum(w.rows_deleted for w in writes),
        null_key_rows=sum(w.null_key_rows for w in writes),
        files_added=sum(w.files_added for w in writes),
        files_removed=sum(w.files_removed for w in writes),
        bytes_added=sum(w.bytes_added for w in writes),
        bytes_removed=sum(w.bytes_removed for w in writes),
        table_version=versions[-1] if versions else None,
        commit_sequence=sequences[-1] if sequences else None,
        recovered=bool(writes) and all(w.recovered for w in writes),
    )


def dry_run_check(
    dataflow: DataFlow, services: ExecutionServices, replay: ReplayConfig | None = None
) -> DataFlowRuntimeInfo:
    """Validate without touching data, watermarks or secrets: skipped, or failed on a validation error."""
    operation: OperationType = "replay" if replay else "etl"
    reason = inactive_reason(dataflow)
    if reason:
        return _logged(services, dataflow, _record(dataflow, "skipped", reason=reason, operation=operation))
    try:
        prepare_dataflow(dataflow, roots=services.roots, secrets=None)
        if replay is not None:
            replay_column(dataflow, replay)
            chunk_windows(replay.start, replay.end, replay.chunk_interval)
    except Exception as e:
        return _logged(services, dataflow, _record(dataflow, "failed", error=e, operation=operation))
    return _logged(services, dataflow, _record(dataflow, "skipped", reason="dry run", operation=operation))


def execute_maintenance(
    dataflow: DataFlow, services: ExecutionServices, *, do_compact: bool, do_cleanup: bool
) -> DataFlowRuntimeInfo:
    """OPTIMIZE and/or VACUUM one destination table, with retries."""
    with dataflow_context(str(dataflow.dataflow_id)):
        run_id = str(uuid.uuid4())
        runtime = RetryHandler.from_config(services.config).run(
            lambda _attempt: run_maintenance_target(
                dataflow,
                do_compact=do_compact,
                do_cleanup=do_cleanup,
                retention_hours=services.config.retention_hours,
                dataflow_run_id=run_id,
                secrets=services.secrets,
            )
        )
        _log(services, runtime, dataflow)
        return runtime


def blocked_record(dataflow: DataFlow, services: ExecutionServices, reason: str) -> DataFlowRuntimeInfo:
    return _logged(services, dataflow, _record(dataflow, "skipped", reason=reason, operation="maintenance"))


def _prepare(dataflow: DataFlow, services: ExecutionServices) -> DataFlow:
    prepared = prepare_dataflow(dataflow, roots=services.roots, secrets=services.secrets)
    values = secret_values(prepared.source.connection) | secret_values(prepared.destination.connection)
    if values:  # resolved secrets never reach a log line
        services.scrubber.add(values)
        for logger in (services.logger, services.system_logger):
            if logger is not None:
                logger.add_secrets(values)
    return prepared


def _record(
    dataflow: DataFlow,
    status: Any,
    *,
    error: BaseException | None = None,
    reason: str | None = None,
    operation: OperationType = "etl",
) -> DataFlowRuntimeInfo:
    runtime = DataFlowRuntimeInfo(str(dataflow.dataflow_id), str(dataflow.name), operation_type=operation)
    if status == "running":
        runtime.status = "running"
        return runtime
    runtime.finish(status, error=error, reason=reason)
    runtime.exception = error
    return runtime


def _logged(services: ExecutionServices, dataflow: DataFlow, runtime: DataFlowRuntimeInfo) -> DataFlowRuntimeInfo:
    _log(services, runtime, dataflow)
    return runtime


def _log(services: ExecutionServices, runtime: DataFlowRuntimeInfo, dataflow: DataFlow) -> None:
    """Persist the execution row, and report the outcome on the system log."""
    if services.logger is not None:
        services.logger.log_dataflow(runtime, dataflow)
    _announce(runtime, services.scrubber)


def _announce(runtime: DataFlowRuntimeInfo, scrubber: Scrubber) -> None:
    """``dataflow.finished`` (INFO) or ``dataflow.failed`` (ERROR, with the traceback), secrets masked.

    Masked here, not only by our SystemLogger: the records also reach the user's own handlers.
    """
    label = f"{runtime.dataflow_name} [{runtime.dataflow_id}] ({runtime.operation_type})"
    extra = {"event": f"dataflow.{'failed' if runtime.status == 'failed' else 'finished'}"}
    extra["dataflow_id"] = runtime.dataflow_id
    if runtime.status != "failed":
        detail = runtime.skip_reason if runtime.status == "skipped" else f"{runtime.destination.rows_written} rows"
        _LOG.info("dataflow.finished %s: %s (%s)", label, runtime.status, detail, extra=extra)
        return
    if not _LOG.isEnabledFor(logging.ERROR):
        return
    message = scrubber.text(f"dataflow.failed {label}: {runtime.error_type}: {runtime.error_message}")
    record = _LOG.makeRecord(_LOG.name, logging.ERROR, __file__, 0, message, (), None, "_announce", extra)
    if runtime.exception is not None:
        record.exc_text = scrubber.text("".join(traceback.format_exception(runtime.exception)).rstrip())
    _LOG.handle(record)
