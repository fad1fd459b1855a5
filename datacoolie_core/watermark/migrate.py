"""Copy state between stores (``datacoolie state migrate``): files into PostgreSQL and back.

Records move as opaque text, byte for byte, under the same keys (folder and record name), so a
watermark reads back with its value and type unchanged. Everything is read and checked before
anything is written: a damaged record, a record the target store cannot keep, or a target that
already holds a different value for a key stops the copy with nothing changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from datacoolie_core.errors import WatermarkError
from datacoolie_core.watermark.journal import PendingCommit
from datacoolie_core.watermark.serializer import deserialize_watermark
from datacoolie_core.watermark.store import (
    JOURNAL_RECORD,
    STATE_FILES,
    WATERMARK_RECORD,
    StateStore,
    is_state_url,
    open_state_store,
)

WATERMARK_FOLDER = "watermarks"
"""Where a state root keeps its records (as ``--state-path`` does)."""


@dataclass(frozen=True)
class MigrationResult:
    copied: int
    """Records written to the target."""
    unchanged: int
    """Records the target already held with the same text."""


def open_state_location(location: str | os.PathLike[str]) -> StateStore:
    """The store of a state root folder (its ``watermarks/``) or of a ``postgresql://`` URL."""
    if is_state_url(location):
        return open_state_store(str(location))
    return open_state_store(Path(location) / WATERMARK_FOLDER)


def migrate_state(source: StateStore, target: StateStore) -> MigrationResult:
    """Copy every record of ``source`` into ``target``; see the module docstring for the checks.

    Raises:
        WatermarkError: a record is damaged or cannot be kept, or the target disagrees; nothing was written.
    """
    records = list(source.entries())
    for folder, name, text in records:
        _check_record(source, folder, name, text)
    to_write = []
    for folder, name, text in records:
        held = target.read(folder, name)
        if held is None:
            to_write.append((folder, name, text))
        elif held != text:
            raise WatermarkError(
                f"the target already holds a different {name} for {folder!r}; nothing was copied. "
                "Migrate into an empty store, or remove the target's record first",
                path=target.location(folder, name),
            )
    for folder, name, text in to_write:
        with target.lock(folder):
            target.write(folder, text, name)
    return MigrationResult(copied=len(to_write), unchanged=len(records) - len(to_write))


def _check_record(store: StateStore, folder: str, name: str, text: str) -> None:
    """Damaged state is reported, never carried over (the next run would refuse it anyway)."""
    if name not in STATE_FILES:
        raise WatermarkError(
            f"unknown state record {name!r} (a state store keeps {', '.join(STATE_FILES)}); nothing was copied. "
            "Move it out of the state folder if it is not DataCoolie's",
            path=store.location(folder, name),
        )
    try:
        if name == WATERMARK_RECORD:
            deserialize_watermark(text)
        elif name == JOURNAL_RECORD:
            PendingCommit.from_text(text, dataflow_id=folder)
    except WatermarkError as e:
        raise WatermarkError(f"{e.message}; nothing was copied", path=store.location(folder, name)) from e
