"""The pending-commit journal: how a write and its watermark save become exactly-once together.

A destination commit and a watermark save are two durable steps; a crash between them must not
make the next run write the same rows again. Before writing, the runner records a
:class:`PendingCommit` (the sequence number its commit will carry and the watermark it will save);
the writer puts that sequence into the same atomic commit as the data. On the next run,
:meth:`CommitJournal.recover` compares the journal with what the destination committed: if the
write landed, its watermark is saved now; if not, the journal entry is dropped and the same window
is read again. Either way nothing is lost and nothing is written twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from datacoolie_core.errors import WatermarkError
from datacoolie_core.watermark.manager import WatermarkManager
from datacoolie_core.watermark.serializer import deserialize_watermark, serialize_watermark

PENDING_COMMIT_FILE_NAME = "pending_commit.json"


class CommitJournalStorage(Protocol):
    """Where a provider keeps one pending-commit record per dataflow (opaque text, atomic writes)."""

    def get_pending_commit(self, dataflow_id: str) -> str | None: ...

    def set_pending_commit(self, dataflow_id: str, value: str | None) -> None:
        """Store ``value`` atomically; ``None`` removes the record."""
        ...


@dataclass(frozen=True)
class PendingCommit:
    """A write that has been announced but whose watermark is not yet known to be saved."""

    app_id: str
    sequence: int
    dataflow_run_id: str
    watermark: Mapping[str, Any] | None = field(default=None)
    """The watermark to save once the commit is known to have landed (``None``: save nothing)."""

    def to_text(self) -> str:
        watermark = serialize_watermark(self.watermark) if self.watermark else None
        return json.dumps(
            {
                "app_id": self.app_id,
                "sequence": self.sequence,
                "dataflow_run_id": self.dataflow_run_id,
                "watermark": watermark,
            },
            sort_keys=True,
        )

    @classmethod
    def from_text(cls, text: str, *, dataflow_id: str) -> PendingCommit:
        try:
            raw = json.loads(text)
            watermark = deserialize_watermark(raw["watermark"]) if raw.get("watermark") else None
            return cls(str(raw["app_id"]), int(raw["sequence"]), str(raw["dataflow_run_id"]), watermark)
        except (ValueError, KeyError, TypeError) as e:
            raise WatermarkError(
                f"pending-commit record is corrupt ({e}); it is not ignored, because the write it "
                "announces may have landed. Fix: check the destination, then delete the record",
                dataflow_id=dataflow_id,
            ) from e


class CommitJournal:
    """Announce writes before they happen and settle them after a crash."""

    def __init__(self, storage: CommitJournalStorage, watermarks: WatermarkManager) -> None:
        self._storage = storage
        self._watermarks = watermarks

    def pending(self, dataflow_id: str) -> PendingCommit | None:
        text = self._storage.get_pending_commit(dataflow_id)
        return PendingCommit.from_text(text, dataflow_id=dataflow_id) if text else None

    def announce(self, dataflow_id: str, commit: PendingCommit) -> None:
        self._storage.set_pending_commit(dataflow_id, commit.to_text())

    def settle(self, dataflow_id: str, *, job_id: str | None = None) -> None:
        """The commit landed and its watermark (if any) is saved: forget the record."""
        self._storage.set_pending_commit(dataflow_id, None)

    def recover(
        self, dataflow_id: str, committed_sequence: Callable[[str], int | None], *, job_id: str | None = None
    ) -> PendingCommit | None:
        """Settle a write left pending by an interrupted run.

        Args:
            committed_sequence: ``app_id -> last sequence the destination committed`` (the writer's).

        Returns:
            The pending commit when it had landed (its watermark is now saved), else ``None``.
        """
        commit = self.pending(dataflow_id)
        if commit is None:
            return None
        landed = (committed_sequence(commit.app_id) or 0) >= commit.sequence
        if landed and commit.watermark:
            self._watermarks.save_watermark(
                dataflow_id, commit.watermark, job_id=job_id, dataflow_run_id=commit.dataflow_run_id
            )
        self._storage.set_pending_commit(dataflow_id, None)
        return commit if landed else None
