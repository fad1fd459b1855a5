"""The commit journal: pending and settled records, and every damaged form is an error."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core import FileProvider, WatermarkError, WatermarkManager
from datacoolie_core.watermark import CommitJournal, PendingCommit
from tests.conftest import write_json

T2 = datetime(2026, 2, 1, tzinfo=UTC)

Setup = tuple[FileProvider, CommitJournal, str]


@pytest.fixture
def setup(tmp_path: Path, document: dict[str, Any]) -> Setup:
    provider = FileProvider(write_json(tmp_path / "m.json", document))
    return provider, CommitJournal(provider, WatermarkManager(provider)), provider.get_dataflows()[0].dataflow_id or ""


def test_a_write_is_announced_pending_then_kept_settled(setup: Setup) -> None:
    provider, journal, dataflow_id = setup
    commit = PendingCommit("datacoolie:x", 7, "run-1", {"updated_at": T2})
    journal.announce(dataflow_id, commit)
    assert journal.pending(dataflow_id) == commit
    assert provider.watermark_path(dataflow_id).with_name("pending_commit.json").exists()
    journal.settle(dataflow_id, commit)
    # settled records stay: the next run cross-checks the destination's log against sequence 7
    assert journal.pending(dataflow_id) is None
    assert journal.record(dataflow_id) == PendingCommit("datacoolie:x", 7, "run-1", {"updated_at": T2}, settled=True)
    journal.settle(dataflow_id, None)
    assert journal.record(dataflow_id) is None
    assert journal.location(dataflow_id) == str(provider.watermark_path(dataflow_id).with_name("pending_commit.json"))


def test_a_record_written_before_settled_records_existed_reads_as_pending(setup: Setup) -> None:
    provider, journal, dataflow_id = setup
    legacy = {"app_id": "datacoolie:x", "sequence": 3, "dataflow_run_id": "run-1", "watermark": None}
    provider.set_pending_commit(dataflow_id, json.dumps(legacy))
    assert journal.pending(dataflow_id) == PendingCommit("datacoolie:x", 3, "run-1")


@pytest.mark.parametrize(
    "text",
    ["", "   \n", "{}", "null", '{"sequence": "x"', '{"app_id": "a", "sequence": 0, "dataflow_run_id": "r"}',
     '{"app_id": "a", "sequence": 2, "dataflow_run_id": "r", "state": "done"}',
     '{"app_id": "a", "sequence": 2, "dataflow_run_id": "r", "watermark": "{}"}'],
    ids=["empty", "blank", "empty-object", "null", "truncated", "sequence-0", "unknown-state", "empty-watermark"],
)  # fmt: skip
def test_every_damaged_record_is_an_error_naming_the_repair_command(setup: Setup, text: str) -> None:
    provider, journal, dataflow_id = setup
    provider.set_pending_commit(dataflow_id, text)
    with pytest.raises(WatermarkError, match=r"commit journal record is corrupt .*datacoolie state repair"):
        journal.record(dataflow_id)
