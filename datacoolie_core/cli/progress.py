"""Progress of a CLI run: one rewritten status line on a terminal, plain lines otherwise."""

from __future__ import annotations

import threading
from typing import TextIO

from datacoolie_core.models.runtime import DataFlowRuntimeInfo, ExecutionResult


class Progress:
    """Reports each finished dataflow; the executor calls :meth:`update` as dataflows complete."""

    def __init__(self, stream: TextIO, *, enabled: bool = True) -> None:
        self.stream = stream
        self.enabled = enabled
        self.tty = enabled and stream.isatty()
        self.done = 0
        self.failed: list[str] = []
        self._lock = threading.Lock()

    def update(self, runtime: DataFlowRuntimeInfo) -> None:
        with self._lock:
            self.done += 1
            if runtime.status == "failed":
                self.failed.append(runtime.dataflow_name)
            if not self.enabled:
                return
            if self.tty:
                failures = f", failed: {', '.join(self.failed[-3:])}" if self.failed else ""
                self.stream.write(
                    f"\r\033[K{self.done} done{failures} — last: {runtime.dataflow_name} {runtime.status}"
                )
            else:
                self.stream.write(_line(self.done, runtime) + "\n")
            self.stream.flush()

    def finish(self, result: ExecutionResult) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\n")
            for runtime in result.runtimes:
                self.stream.write(_line(None, runtime) + "\n")
        self.stream.write(
            f"{result.total} dataflow(s): {result.succeeded} succeeded, {result.failed} failed, "
            f"{result.skipped} skipped, {result.pending} pending in {result.duration_seconds:.2f} s\n"
        )
        if result.failed:
            self.stream.write(f"failed: {result.failure_summary()}\n")
        self.stream.flush()


def describe(runtime: DataFlowRuntimeInfo) -> str:
    """One line for a finished dataflow: status, name, and what it did (rows, files), why it skipped or failed."""
    return _line(None, runtime)


def _line(done: int | None, runtime: DataFlowRuntimeInfo) -> str:
    counter = f"[{done}] " if done is not None else ""
    detail = (
        f"error: {runtime.error_message}"
        if runtime.status == "failed"
        else f"reason: {runtime.skip_reason}"
        if runtime.status == "skipped"
        else _maintained(runtime)
        if runtime.operation_type == "maintenance"
        else f"read {runtime.source.rows_read}, wrote {runtime.destination.rows_written}"
    )
    seconds = f" in {runtime.duration_seconds:.2f} s" if runtime.duration_seconds is not None else ""
    return f"{counter}{runtime.status:<9} {runtime.dataflow_name} ({detail}){seconds}"


def _maintained(runtime: DataFlowRuntimeInfo) -> str:
    """What a maintenance target did, operation by operation, and the table version it left."""
    done = [_OPERATION_TEXT.get(name, _other)(figures) for name, figures in runtime.operations.items()]
    return "; ".join([*done, f"table version {runtime.destination.table_version}"])


def _compacted(figures: dict[str, int]) -> str:
    if not figures["files_removed"]:
        return "compacted: nothing to compact"
    return (
        f"compacted {figures['files_removed']} file(s) ({_size(figures['bytes_removed'])}) "
        f"into {figures['files_added']} ({_size(figures['bytes_added'])})"
    )


def _vacuumed(figures: dict[str, int]) -> str:
    if not figures["files_removed"]:
        return "vacuumed: no unreferenced file past the retention"
    return f"vacuumed {figures['files_removed']} unreferenced file(s) ({_size(figures['bytes_removed'])} deleted)"


def _other(figures: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in figures.items())


_OPERATION_TEXT = {"compact": _compacted, "cleanup": _vacuumed}


def _size(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")
