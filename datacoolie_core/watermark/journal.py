"""The commit journal: how a write and its watermark save become exactly-once together.

A destination commit and a watermark save are two durable steps; a crash between them must not
make the next run write the same rows again. Before writing, the runner records a *pending*
:class:`PendingCommit` (the sequence number its commit will carry and the watermark it will save);
the writer puts that sequence into the same atomic commit as the data. After the watermark is
saved the record is rewritten as *settled*: it stays, so the state always knows the last sequence
it wrote and the destination's log can be cross-checked against it before the next write (a
deleted log entry or a restored table shows up as a destination behind the state). The
cross-check and the settling of an interrupted write live in
:mod:`datacoolie_core.orchestration.state_check`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from datacoolie_core.errors import WatermarkError
from datacoolie_core.watermark.manager import WatermarkManager
from datacoolie_core.watermark.serializer import STATE_FIX, deserialize_watermark, serialize_watermark

PENDING_COMMIT_FILE_NAME = "pending_commit.json"
"""The journal's file beside the watermark (the name predates settled records; kept for old state)."""


class CommitJournalStorage(Protocol):
    """Where a provider keeps one commit record per dataflow (opaque text, atomic writes)."""

    def get_pending_commit(self, dataflow_id: str) -> str | None: ...

    def set_pending_commit(self, dataflow_id: str, value: str | None, *, durable: bool = True) -> None:
        """Store ``value`` atomically; ``None`` removes the record.

        ``durable=False`` may skip syncing to disk: the record may then be lost in a power cut.
        """
        ...


@dataclass(frozen=True)
class PendingCommit:
    """The last write of a dataflow: announced (pending) or known to be complete (settled)."""

    app_id: str
    sequence: int
    dataflow_run_id: str
    watermark: Mapping[str, Any] | None = field(default=None)
    """Pending: the watermark to save once the commit landed. Settled: the watermark saved with it."""
    settled: bool = False

    def as_settled(self, watermark: Mapping[str, Any] | None = None) -> PendingCommit:
        return dataclasses.replace(self, settled=True, watermark=watermark or self.watermark)

    def to_text(self) -> str:
        watermark = serialize_watermark(self.watermark) if self.watermark else None
        return json.dumps(
            {
                "app_id": self.app_id,
                "sequence": self.sequence,
                "dataflow_run_id": self.dataflow_run_id,
                "watermark": watermark,
                "state": "settled" if self.settled else "pending",
            },
            sort_keys=True,
        )

    @classmethod
    def from_text(cls, text: str, *, dataflow_id: str) -> PendingCommit:
        try:
            raw = json.loads(text)
            watermark = deserialize_watermark(raw["watermark"]) if raw.get("watermark") else None
            state = raw.get("state", "pending")  # records written before settled ones existed
            if state not in ("pending", "settled") or int(raw["sequence"]) < 1:
                raise ValueError(f"state {state!r}, sequence {raw['sequence']!r}")
            settled = state == "settled"
            return cls(str(raw["app_id"]), int(raw["sequence"]), str(raw["dataflow_run_id"]), watermark, settled)
        except (ValueError, KeyError, TypeError, AttributeError, WatermarkError) as e:
            raise WatermarkError(
                f"commit journal record is corrupt ({e}). Fix: {STATE_FIX}",
                dataflow_id=dataflow_id,
            ) from e


class CommitJournal:
    """Announce writes before they happen and record them once they are complete."""

    def __init__(self, storage: CommitJournalStorage, watermarks: WatermarkManager) -> None:
        self._storage = storage
        self._watermarks = watermarks

    def record(self, dataflow_id: str) -> PendingCommit | None:
        """The last record, pending or settled; ``None`` when there is none.

        Raises:
            WatermarkError: the record exists but cannot be read (empty, truncated, not ours).
        """
        text = self._storage.get_pending_commit(dataflow_id)
        return None if text is None else PendingCommit.from_text(text, dataflow_id=dataflow_id)

    def pending(self, dataflow_id: str) -> PendingCommit | None:
        """The record if its write is still unsettled."""
        record = self.record(dataflow_id)
        return record if record is not None and not record.settled else None

    def announce(self, dataflow_id: str, commit: PendingCommit) -> None:
        self._storage.set_pending_commit(dataflow_id, commit.to_text())

    def settle(self, dataflow_id: str, commit: PendingCommit | None = None) -> None:
        """Record ``commit`` as complete (its watermark is saved); ``None`` forgets every record.

        Not synced to disk: the watermark was saved durably before, and a settled record lost in a
        power cut reads back as the pending one (the log shows it landed) or as unreadable (rebuilt
        from the log); either way the next run settles it again. That keeps a durable write off
        every run.
        """
        text = None if commit is None else commit.as_settled().to_text()
        self._storage.set_pending_commit(dataflow_id, text, durable=False)

    def location(self, dataflow_id: str) -> str | None:
        """Where the record lives (a file, a table and key), for messages; ``None`` when unknown."""
        named = getattr(self._storage, "journal_location", None)
        if callable(named):
            return str(named(dataflow_id))
        where = self._watermarks.location(dataflow_id)
        return None if where is None else where.rsplit("/", 1)[0] + "/" + PENDING_COMMIT_FILE_NAME
