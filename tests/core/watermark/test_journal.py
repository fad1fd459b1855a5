"""The pending-commit journal settles an interrupted write exactly once."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core import FileProvider, WatermarkError, WatermarkManager
from datacoolie_core.watermark import CommitJournal, PendingCommit
from tests.conftest import write_json

T1 = datetime(2026, 1, 1, tzinfo=UTC)
T2 = datetime(2026, 2, 1, tzinfo=UTC)


@pytest.fixture
def setup(tmp_path: Path, document: dict[str, Any]) -> tuple[FileProvider, WatermarkManager, CommitJournal, str]:
    provider = FileProvider(write_json(tmp_path / "m.json", document))
    watermarks = WatermarkManager(provider)
    return provider, watermarks, CommitJournal(provider, watermarks), provider.get_dataflows()[0].dataflow_id or ""


def test_round_trip(setup: tuple[FileProvider, WatermarkManager, CommitJournal, str]) -> None:
    provider, _, journal, dataflow_id = setup
    commit = PendingCommit("datacoolie:x", 7, "run-1", {"updated_at": T2})
    journal.announce(dataflow_id, commit)
    assert journal.pending(dataflow_id) == commit
    assert provider.watermark_path(dataflow_id).with_name("pending_commit.json").exists()
    journal.settle(dataflow_id)
    assert journal.pending(dataflow_id) is None


def test_recover_when_the_write_landed_saves_its_watermark(
    setup: tuple[FileProvider, WatermarkManager, CommitJournal, str],
) -> None:
    _, watermarks, journal, dataflow_id = setup
    watermarks.save_watermark(dataflow_id, {"updated_at": T1})
    journal.announce(dataflow_id, PendingCommit("datacoolie:x", 3, "run-1", {"updated_at": T2}))
    landed = journal.recover(dataflow_id, lambda app_id: 3 if app_id == "datacoolie:x" else None)
    assert landed is not None
    assert landed.sequence == 3
    assert watermarks.get_watermark(dataflow_id) == {"updated_at": T2}
    assert journal.pending(dataflow_id) is None


@pytest.mark.parametrize("committed", [None, 2], ids=["table-missing", "older-sequence"])
def test_recover_when_the_write_did_not_land_keeps_the_old_watermark(
    setup: tuple[FileProvider, WatermarkManager, CommitJournal, str], committed: int | None
) -> None:
    _, watermarks, journal, dataflow_id = setup
    watermarks.save_watermark(dataflow_id, {"updated_at": T1})
    journal.announce(dataflow_id, PendingCommit("datacoolie:x", 3, "run-1", {"updated_at": T2}))
    assert journal.recover(dataflow_id, lambda _: committed) is None
    assert watermarks.get_watermark(dataflow_id) == {"updated_at": T1}
    assert journal.pending(dataflow_id) is None


def test_corrupt_record_is_an_error(setup: tuple[FileProvider, WatermarkManager, CommitJournal, str]) -> None:
    provider, _, journal, dataflow_id = setup
    provider.set_pending_commit(dataflow_id, '{"sequence": "x"')
    with pytest.raises(WatermarkError, match="pending-commit record is corrupt"):
        journal.recover(dataflow_id, lambda _: 1)
