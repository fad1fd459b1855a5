"""Runtime records of one dataflow execution (DataCoolie L-08), filled in as the phases run."""

from __future__ import annotations

import copy
import uuid
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from datacoolie_core.redaction import mask

Status = Literal["pending", "running", "succeeded", "failed", "skipped"]
OperationType = Literal["etl", "replay", "maintenance"]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class SourceRuntimeInfo:
    """What the read did: rows, watermarks before/effective/after, the exact action (files, SQL)."""

    rows_read: int = 0
    watermark_before: dict[str, Any] | None = None
    """The stored watermark the read started from."""
    watermark_effective: dict[str, Any] | None = None
    """The lower bounds actually applied (after look-back)."""
    watermark_after: dict[str, Any] | None = None
    """Max per watermark column over the rows read (the candidate to save)."""
    source_action: dict[str, Any] = field(default_factory=dict)
    """Reader-specific: files listed/read, SQL submitted, Delta version read, ..."""


@dataclass
class TransformRuntimeInfo:
    transformers_applied: list[str] = field(default_factory=list)
    """Labels in slot order, e.g. ``SchemaConverter(2 casts)``, ``Deduplicator(RANK)``."""
    rows_out: int = 0


@dataclass
class TouchedWindows:
    """The windows of one column a write's rows fall in (asked for by a ``WindowSpec``).

    ``starts[i]`` is a window start (date, datetime or int, in the column's type; naive datetimes and
    dates are UTC), ``rows[i]`` the rows of the write in that window. Rows whose value is null are in
    no window (``null_rows``).
    """

    column: str
    every: str | int
    starts: list[Any] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    null_rows: int = 0


@dataclass
class DestinationRuntimeInfo:
    """What the write committed (from the commit itself, not a history re-read)."""

    operation_type: str = ""
    rows_written: int = 0
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    files_added: int = 0
    files_removed: int = 0
    bytes_added: int = 0
    bytes_removed: int = 0
    table_version: int | None = None
    """Delta table version created by the write."""
    commit_sequence: int | None = None
    """This dataflow's write sequence recorded in the commit (exactly-once bookkeeping)."""
    null_key_rows: int = 0
    """Rows of a merge batch with a null merge key: they match no stored row and are inserted."""
    recovered: bool = False
    """True when the write had already landed in an interrupted earlier run and was not repeated."""
    touched: TouchedWindows | None = None
    """The windows the written rows fall in, when the run config asked for this dataflow's."""


@dataclass
class DataFlowRuntimeInfo:
    """One execution of one dataflow (one replay chunk, one maintenance target)."""

    dataflow_id: str
    dataflow_name: str
    dataflow_run_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    operation_type: OperationType = "etl"
    status: Status = "pending"
    error_message: str | None = None
    error_type: str | None = None
    start_time: datetime = field(default_factory=utc_now)
    end_time: datetime | None = None
    phase_seconds: dict[str, float] = field(default_factory=dict)
    """Wall time per phase: ``read``, ``transform``, ``write``, ``watermark``."""
    source: SourceRuntimeInfo = field(default_factory=SourceRuntimeInfo)
    transform: TransformRuntimeInfo = field(default_factory=TransformRuntimeInfo)
    destination: DestinationRuntimeInfo = field(default_factory=DestinationRuntimeInfo)
    retry_attempts: int = 0
    skip_reason: str | None = None
    replay_chunk: dict[str, Any] | None = None
    """For one replay chunk: ``index``, ``key``, ``start`` (inclusive) and ``end`` (exclusive)."""
    chunks: list[DataFlowRuntimeInfo] = field(default_factory=list)
    """For a replay's aggregate record: each chunk's own record, in order."""
    operations: dict[str, dict[str, int]] = field(default_factory=dict)
    """For a maintenance target: ``{"compact" | "cleanup": {files_added, files_removed, bytes_added,
    bytes_removed}}`` (``destination`` holds their sums; a vacuum may delete the files a compaction removed)."""
    exception: BaseException | None = field(default=None, repr=False, compare=False)
    """The error of a failed run, for the caller's retry policy (not serialized)."""

    @property
    def duration_seconds(self) -> float | None:
        return (self.end_time - self.start_time).total_seconds() if self.end_time else None

    def finish(self, status: Status, *, error: BaseException | None = None, reason: str | None = None) -> None:
        self.status = status
        self.end_time = utc_now()
        self.skip_reason = reason
        if error is not None:
            self.error_message = mask(str(error))  # the record is printed, logged and shown in Dagster
            self.error_type = type(error).__name__

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly record (the exception object is left out; its message is kept)."""
        record = {
            f.name: asdict(value) if is_dataclass(value) and not isinstance(value, type) else copy.deepcopy(value)
            for f in fields(self)
            if f.name not in ("exception", "chunks")
            for value in [getattr(self, f.name)]
        }
        record["chunks"] = [chunk.to_dict() for chunk in self.chunks]
        return record | {"duration_seconds": self.duration_seconds}


@dataclass
class ExecutionResult:
    """Outcome of one executor invocation (a run, a replay, a maintenance pass).

    Counts are of submitted dataflows (a replay dataflow counts once, whatever its chunks).
    ``runtimes`` holds one record per submitted dataflow, withheld ones with status ``pending``.
    """

    total: int = 0
    succeeded: int = 0
    failed: int = 0
    skipped: int = 0
    running: int = 0
    """Always 0 when the executor returns: admitted work is drained."""
    pending: int = 0
    """Never admitted (for example withheld after ``stop_on_error``)."""
    runtimes: list[DataFlowRuntimeInfo] = field(default_factory=list)
    duration_seconds: float = 0.0

    @property
    def errors(self) -> dict[str, str]:
        """``dataflow_id -> error message`` of the failed dataflows."""
        return {r.dataflow_id: r.error_message or "" for r in self.runtimes if r.status == "failed"}

    @property
    def has_failures(self) -> bool:
        return self.failed > 0

    @property
    def success_rate(self) -> float:
        return self.succeeded / self.total if self.total else 0.0

    def failure_summary(self) -> str:
        """Failed dataflows as ``name [id]`` separated by ``;`` (DataCoolie's JobRuntime summary)."""
        return "; ".join(f"{r.dataflow_name} [{r.dataflow_id}]" for r in self.runtimes if r.status == "failed")

    def raise_on_failures(self) -> None:
        """Raise :class:`~datacoolie_core.errors.DataCoolieError` naming every failed dataflow."""
        from datacoolie_core.errors import DataCoolieError

        if self.failed:
            details = "\n".join(
                f"  {r.dataflow_name} [{r.dataflow_id}]: {r.error_message}"
                for r in self.runtimes
                if r.status == "failed"
            )
            raise DataCoolieError(f"{self.failed} of {self.total} dataflow(s) failed:\n{details}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "skipped": self.skipped,
            "running": self.running,
            "pending": self.pending,
            "duration_seconds": self.duration_seconds,
            "dataflows": [r.to_dict() for r in self.runtimes],
        }
