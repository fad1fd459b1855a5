"""Run one prepared dataflow: read -> transform -> write -> save watermark, exactly once.

The driver (sharding, retries, replay chunking) calls :func:`prepare_baseline` once per run and
:func:`run_dataflow` once per attempt. A run returns a :class:`DataFlowRuntimeInfo` whatever happens;
``runtime.exception`` keeps the error so the caller's retry policy can decide.

Exactly-once: before anything is read, :func:`~datacoolie_core.orchestration.state_check.check_state`
cross-checks the watermark and the commit journal against the destination's log (one read). The
write is then announced in the journal (sequence + watermark), the writer puts the sequence and the
watermark into the same atomic commit as the data, the watermark is saved and the journal record
settled. A crash anywhere in between is settled by the next run's check.

An append or overwrite of a Delta table from a file or Delta source runs as ONE streaming pass
(:func:`streams`): the read is planned lazily, the transforms added to the plan, and delta-rs pulls
the batches into the commit, so the rows are never held whole. The commit records the new
watermark, so it is known before the write: one aggregate query over the same pinned rows
(:func:`~datacoolie_core.sources.collect_and_watermark.summarize_scan`, reading only the watermark columns)
gives it with the count. Merges and scd2 need the batch whole and collect it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import polars as pl

from datacoolie_core import faults
from datacoolie_core.columns import DATE_FOLDER_PARTITION
from datacoolie_core.destinations import WRITERS, DeltaWriter, get_writer
from datacoolie_core.destinations.base import CommitMarker, ReplaceWindow, Writer
from datacoolie_core.destinations.load_strategies import STREAMED_STRATEGIES
from datacoolie_core.destinations.stream import BatchStream
from datacoolie_core.destinations.touched import TouchedTally, touched_windows
from datacoolie_core.errors import DataCoolieError, SourceError, TransformError
from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.models.run_config import DataCoolieRunConfig
from datacoolie_core.models.runtime import DataFlowRuntimeInfo, OperationType, SourceRuntimeInfo, utc_now
from datacoolie_core.orchestration.state_check import StateCheck, app_id_of, check_state, is_stateful
from datacoolie_core.sources import get_reader
from datacoolie_core.sources.base import ReadRange, ReadRequest, ReadResult, ScanningReader, SourceScan
from datacoolie_core.sources.collect_and_watermark import RowCounter, collect_scan, read_runtime, summarize_scan
from datacoolie_core.sources.shape import expected_columns
from datacoolie_core.transforms import run_pipeline
from datacoolie_core.transforms.base import TransformContext, Transformer
from datacoolie_core.transforms.pipeline import keeps_rows, kept_rows
from datacoolie_core.transforms.resolve import final_destination, final_window
from datacoolie_core.watermark.journal import CommitJournal, PendingCommit
from datacoolie_core.watermark.manager import WatermarkManager
from datacoolie_core.watermark.merge import merge_watermarks
from datacoolie_core.watermark.serializer import serialize_watermark

STREAM_FROM_BYTES = 8 * 2**20
"""Source bytes from which an append/overwrite streams (about 400k rows of a typical parquet table)."""

__all__ = ["DataflowRun", "app_id_of", "prepare_baseline", "run_dataflow"]


@dataclass(frozen=True)
class DataflowRun:
    """What one execution needs besides the dataflow; fixed before the first attempt."""

    watermarks: WatermarkManager | None = None
    """Where the watermark is saved; ``None`` never saves."""
    journal: CommitJournal | None = None
    """Pending-commit journal; ``None`` gives at-least-once delivery only."""
    baseline: Mapping[str, Any] | None = None
    """The stored watermark, loaded once per run (retries read the same window)."""
    state: StateCheck | None = None
    """The checked state (:func:`check_state`): its sequence numbers the write without another log read."""
    read_range: ReadRange | None = None
    """Replay chunk: read exactly this range instead of after the baseline."""
    save_watermark: bool = True
    operation_type: OperationType = "etl"
    run_config: DataCoolieRunConfig = field(default_factory=DataCoolieRunConfig)
    reference_time: datetime = field(default_factory=utc_now)
    transformers: Sequence[Transformer] | None = None
    """Override the default transformer pipeline (plugins, tests)."""


def prepare_baseline(
    dataflow: DataFlow, watermarks: WatermarkManager | None, journal: CommitJournal | None, *, job_id: str | None = None
) -> Mapping[str, Any] | None:
    """Cross-check and settle the state (:func:`check_state`), then return the stored watermark."""
    return check_state(dataflow, watermarks, journal).watermark


def run_dataflow(dataflow: DataFlow, run: DataflowRun, *, dataflow_run_id: str | None = None) -> DataFlowRuntimeInfo:
    """Execute one attempt of ``dataflow``; never raises for a failure of the dataflow itself."""
    info = DataFlowRuntimeInfo(
        dataflow_id=str(dataflow.dataflow_id),
        dataflow_name=str(dataflow.name),
        dataflow_run_id=dataflow_run_id or str(uuid.uuid4()),
        operation_type=run.operation_type,
        status="running",
    )
    try:
        _execute(dataflow, run, info)
    except Exception as e:  # the record carries the error; the caller's retry policy decides
        info.exception = e
        info.finish("failed", error=e)
    return info


def _execute(dataflow: DataFlow, run: DataflowRun, info: DataFlowRuntimeInfo) -> None:
    with _phase(info, "read"):
        result = _read(dataflow, run)
    if isinstance(result, SourceScan) and streams(dataflow, result):
        _execute_streamed(dataflow, run, info, result)
        return
    ctx = TransformContext(dataflow, info.dataflow_run_id, run.reference_time, run.run_config.column_name_mode)
    done = _read_and_transform(dataflow, run, info, result, ctx)
    if done is None:
        info.finish("skipped", reason="no new source rows")
        return
    info.source, data, info.transform.transformers_applied = done
    info.transform.rows_out = data.height
    candidate = info.source.watermark_after if run.save_watermark else None
    if data.height:
        with _phase(info, "write"):
            _write(dataflow, run, info, data, info.source, candidate)
    with _phase(info, "watermark"):
        _save_watermark(dataflow, run, info, candidate)
    info.finish("succeeded")


def _read_and_transform(
    dataflow: DataFlow,
    run: DataflowRun,
    info: DataFlowRuntimeInfo,
    read: SourceScan | ReadResult | None,
    ctx: TransformContext,
) -> tuple[SourceRuntimeInfo, pl.DataFrame, list[str]] | None:
    """The read's record, the transformed rows and the transformers applied; ``None``: no row read.

    A planned read (:func:`_read` plans only one that :func:`_fuses`) is collected once with its
    transforms; otherwise (and when that collect fails, so the error is the one the read or the
    transforms raise on their own) the read is collected, then the transforms run over its rows.
    """
    if isinstance(read, SourceScan):
        with _phase(info, "transform"):
            fused = _collect_fused(read, ctx, run)
        if fused is not None:
            return fused if fused[0].rows_read else None
        with _phase(info, "read"):
            read = collect_scan(read)
    if read is None:
        return None
    info.source = read.runtime  # recorded even when the transforms fail
    with _phase(info, "transform"):
        frame, applied = run_pipeline(read.data.lazy(), ctx, transformers=run.transformers)
        return read.runtime, _collect(frame, dataflow), applied


def _fuses(dataflow: DataFlow, run: DataflowRun) -> bool:
    """Whether the read and the transforms can be collected as one query without changing the record.

    Only when nothing is taken from the rows read but their count, and the count is the rows out:
    a dataflow without watermark columns whose pipeline keeps every row (:func:`keeps_rows`).
    Saves a collect per dataflow (~0.3 ms, most of a 100-row dataflow's transform phase).
    """
    return not is_stateful(dataflow) and keeps_rows(dataflow, run.transformers)


def _collect_fused(
    scan: SourceScan, ctx: TransformContext, run: DataflowRun
) -> tuple[SourceRuntimeInfo, pl.DataFrame, list[str]] | None:
    """The scan and the transforms collected at once; ``None`` on any failure (the caller redoes it in two steps)."""
    try:
        frame, applied = run_pipeline(scan.rows, ctx, transformers=run.transformers)
        if not kept_rows(applied):  # keeps_rows() said no slot drops rows: if one did, count the read apart
            return None
        data = frame.collect()
    except Exception:
        return None
    return read_runtime(scan, data.height, {}), data, applied


def _collect(frame: pl.LazyFrame, dataflow: DataFlow) -> pl.DataFrame:
    """Run the transform plan once; data errors (a bad cast) surface here, as TransformErrors."""
    try:
        return frame.collect()
    except pl.exceptions.PolarsError as e:
        raise TransformError(f"dataflow '{dataflow.name}': the transforms failed on the data: {e}") from e


def _read(dataflow: DataFlow, run: DataflowRun) -> SourceScan | ReadResult | None:
    """The planned read to stream (:func:`streams`) or fuse (:func:`_fuses`), else the rows read; ``None``: nothing qualifies."""
    reader = get_reader(dataflow.source.connection.format or "")
    request = _request(dataflow, run)
    if not isinstance(reader, ScanningReader):
        return reader.read(dataflow.source, request)
    scan = reader.scan(dataflow.source, request)
    if scan is None:
        return None
    return scan if streams(dataflow, scan) or _fuses(dataflow, run) else collect_scan(scan)


def streams(dataflow: DataFlow, scan: SourceScan) -> bool:
    """Whether the dataflow runs as one streaming pass: an append or overwrite of a Delta table.

    Merges need the batch whole (delta-rs joins it with the target): those collect. So do reads of
    less than :data:`STREAM_FROM_BYTES`, where one collect costs less than the streaming machinery.
    """
    destination = dataflow.destination
    return (
        isinstance(WRITERS.get(destination.connection.format or ""), DeltaWriter)
        and destination.load_type in STREAMED_STRATEGIES
        and (scan.size_hint is None or scan.size_hint >= STREAM_FROM_BYTES)
    )


def _execute_streamed(dataflow: DataFlow, run: DataflowRun, info: DataFlowRuntimeInfo, scan: SourceScan) -> None:
    """Read, transform and write in one streaming pass: the rows are never held whole.

    The count and the new watermark (which the commit records, so they are needed before it) come
    from one aggregate query over the same pinned rows, reading only the watermark columns; a
    dataflow without watermark columns counts its rows as they stream instead.
    """
    stateful = is_stateful(dataflow)
    with _phase(info, "read"):
        summary = summarize_scan(scan) if stateful else None
    if stateful and summary is None:
        info.finish("skipped", reason="no new source rows")
        return
    counter = RowCounter() if summary is None else None
    with _phase(info, "transform"):
        ctx = TransformContext(dataflow, info.dataflow_run_id, run.reference_time, run.run_config.column_name_mode)
        rows = scan.rows if counter is None else counter.observe(scan.rows)
        frame, info.transform.transformers_applied = run_pipeline(rows, ctx, transformers=run.transformers)
    spec = run.run_config.touched_windows.get(info.dataflow_id)
    tally = TouchedTally(spec, run.run_config.column_name_mode) if spec is not None else None
    stream = BatchStream(
        frame,
        before_end=scan.check_unchanged,
        on_error=lambda e: _stream_error(dataflow, scan, e),
        on_batch=tally.add if tally is not None else None,
    )
    with _phase(info, "write"):
        empty = stream.is_empty()  # runs the plan up to its first rows: nothing announced before
        if counter is not None and empty and not counter.rows:
            info.finish("skipped", reason="no new source rows")
            return
        candidate = summary.watermark_after if summary is not None and run.save_watermark else None
        info.source = summary or read_runtime(scan, 0, {})
        if not empty:
            _write_stream(dataflow, run, info, stream, info.source, candidate)
        info.transform.rows_out = stream.drain()  # also runs what a recovered write did not pull
        if tally is not None and not empty:  # the caller partitions this table: which windows got rows
            info.destination.touched = tally.result()
    if counter is not None:  # complete now: every row has streamed
        info.source.rows_read = counter.rows
    with _phase(info, "watermark"):
        _save_watermark(dataflow, run, info, candidate)
    info.finish("succeeded")


def _write_stream(
    dataflow: DataFlow,
    run: DataflowRun,
    info: DataFlowRuntimeInfo,
    stream: BatchStream,
    source: SourceRuntimeInfo,
    candidate: Mapping[str, Any] | None,
) -> None:
    try:
        _write(dataflow, run, info, stream, source, candidate)
    except Exception:
        if stream.error is not None:  # delta-rs reports it as its own error: raise what stopped the rows
            raise stream.error from stream.error.__cause__
        raise


def _stream_error(dataflow: DataFlow, scan: SourceScan, error: Exception) -> Exception:
    """An error while the rows streamed, as the collecting path would have raised it.

    A source file rewritten under the read fails it (its cached footer no longer fits): said so.
    """
    if isinstance(error, DataCoolieError):
        return error
    if scan.check_unchanged is not None:
        try:
            scan.check_unchanged()
        except SourceError as changed:
            return changed
    if isinstance(error, OSError):
        return SourceError(
            f"dataflow '{dataflow.name}': reading failed: {error}; check the data and source.read_options"
        )
    if isinstance(error, pl.exceptions.PolarsError):
        return TransformError(
            f"dataflow '{dataflow.name}': the transforms failed on the data: {error} "
            "(read, transformed and written in one pass; check the data and source.read_options too)"
        )
    return error


def _request(dataflow: DataFlow, run: DataflowRun) -> ReadRequest:
    return ReadRequest(
        watermark=None if run.read_range else run.baseline,
        read_range=run.read_range,
        reference_time=run.reference_time,
        allowed_function_prefixes=tuple(run.run_config.allowed_function_prefixes),
        column_name_mode=run.run_config.column_name_mode,
        expected_columns=expected_columns(dataflow, run.run_config.column_name_mode),
    )


def _write(
    dataflow: DataFlow,
    run: DataflowRun,
    info: DataFlowRuntimeInfo,
    data: pl.DataFrame | BatchStream,
    source: SourceRuntimeInfo,
    candidate: Mapping[str, Any] | None,
) -> None:
    writer: Writer = get_writer(dataflow.destination.connection.format or "")
    app_id = app_id_of(dataflow)
    journaled = run.journal is not None and is_stateful(dataflow)
    sequence = _next_sequence(dataflow, run, writer) if journaled else None  # else the writer picks it
    # What the commit records is a lower bound of the rows the table holds: a repair rebuilds from it.
    recorded = merge_watermarks(run.baseline, candidate) if candidate else None
    marker = CommitMarker(
        app_id=app_id,
        sequence=sequence,
        dataflow_run_id=info.dataflow_run_id,
        metadata={"datacoolie.dataflow_id": info.dataflow_id}
        | ({"datacoolie.watermark": serialize_watermark(recorded)} if recorded else {}),
    )
    if journaled and run.journal is not None and sequence is not None:
        run.journal.announce(info.dataflow_id, PendingCommit(app_id, sequence, info.dataflow_run_id, candidate))
    mode = run.run_config.column_name_mode  # metadata may name raw columns; the writer sees the sanitized ones
    destination = final_destination(dataflow.destination, data.columns, mode)
    window = final_window(_replace_window(dataflow, source), data.columns, mode)
    if isinstance(data, BatchStream):
        assert isinstance(writer, DeltaWriter)  # streams() chose this path for Delta writers only
        info.destination = writer.write(data, destination, marker=marker, window=window)
    else:
        info.destination = writer.write(data, destination, marker=marker, window=window)
    spec = run.run_config.touched_windows.get(info.dataflow_id)
    if spec is not None and isinstance(data, pl.DataFrame):  # the caller partitions this table: which windows got rows
        info.destination.touched = touched_windows(data, spec, mode)
    faults.crash_point(faults.AFTER_COMMIT)


def _next_sequence(dataflow: DataFlow, run: DataflowRun, writer: Writer) -> int:
    """One past the checked sequence (fixed for every retry of the run), else one past the log's."""
    if run.state is not None and run.state.checked:
        return (run.state.sequence or 0) + 1
    return (writer.committed_sequence(dataflow.destination, app_id_of(dataflow)) or 0) + 1


def _save_watermark(
    dataflow: DataFlow, run: DataflowRun, info: DataFlowRuntimeInfo, candidate: Mapping[str, Any] | None
) -> None:
    saved = None
    if candidate and run.watermarks is not None:
        saved = run.watermarks.save_watermark(
            info.dataflow_id, candidate, job_id=run.run_config.job_id, dataflow_run_id=info.dataflow_run_id
        )
    sequence = info.destination.commit_sequence
    if run.journal is not None and is_stateful(dataflow) and sequence is not None:
        done = PendingCommit(app_id_of(dataflow), sequence, info.dataflow_run_id, saved, settled=True)
        run.journal.settle(info.dataflow_id, done)


def _replace_window(dataflow: DataFlow, source: SourceRuntimeInfo) -> ReplaceWindow | None:
    """``replace_by_watermark``: replace target rows between the effective and the new watermark."""
    destination = dataflow.destination
    if not destination.configure.replace_by_watermark or destination.load_type != "merge_overwrite":
        return None
    lower, upper = source.watermark_effective or {}, source.watermark_after or {}
    bounds = {
        col: (lower[col], upper[col])
        for col in upper
        if lower.get(col) is not None and upper[col] is not None and col.lower() != DATE_FOLDER_PARTITION
    }  # the folder date is no column of the target: the window is on the data watermark columns
    return ReplaceWindow(bounds) if bounds else None


@contextmanager
def _phase(info: DataFlowRuntimeInfo, name: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        spent = time.perf_counter() - started  # added: a streamed read is planned, then summarized
        info.phase_seconds[name] = round(info.phase_seconds.get(name, 0.0) + spent, 6)
