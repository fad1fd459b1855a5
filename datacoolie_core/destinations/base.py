"""The writer contract, and what each write records in its own commit for exactly-once delivery."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import polars as pl

from datacoolie_core.models.dataflow import Destination
from datacoolie_core.models.runtime import DestinationRuntimeInfo


@dataclass(frozen=True)
class CommitMarker:
    """Identity of one write, committed atomically with its data.

    ``app_id`` is ``datacoolie:<dataflow_id>``; ``sequence`` is the last committed sequence of that
    app id plus one. After a crash, :meth:`Writer.committed_sequence` tells whether the write landed.
    """

    app_id: str
    sequence: int | None
    """This write's sequence; ``None`` lets the writer take the next one from the snapshot it opens
    (saves a second open of the table when nobody needs the number before the write)."""
    dataflow_run_id: str
    metadata: Mapping[str, str] = field(default_factory=dict)
    """Extra commit metadata (Delta ``commitInfo``), e.g. the serialized watermark candidate."""


def next_marker(marker: CommitMarker, committed: int | None) -> CommitMarker:
    """``marker`` with a concrete sequence: as given, or the one after ``committed``."""
    if marker.sequence is not None:
        return marker
    return dataclasses.replace(marker, sequence=(committed or 0) + 1)


@dataclass(frozen=True)
class ReplaceWindow:
    """``replace_by_watermark``: target rows with ``lower < column <= upper`` (all columns) are replaced."""

    bounds: Mapping[str, tuple[Any, Any]]


class Writer(Protocol):
    """Writes one destination format with the destination's load strategy.

    Contract: one write is one atomic commit wherever the format allows, and carries ``marker``
    in that commit; where two commits are unavoidable the next run repairs an interruption between
    them. Metrics come from the commit itself. Raise
    :class:`~datacoolie_core.errors.DestinationError` (or ``CommitConflictError`` for a concurrent
    writer) when the write cannot happen.
    """

    def committed_sequence(self, destination: Destination, app_id: str) -> int | None:
        """The last sequence committed for ``app_id``; ``None`` if the target or the app id is absent."""
        ...

    def write(
        self,
        frame: pl.DataFrame,
        destination: Destination,
        *,
        marker: CommitMarker,
        window: ReplaceWindow | None = None,
    ) -> DestinationRuntimeInfo: ...


@dataclass(frozen=True)
class LogState:
    """What a destination's commit log says about one app id, from ONE read of the log."""

    exists: bool
    """The destination table exists (has a commit log)."""
    sequence: int | None
    """The app id's last committed sequence; ``None`` when it never committed there."""


@dataclass(frozen=True)
class AppCommit:
    """One commit of an app id, as its commit log records it."""

    sequence: int
    version: int
    watermark: str | None
    """The serialized watermark the commit recorded (``None``: the write saved none)."""


@runtime_checkable
class CommitLog(Protocol):
    """A writer whose destination keeps a commit log the engine can cross-check its state against.

    ``log_state`` must cost one read of the log (it runs before every write); ``app_commits`` may
    read the whole history (it runs only to repair state) and returns newest first.
    """

    def log_state(self, destination: Destination, app_id: str) -> LogState: ...

    def app_commits(self, destination: Destination, app_id: str) -> list[AppCommit]: ...
