"""Execution log: one JSON line per dataflow execution, one JSON snapshot per job (DataCoolie L-05 … L-10).

Layout under the logger's root (the driver uses ``<log_base_path>/execution_logs``)::

    dataflow_run_log/run_date=YYYY-MM-DD/job_<job_id>.jsonl   one line per execution, appended
    job_run_log/run_date=YYYY-MM-DD/job_<job_id>.json         the job summary, rewritten atomically

Each dataflow line is written with a single ``os.write`` on an ``O_APPEND`` descriptor, straight to
the kernel: a SIGKILL loses at most the line being written, and lines of concurrent writers never
interleave. Dataflow lines are partitioned by the UTC date they are written; the job snapshot stays
in the partition of the job's start so rewrites replace it. Every registered secret
(:mod:`datacoolie_core.redaction`) is replaced by ``***`` in every string of a row, keys included.
Storage failures are reported once on the ``datacoolie.logging`` logger and never raised into the
pipeline.

``log_base_path="-"`` (:data:`STDOUT`) writes the same lines, and the job snapshot as a line, to
standard output instead (:class:`StreamAppender`): on a host whose disk is not kept (a Kubernetes
pod, a Celery worker), the orchestrator collects them with the step's output.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, is_dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from pathlib import Path, PurePath
from types import TracebackType
from typing import Any
from urllib.parse import quote

from datacoolie_core.models.dataflow import ConnectionRef, DataFlow
from datacoolie_core.models.runtime import DataFlowRuntimeInfo
from datacoolie_core.redaction import mask, register_secrets

LOG_SCHEMA_VERSION = 1
STDOUT = "-"
"""The ``log_base_path`` that sends the execution and system logs to standard output, not files."""
internal_logger = logging.getLogger("datacoolie.logging")
_stream_lock = threading.Lock()

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


def partition_dir(when: datetime) -> str:
    """``run_date=YYYY-MM-DD`` of the UTC date of ``when``."""
    return f"run_date={when.astimezone(UTC).date().isoformat()}"


def file_token(value: str) -> str:
    """``value`` made safe as one file-name component (percent-encoded, as DataCoolie 0.2.0)."""
    return quote(value, safe="")


class Scrubber:
    """Turns a value into JSON-ready data with every secret masked (:func:`~datacoolie_core.redaction.mask`).

    A view on the process-wide secret registry: secrets given here are registered there, so every
    other output masks them too.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        register_secrets(secrets)

    def text(self, value: str) -> str:
        return mask(value)

    def data(self, value: Any) -> Any:
        """JSON-ready copy of ``value``: datetimes ISO, Decimal and paths as text, secrets masked."""
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, str):
            return self.text(str(value))
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self.data(v) for v in value]
        if isinstance(value, datetime | date | time):
            return value.isoformat()
        if is_dataclass(value) and not isinstance(value, type):
            return self.data(asdict(value))
        if isinstance(value, Decimal | PurePath):
            return self.text(str(value))
        if isinstance(value, BaseException):
            return self.text(f"{type(value).__name__}: {value}")
        return self.text(str(value))

    def line(self, record: Mapping[str, Any]) -> bytes:
        """One scrubbed JSON line, newline-terminated."""
        return (json.dumps(self.data(record), ensure_ascii=False, allow_nan=True) + "\n").encode("utf-8")


class JsonLinesAppender:
    """Appends whole lines with one ``os.write`` each on ``O_APPEND`` descriptors (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fds: dict[Path, int] = {}
        self._closed = False

    def append(self, path: Path, line: bytes) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"appender is closed; line for {path} dropped")
            fd = self._fds.get(path)
            if fd is None:
                self._close_all()  # a new partition (date rollover): older files are done
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                self._fds[path] = fd
            written = os.write(fd, line)
            while written < len(line):  # a short write is rare on local files; finish the line
                written += os.write(fd, line[written:])

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._close_all()

    def _close_all(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):  # already gone: nothing left to release
                os.close(fd)
        self._fds.clear()


class StreamAppender:
    """Writes whole lines to standard output (file descriptor 1), one ``os.write`` each, one writer
    at a time; ``path`` (where the line would go as a file) only names the kind of line.

    The descriptor, not ``sys.stdout``: whatever captures the process's output at that level (a
    Dagster step's captured log, a container runtime) sees every line, from every thread.
    """

    def __init__(self, fd: int = 1) -> None:
        self._fd = fd

    def append(self, path: Path, line: bytes) -> None:
        with _stream_lock:
            written = os.write(self._fd, line)
            while written < len(line):
                written += os.write(self._fd, line[written:])

    def close(self) -> None:
        """Nothing to release: standard output stays open."""


def is_stdout(log_base_path: str | os.PathLike[str]) -> bool:
    """Whether ``log_base_path`` is :data:`STDOUT`."""
    return os.fspath(log_base_path) == STDOUT


class FailureReporter:
    """Reports the first storage failure of a logger on ``datacoolie.logging``; later ones are counted."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.failures = 0

    def report(self, error: BaseException) -> None:
        self.failures += 1
        if self.failures == 1:
            internal_logger.warning(
                "%s: writing the log failed (%s: %s); the pipeline continues, later failures are not reported",
                self.what,
                type(error).__name__,
                error,
            )


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` via a temp file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def dataflow_identity(dataflow: DataFlow) -> dict[str, Any]:
    """The authored identity of a dataflow for a log row (the query as written, not the file content)."""
    source, destination = dataflow.source, dataflow.destination
    return {
        "dataflow_name": dataflow.name,
        "stage": dataflow.stage,
        "group_number": dataflow.group_number,
        "execution_order": dataflow.execution_order,
        "source_connection": _connection_name(source),
        "source_schema": source.schema_name,
        "source_table": source.table,
        "source_query": source.query,
        "destination_connection": _connection_name(destination),
        "destination_schema": destination.schema_name,
        "destination_table": destination.table,
        "destination_load_type": destination.load_type,
    }


def _connection_name(ref: ConnectionRef) -> str | None:
    if ref.connection_name is not None:
        return ref.connection_name
    return ref.inline_connection.name if ref.inline_connection is not None else None


class ExecutionLogger:
    """Writes the execution log of one job (see the module docstring for layout and guarantees).

    Example:
        >>> with ExecutionLogger("logs/execution_logs", job_id=run_config.job_id) as log:  # doctest: +SKIP
        ...     log.log_dataflow(runtime, dataflow)
        ...     log.log_job(summary)
    """

    def __init__(
        self,
        root: str | Path,
        *,
        job_id: str,
        secrets: Iterable[str] = (),
        clock: Clock = _utc_now,
    ) -> None:
        self.root = Path(root)
        self.job_id = job_id
        self._clock = clock
        self._started = clock()
        self._scrubber = Scrubber(secrets)
        self._stream = StreamAppender() if is_stdout(root) else None
        self._appender: JsonLinesAppender | StreamAppender = self._stream or JsonLinesAppender()
        self._reporter = FailureReporter(f"execution log of job {job_id}")
        self._job_lock = threading.Lock()
        self._closed = False

    @property
    def job_log_path(self) -> Path:
        """Where :meth:`log_job` writes (the partition of the job's start)."""
        return self.root / "job_run_log" / partition_dir(self._started) / f"job_{file_token(self.job_id)}.json"

    def dataflow_log_path(self, when: datetime) -> Path:
        """Where a dataflow row logged at ``when`` goes."""
        return self.root / "dataflow_run_log" / partition_dir(when) / f"job_{file_token(self.job_id)}.jsonl"

    def add_secrets(self, values: Iterable[str]) -> None:
        """Mask these values in every row written from now on."""
        self._scrubber.add(values)

    def log_dataflow(self, runtime: DataFlowRuntimeInfo, dataflow: DataFlow | None = None) -> None:
        """Append one row: the runtime record plus the dataflow's authored identity.

        Raises:
            RuntimeError: the logger is closed. Storage failures are reported, never raised.
        """
        self._check_open()
        now = self._clock()
        row: dict[str, Any] = {
            "_type": "dataflow_run_log",
            "log_schema_version": LOG_SCHEMA_VERSION,
            "job_id": self.job_id,
            "logged_at": now,
            **runtime.to_dict(),
        }
        if dataflow is not None:
            row |= dataflow_identity(dataflow)
        try:
            self._appender.append(self.dataflow_log_path(now), self._scrubber.line(row))
        except Exception as e:  # logging never fails the pipeline
            self._reporter.report(e)

    def log_job(self, summary: Mapping[str, Any]) -> None:
        """Write (or rewrite) the job snapshot atomically.

        Raises:
            RuntimeError: the logger is closed. Storage failures are reported, never raised.
        """
        self._check_open()
        document = {
            "_type": "job_run_log",
            "log_schema_version": LOG_SCHEMA_VERSION,
            "job_id": self.job_id,
            "logged_at": self._clock(),
            **summary,
        }
        try:
            with self._job_lock:
                if self._stream is not None:  # each snapshot a line: the last one is the job's final state
                    self._stream.append(self.job_log_path, self._scrubber.line(document))
                else:
                    write_atomically(self.job_log_path, self._scrubber.line(document))
        except Exception as e:
            self._reporter.report(e)

    def close(self) -> None:
        """Release the log files; idempotent. Logging afterwards raises ``RuntimeError``."""
        self._closed = True
        self._appender.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> ExecutionLogger:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"the execution logger of job {self.job_id} is closed; create a new one to log")
