"""System log: the engine's own Python log records as JSON lines (DataCoolie L-04).

A :class:`SystemLogger` attaches one handler to the ``datacoolie`` and ``datacoolie_core`` loggers
(modules log under either name) and writes every record at or above its level to
``<root>/run_date=YYYY-MM-DD/system_<session_id>.jsonl`` (the driver uses
``<log_base_path>/system_logs``)::

    {"ts", "level", "logger", "msg", "dataflow_id", "module", "func", "line", "exc_info", "session_id"}

``dataflow_id`` is the record's ``extra={"dataflow_id": ...}`` or the context variable set by
:func:`~datacoolie_core.logging.context.dataflow_context`. Lines are written like execution rows:
one ``os.write`` on an ``O_APPEND`` descriptor, secrets masked as ``***`` (message and traceback
included), storage failures reported once and never raised. Propagation is left as configured: the
user's own handlers still see the records; this handler writes each record exactly once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from datacoolie_core.logging.context import current_dataflow_id
from datacoolie_core.logging.execution_logger import (
    FailureReporter,
    JsonLinesAppender,
    Scrubber,
    StreamAppender,
    file_token,
    is_stdout,
    partition_dir,
)

CAPTURED_LOGGERS = ("datacoolie", "datacoolie_core")
"""Namespaces whose records the system log captures (children propagate to them)."""

_levels_lock = threading.Lock()
_attached: dict[str, list[tuple[logging.Handler, int]]] = {}
_original_levels: dict[str, int] = {}


def _attach(handler: logging.Handler, level: int) -> None:
    """Add ``handler`` and lower the loggers' level so records at ``level`` reach it."""
    with _levels_lock:
        for name in CAPTURED_LOGGERS:
            target = logging.getLogger(name)
            entries = _attached.setdefault(name, [])
            if not entries:
                _original_levels[name] = target.level
            entries.append((handler, level))
            target.addHandler(handler)
            _apply_level(name, target)


def _detach(handler: logging.Handler) -> None:
    """Remove ``handler``; the original level comes back when the last system logger detaches."""
    with _levels_lock:
        for name in CAPTURED_LOGGERS:
            target = logging.getLogger(name)
            target.removeHandler(handler)
            _attached[name] = [e for e in _attached.get(name, []) if e[0] is not handler]
            _apply_level(name, target)


def _apply_level(name: str, target: logging.Logger) -> None:
    original = _original_levels.get(name, logging.NOTSET)
    wanted = [level for _, level in _attached.get(name, [])]
    if not wanted:
        target.setLevel(original)
        return
    lowest = min(wanted)
    target.setLevel(lowest if original == logging.NOTSET else min(original, lowest))


class _Handler(logging.Handler):
    def __init__(self, owner: SystemLogger, level: int) -> None:
        super().__init__(level)
        self._owner = owner
        self._busy = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        # A failure report is itself a datacoolie record: never let it re-enter this handler.
        if getattr(self._busy, "active", False):
            return
        self._busy.active = True
        try:
            self._owner._write(record)
        finally:
            self._busy.active = False


class SystemLogger:
    """Captures ``datacoolie`` log records into date-partitioned JSON lines.

    Example:
        >>> with SystemLogger("logs/system_logs", session_id=job_id) as system_log:  # doctest: +SKIP
        ...     logging.getLogger("datacoolie.driver").info("session.ready")
    """

    def __init__(
        self,
        root: str | Path,
        *,
        session_id: str,
        level: int = logging.INFO,
        secrets: Iterable[str] = (),
    ) -> None:
        self.root = Path(root)
        self.session_id = session_id
        self._scrubber = Scrubber(secrets)
        # root "-": the lines go to standard output (see execution_logger.STDOUT)
        self._appender = StreamAppender() if is_stdout(root) else JsonLinesAppender()
        self._reporter = FailureReporter(f"system log of session {session_id}")
        self._handler = _Handler(self, level)
        self._closed = False
        self._close_lock = threading.Lock()
        _attach(self._handler, level)

    def log_path(self, when: datetime) -> Path:
        """Where a record created at ``when`` goes."""
        return self.root / partition_dir(when) / f"system_{file_token(self.session_id)}.jsonl"

    def add_secrets(self, values: Iterable[str]) -> None:
        """Mask these values in every record written from now on."""
        self._scrubber.add(values)

    def close(self) -> None:
        """Detach from the loggers and release the file; idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        _detach(self._handler)
        self._appender.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> SystemLogger:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _write(self, record: logging.LogRecord) -> None:
        if self._closed:
            return
        created = datetime.fromtimestamp(record.created, UTC)
        try:
            self._appender.append(self.log_path(created), self._scrubber.line(self._row(record, created)))
        except Exception as e:  # logging never fails the pipeline
            self._reporter.report(e)

    def _row(self, record: logging.LogRecord, created: datetime) -> dict[str, Any]:
        return {
            "ts": created.isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "msg": _message(record),
            "dataflow_id": getattr(record, "dataflow_id", None) or current_dataflow_id.get(),
            "module": record.module,
            "func": record.funcName,
            "line": record.lineno,
            "exc_info": _exception_text(record),
            "session_id": self.session_id,
        }


def _message(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception:  # bad %-args must not lose the record
        return f"{record.msg} {record.args!r}"


def _exception_text(record: logging.LogRecord) -> str | None:
    if record.exc_info and record.exc_info[0] is not None:
        return logging.Formatter().formatException(record.exc_info)
    return record.exc_text or None
