"""``datacoolie state migrate``: file state into PostgreSQL and back, bit for bit, type for type."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from datacoolie_core import FileProvider, WatermarkManager
from datacoolie_core.cli import main
from datacoolie_core.watermark.serializer import deserialize_watermark
from datacoolie_core.watermark.store import JOURNAL_RECORD, WATERMARK_RECORD
from tests.core.orchestration.test_dataflow_runner import T0, land, metadata

TYPED = {
    "aware": datetime(2026, 3, 2, 8, 15, 0, 123456, tzinfo=timezone(timedelta(hours=1))),
    "naive": datetime(2026, 3, 2, 8, 15),
    "day": date(2026, 2, 28),
    "clock": time(23, 59, 59, 999999),
    "count": 2**62,
    "ratio": 0.1,
    "amount": Decimal("12345678901234567890.000100"),
    "name": "Zoë ✓",
    "raw": b"\x00\xff",
}
"""One value of every type a watermark may hold."""


def files(root: Path) -> dict[str, bytes]:
    """Every state file under a state root, by relative path (lock files, ``.locks/``, left out)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted((root / "watermarks").rglob("*"))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    }


def state(*argv: str) -> int:
    return main(["state", "migrate", *argv])


def test_file_state_goes_to_postgresql_and_back_bit_identical(
    tmp_path: Path, state_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # file state as runs leave it: a watermark and a settled commit record, plus one of every type
    path = metadata(tmp_path)
    land(tmp_path, "a", [1, 2], [10, 20])
    assert main(["run", "--metadata", str(path), "--state-path", str(tmp_path / "state")]) == 0
    WatermarkManager(FileProvider(path, state_base_path=tmp_path / "state")).save_watermark("typed", TYPED)
    before = files(tmp_path / "state")
    assert len(before) == 3
    capsys.readouterr()
    # files -> PostgreSQL -> files
    assert state("--from", str(tmp_path / "state"), "--to", state_url) == 0
    assert capsys.readouterr().out == "copied 3 record(s), 0 already in place\n"
    assert state("--from", state_url, "--to", str(tmp_path / "back")) == 0
    assert files(tmp_path / "back") == before  # byte for byte
    typed = (tmp_path / "back" / "watermarks" / "typed" / WATERMARK_RECORD).read_text()
    restored = deserialize_watermark(typed)
    assert restored == TYPED
    assert {k: type(v) for k, v in restored.items()} == {k: type(v) for k, v in TYPED.items()}
    assert restored["aware"].utcoffset() == timedelta(hours=1)
    # again: nothing to copy, nothing changed
    assert state("--from", str(tmp_path / "state"), "--to", state_url) == 0
    assert "copied 0 record(s), 3 already in place" in capsys.readouterr().out


def test_runs_go_on_from_the_migrated_state_without_reading_twice(tmp_path: Path, state_url: str) -> None:
    path = metadata(tmp_path)  # append: a lost watermark would duplicate rows 1 and 2
    # load 1 — on files
    land(tmp_path, "a", [1, 2], [10, 20])
    assert main(["run", "--metadata", str(path), "--state-path", str(tmp_path / "state")]) == 0
    assert state("--from", str(tmp_path / "state"), "--to", state_url) == 0
    # load 2 — on PostgreSQL: only the new row
    land(tmp_path, "b", [3], [30])
    assert main(["run", "--metadata", str(path), "--state-url", state_url]) == 0
    rows = pl.read_delta(str(tmp_path / "lake" / "silver" / "orders")).sort("order_id")
    assert rows["order_id"].to_list() == [1, 2, 3]
    assert rows["updated_at"].to_list() == [T0 + timedelta(minutes=m) for m in (10, 20, 30)]
    provider = FileProvider(path, state_url=state_url)
    (dataflow,) = provider.get_dataflows()
    assert WatermarkManager(provider).get_watermark(str(dataflow.dataflow_id)) == {
        "updated_at": datetime(2026, 1, 1, 0, 30, tzinfo=UTC)
    }


def test_damaged_state_is_not_copied(tmp_path: Path, state_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = tmp_path / "state" / "watermarks" / "a_1", tmp_path / "state" / "watermarks" / "b_2"
    good.mkdir(parents=True)
    bad.mkdir(parents=True)
    (good / WATERMARK_RECORD).write_text('{"v": 1}')
    (bad / JOURNAL_RECORD).write_text('{"app_id": "x"')
    assert state("--from", str(tmp_path / "state"), "--to", state_url) == 1
    err = capsys.readouterr().err
    assert "commit journal record is corrupt" in err
    assert "nothing was copied" in err
    assert str(bad / JOURNAL_RECORD) in err
    assert state("--from", state_url, "--to", str(tmp_path / "empty")) == 0
    assert files(tmp_path / "empty") == {}


def test_a_target_holding_other_values_is_not_overwritten(
    tmp_path: Path, state_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "state" / "watermarks" / "a_1"
    folder.mkdir(parents=True)
    (folder / WATERMARK_RECORD).write_text('{"v": 1}')
    assert state("--from", str(tmp_path / "state"), "--to", state_url) == 0
    (folder / WATERMARK_RECORD).write_text('{"v": 2}')
    (tmp_path / "state" / "watermarks" / "b_2").mkdir()
    (tmp_path / "state" / "watermarks" / "b_2" / WATERMARK_RECORD).write_text('{"v": 3}')
    assert state("--from", str(tmp_path / "state"), "--to", state_url) == 1
    err = capsys.readouterr().err
    assert "already holds a different watermark_value.json for 'a_1'; nothing was copied" in err
    assert "datacoolie_state.watermarks state_key='a_1'" in err
    assert state("--from", state_url, "--to", str(tmp_path / "back")) == 0
    assert files(tmp_path / "back") == {"watermarks/a_1/watermark_value.json": b'{"v": 1}'}


def test_an_unknown_file_in_the_state_folder_stops_the_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "state" / "watermarks" / "a_1"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("mine")
    assert state("--from", str(tmp_path / "state"), "--to", str(tmp_path / "other")) == 1
    assert "unknown state record 'notes.txt'" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()
