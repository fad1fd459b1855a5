"""Watermarks: encoding, never-backward merging, file storage and the manager tying them."""

from __future__ import annotations

from datacoolie_core.watermark.file_store import FileWatermarkStore
from datacoolie_core.watermark.journal import CommitJournal, CommitJournalStorage, PendingCommit
from datacoolie_core.watermark.manager import WatermarkManager, WatermarkStorage
from datacoolie_core.watermark.merge import merge_watermarks
from datacoolie_core.watermark.serializer import (
    deserialize_watermark,
    is_watermark_empty,
    serialize_watermark,
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
