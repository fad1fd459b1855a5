"""Watermarks: encoding, never-backward merging, file storage and the manager tying them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datacoolie_core.lazy import lazy_exports

if TYPE_CHECKING:
    from datacoolie_core.watermark.file_store import FileWatermarkStore
    from datacoolie_core.watermark.journal import CommitJournal, CommitJournalStorage, PendingCommit
    from datacoolie_core.watermark.manager import WatermarkManager, WatermarkStorage
    from datacoolie_core.watermark.merge import merge_watermarks
    from datacoolie_core.watermark.serializer import (
        deserialize_watermark,
        is_watermark_empty,
        serialize_watermark,
    )

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
    "WatermarkManager",
    "WatermarkStorage",
    "deserialize_watermark",
    "is_watermark_empty",
    "merge_watermarks",
    "serialize_watermark",
]
