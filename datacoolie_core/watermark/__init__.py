"""Watermarks: encoding, never-backward merging, state stores (files, PostgreSQL) and the manager tying them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datacoolie_core.lazy import lazy_exports

if TYPE_CHECKING:
    from datacoolie_core.watermark.file_store import FileWatermarkStore
    from datacoolie_core.watermark.journal import CommitJournal, CommitJournalStorage, PendingCommit
    from datacoolie_core.watermark.manager import WatermarkManager, WatermarkStorage
    from datacoolie_core.watermark.merge import merge_watermarks
    from datacoolie_core.watermark.migrate import migrate_state
    from datacoolie_core.watermark.postgres_store import PostgresStateStore
    from datacoolie_core.watermark.serializer import (
        deserialize_watermark,
        is_watermark_empty,
        serialize_watermark,
    )
    from datacoolie_core.watermark.store import StateStore, open_state_store

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "FileWatermarkStore": "datacoolie_core.watermark.file_store",
        "CommitJournal": "datacoolie_core.watermark.journal",
        "CommitJournalStorage": "datacoolie_core.watermark.journal",
        "PendingCommit": "datacoolie_core.watermark.journal",
        "WatermarkManager": "datacoolie_core.watermark.manager",
        "WatermarkStorage": "datacoolie_core.watermark.manager",
        "merge_watermarks": "datacoolie_core.watermark.merge",
        "migrate_state": "datacoolie_core.watermark.migrate",
        "PostgresStateStore": "datacoolie_core.watermark.postgres_store",
        "StateStore": "datacoolie_core.watermark.store",
        "open_state_store": "datacoolie_core.watermark.store",
        "deserialize_watermark": "datacoolie_core.watermark.serializer",
        "is_watermark_empty": "datacoolie_core.watermark.serializer",
        "serialize_watermark": "datacoolie_core.watermark.serializer",
    },
)

__all__ = [
    "CommitJournal",
    "CommitJournalStorage",
    "FileWatermarkStore",
    "PendingCommit",
    "PostgresStateStore",
    "StateStore",
    "WatermarkManager",
    "WatermarkStorage",
    "deserialize_watermark",
    "is_watermark_empty",
    "merge_watermarks",
    "migrate_state",
    "open_state_store",
    "serialize_watermark",
]
