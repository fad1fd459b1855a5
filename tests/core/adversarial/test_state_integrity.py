"""Damaged state is never a silent full reload: every damaged form ends in a clear error or correct data.

Each case runs the real ``datacoolie`` CLI over a parquet landing folder and a Delta destination:
load 1 lands orders 1-2, the state is damaged, load 2 lands an update of 2 and a new 3. The run on
damaged state either stops (exit 1, the message names the file and ``datacoolie state``) with the
table untouched, or settles the state from the Delta log; after ``datacoolie state repair
--confirm`` where needed, the table holds every row exactly once: 0 duplicates, 0 rows lost.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from datacoolie_core import FileProvider
from datacoolie_core.cli import main
from datacoolie_core.faults import AFTER_COMMIT, ENV_VAR

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REPO = Path(__file__).parents[3]
LOAD_TYPES = ["append", "merge_upsert", "overwrite"]

AFTER_LOAD_1 = {
    "append": [(1, 10), (2, 20)],
    "merge_upsert": [(1, 10), (2, 20)],
    "overwrite": [(1, 10), (2, 20)],
}
AFTER_LOAD_2 = {  # (order_id, minutes after T0): load 2 updates order 2 and adds order 3
    "append": [(1, 10), (2, 20), (2, 25), (3, 30)],
    "merge_upsert": [(1, 10), (2, 25), (3, 30)],
    "overwrite": [(2, 25), (3, 30)],
}


class Lake:
    """One dataflow ``orders``: landing parquet -> Delta ``lake/silver/orders``, watermark ``updated_at``."""

    def __init__(self, root: Path, load_type: str) -> None:
        self.root, self.load_type = root, load_type
        destination: dict[str, Any] = {"connection_name": "lake", "schema_name": "silver", "table": "orders"}
        destination["load_type"] = load_type
        if load_type == "merge_upsert":
            destination["merge_keys"] = ["order_id"]
        document = {
            "connections": [
                {"name": "landing", "format": "parquet", "configure": {"base_path": str(root / "landing")}},
                {"name": "lake", "format": "delta", "configure": {"base_path": str(root / "lake")}},
            ],
            "dataflows": [
                {
                    "name": "orders",
                    "stage": "bronze2silver",
                    "source": {"connection_name": "landing", "schema_name": "sales", "table": "orders",
                               "watermark_columns": ["updated_at"]},
                    "destination": destination,
                }
            ],
        }  # fmt: skip
        self.metadata = root / "meta" / "metadata.json"
        self.metadata.parent.mkdir(parents=True)
        self.metadata.write_text(json.dumps(document))
        provider = FileProvider(self.metadata)
        dataflow_id = str(provider.get_dataflows()[0].dataflow_id)
        self.watermark = provider.watermark_path(dataflow_id)
        self.journal = self.watermark.with_name("pending_commit.json")
        self.table_path = root / "lake" / "silver" / "orders"

    def land(self, name: str, ids: list[int], minutes: list[int]) -> None:
        folder = self.root / "landing" / "sales" / "orders"
        folder.mkdir(parents=True, exist_ok=True)
        pl.DataFrame(
            {
                "order_id": ids,
                "amount": [float(i) for i in ids],
                "updated_at": [T0 + timedelta(minutes=m) for m in minutes],
            },
            schema_overrides={"updated_at": pl.Datetime("us", "UTC")},
        ).write_parquet(folder / f"{name}.parquet")

    def rows(self) -> list[tuple[int, int]]:
        frame = pl.read_delta(str(self.table_path)).select("order_id", "updated_at")
        return sorted((i, int((t - T0).total_seconds() // 60)) for i, t in frame.iter_rows())

    def run(self, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
        code = main(["run", "--metadata", str(self.metadata), "--json"])
        out = capsys.readouterr().out
        (row,) = json.loads(out)["dataflows"]
        return code, row

    def state(self, capsys: pytest.CaptureFixture[str], action: str, *extra: str) -> tuple[int, str]:
        code = main(["state", action, "--metadata", str(self.metadata), "--dataflow", "orders", *extra])
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    def crash_after_commit(self) -> None:
        """Run load 2 in a subprocess that SIGKILLs itself after the Delta commit, before the watermark save."""
        script = "import sys; from datacoolie_core.cli import main; sys.exit(main(sys.argv[1:]))"
        crashed = subprocess.run(
            [sys.executable, "-c", script, "run", "--metadata", str(self.metadata)],
            cwd=REPO, env=os.environ | {ENV_VAR: AFTER_COMMIT}, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr


@pytest.fixture(params=LOAD_TYPES)
def lake(request: pytest.FixtureRequest, tmp_path: Path) -> Lake:
    return Lake(tmp_path, request.param)


def load_1(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    lake.land("a", [1, 2], [10, 20])
    code, row = lake.run(capsys)
    assert (code, row["status"]) == (0, "succeeded"), row["error_message"]
    assert lake.rows() == AFTER_LOAD_1[lake.load_type]


def assert_stopped(lake: Lake, code: int, row: dict[str, Any], detail: str, *, names: Path) -> None:
    """Exit 1, the dataflow failed naming the file and the way out, and the table is untouched."""
    message = row["error_message"] or ""
    assert (code, row["status"], row["error_type"]) == (1, "failed", "WatermarkError"), message
    assert detail in message, message
    assert str(names) in message, message
    assert "datacoolie state repair" in message
    assert "--confirm" in message
    assert row["source"]["rows_read"] == 0


# --- damaged watermark files ------------------------------------------------------------------

DAMAGED_WATERMARKS: dict[str, Callable[[Path], None]] = {
    "zero-bytes": lambda p: p.write_bytes(b""),
    "blank": lambda p: p.write_text("  \n"),
    "empty-object": lambda p: p.write_text("{}"),
    "json-null": lambda p: p.write_text("null"),
    "all-null": lambda p: p.write_text('{"updated_at": null}'),
    "unknown-key": lambda p: p.write_text('{"changed_at": {"__datetime__": "2026-01-01T00:20:00+00:00"}}'),
    "wrong-type-bool": lambda p: p.write_text('{"updated_at": true}'),
    "wrong-type-list": lambda p: p.write_text('{"updated_at": [1, 2]}'),
    "wrong-type-number": lambda p: p.write_text('{"updated_at": 5}'),
    "wrong-kind-date": lambda p: p.write_text('{"updated_at": {"__date__": "2027-01-01"}}'),
    "truncated": lambda p: p.write_text('{"updated_at": {"__datetime__": "2026-01-01T00:2'),
    "deleted": lambda p: p.unlink(),
}
EXPECTED_DETAIL = {
    "zero-bytes": "the file is empty",
    "blank": "the file is blank",
    "empty-object": "holds no value",
    "json-null": "got JSON NoneType",
    "all-null": "holds no value",
    "unknown-key": "key(s) 'changed_at' are not its watermark columns (expected 'updated_at')",
    "wrong-type-bool": "'updated_at' holds bool True",
    "wrong-type-list": "'updated_at' holds list",
    "wrong-type-number": 'the watermark is at {"updated_at":5}, but the last settled write (1) saved',
    "wrong-kind-date": 'the watermark is at {"updated_at":{"__date__":"2027-01-01"}}, but the last settled write (1)',
    "truncated": "not valid JSON",
    "deleted": "the watermark is missing, but the last settled write (1) saved",
}


@pytest.mark.parametrize("damage", list(DAMAGED_WATERMARKS))
def test_a_damaged_watermark_stops_the_run_until_repaired(
    lake: Lake, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    load_1(lake, capsys)
    # damage — the adversary edits the watermark file; load 2 lands
    DAMAGED_WATERMARKS[damage](lake.watermark)
    lake.land("b", [2, 3], [25, 30])
    code, row = lake.run(capsys)
    assert_stopped(lake, code, row, EXPECTED_DETAIL[damage], names=lake.watermark)
    assert lake.rows() == AFTER_LOAD_1[lake.load_type]
    # show names the damage; repair without --confirm only prints its plan
    code, out = lake.state(capsys, "show")
    assert code == 1, out
    assert "verdict: damaged" in out, out
    code, out = lake.state(capsys, "repair")
    assert code == 0, out
    assert out.startswith("would set the watermark to"), out
    code, _ = lake.run(capsys)
    assert code == 1  # nothing was repaired yet
    # repair — the watermark is rebuilt from what load 1's commit recorded
    code, out = lake.state(capsys, "repair", "--confirm")
    assert code == 0, out
    assert out.startswith("done: set the watermark to"), out
    code, row = lake.run(capsys)
    assert (code, row["status"], row["source"]["rows_read"]) == (0, "succeeded", 2), row["error_message"]
    assert lake.rows() == AFTER_LOAD_2[lake.load_type]  # 0 duplicates, 0 rows lost


# --- a crash between the commit and the watermark save, then the journal damaged ---------------

DAMAGED_JOURNALS: dict[str, Callable[[Path], None]] = {
    "intact": lambda p: None,
    "zero-bytes": lambda p: p.write_bytes(b""),
    "deleted": lambda p: p.unlink(),
    "truncated": lambda p: p.write_text(p.read_text()[:25]),
}


@pytest.mark.parametrize("damage", list(DAMAGED_JOURNALS))
def test_a_crash_after_the_commit_is_settled_from_the_delta_log_even_without_the_journal(
    lake: Lake, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    load_1(lake, capsys)
    lake.land("b", [2, 3], [25, 30])
    # load 2 — SIGKILL after its commit landed: the watermark still says minute 20
    lake.crash_after_commit()
    assert lake.rows() == AFTER_LOAD_2[lake.load_type]
    assert '"pending"' in lake.journal.read_text()
    DAMAGED_JOURNALS[damage](lake.journal)
    code, out = lake.state(capsys, "show")  # changes nothing, says what the next run settles
    assert code == 0, out
    assert "verdict: ok; the next run settles: " in out
    assert json.loads(lake.watermark.read_text()) == {"updated_at": {"__datetime__": "2026-01-01T00:20:00+00:00"}}
    # load 3 — the log proves load 2 landed; its recorded watermark is saved, nothing is read again
    code, row = lake.run(capsys)
    assert (code, row["status"], row["skip_reason"]) == (0, "skipped", "no new source rows"), row["error_message"]
    assert lake.rows() == AFTER_LOAD_2[lake.load_type]  # 0 duplicates, 0 rows lost
    assert json.loads(lake.watermark.read_text()) == {"updated_at": {"__datetime__": "2026-01-01T00:30:00+00:00"}}
    assert json.loads(lake.journal.read_text())["state"] == "settled"


# --- the destination's log behind the state -----------------------------------------------------


def test_a_deleted_latest_delta_log_entry_stops_the_run_until_repaired(
    lake: Lake, capsys: pytest.CaptureFixture[str]
) -> None:
    load_1(lake, capsys)
    lake.land("b", [2, 3], [25, 30])
    code, _ = lake.run(capsys)
    assert code == 0
    # damage — load 2's commit is deleted: its rows are gone, the watermark is already past them
    latest = sorted((lake.table_path / "_delta_log").glob("*.json"))[-1]
    latest.unlink()
    assert lake.rows() == AFTER_LOAD_1[lake.load_type]
    lake.land("c", [4], [40])
    code, row = lake.run(capsys)
    assert_stopped(lake, code, row, "deleted _delta_log entry", names=lake.watermark)
    assert "holds its commits only up to 1, but the state recorded write 2" in row["error_message"]
    assert lake.rows() == AFTER_LOAD_1[lake.load_type]
    # repair — the watermark goes back to what the table holds; load 2's rows are read again
    code, out = lake.state(capsys, "repair", "--confirm")
    assert code == 0, out
    code, row = lake.run(capsys)
    assert (code, row["status"], row["source"]["rows_read"]) == (0, "succeeded", 3), row["error_message"]
    expected = AFTER_LOAD_2[lake.load_type] + [(4, 40)]
    if lake.load_type == "overwrite":
        expected = [(2, 25), (3, 30), (4, 40)]
    assert lake.rows() == sorted(expected)  # 0 duplicates, 0 rows lost


FULL_RELOAD = {  # loads 1 and 2 read again in one batch
    "append": [(1, 10), (2, 20), (2, 25), (3, 30)],
    "merge_upsert": [(1, 10), (2, 25), (3, 30)],
    "overwrite": [(1, 10), (2, 20), (2, 25), (3, 30)],
}


def test_a_deleted_destination_table_stops_the_run_until_repaired(
    lake: Lake, capsys: pytest.CaptureFixture[str]
) -> None:
    load_1(lake, capsys)
    shutil.rmtree(lake.table_path)
    lake.land("b", [2, 3], [25, 30])
    code, row = lake.run(capsys)
    assert_stopped(
        lake,
        code,
        row,
        "the destination table does not exist, but this dataflow's state recorded 1",
        names=lake.watermark,
    )
    assert not lake.table_path.exists()
    # repair — nothing of ours is in the destination: the state is cleared, everything is loaded again
    code, out = lake.state(capsys, "repair", "--confirm")
    assert code == 0, out
    assert "clear the state" in out, out
    code, row = lake.run(capsys)
    assert (code, row["status"]) == (0, "succeeded"), row["error_message"]
    assert lake.rows() == FULL_RELOAD[lake.load_type]


def test_state_deleted_while_the_table_holds_our_commits_is_not_a_first_run(
    lake: Lake, capsys: pytest.CaptureFixture[str]
) -> None:
    load_1(lake, capsys)
    shutil.rmtree(lake.watermark.parent)  # the watermark and the journal
    lake.land("b", [2, 3], [25, 30])
    code, row = lake.run(capsys)
    assert_stopped(
        lake,
        code,
        row,
        "the watermark is missing, but the destination holds this dataflow's writes up to 1",
        names=lake.watermark,
    )
    code, out = lake.state(capsys, "repair", "--confirm")
    assert code == 0, out
    code, row = lake.run(capsys)
    assert (code, row["source"]["rows_read"]) == (0, 2)
    assert lake.rows() == AFTER_LOAD_2[lake.load_type]


def test_reset_reloads_everything_on_purpose(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    load_1(lake, capsys)
    lake.watermark.write_text("{}")
    code, out = lake.state(capsys, "reset")
    assert code == 0, out
    assert out.startswith("would remove the watermark"), out
    assert ("every row is appended again" in out) is (lake.load_type == "append")
    code, out = lake.state(capsys, "reset", "--confirm")
    assert code == 0, out
    assert not lake.watermark.exists(), out
    code, row = lake.run(capsys)
    assert (code, row["source"]["rows_read"]) == (0, 2)  # deliberately read again
    code, out = lake.state(capsys, "show")
    assert code == 0, out
    assert "verdict: ok" in out, out


# --- the one-writer-per-table lock ---------------------------------------------------------------


@pytest.mark.parametrize("lake", ["append"], indirect=True)
def test_a_run_that_waited_for_the_writer_lock_says_so(
    lake: Lake, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    lake.land("a", [1, 2], [10, 20])
    provider = FileProvider(lake.metadata)
    key = provider.get_dataflows()[0].destination.destination_key
    held, release = threading.Event(), threading.Event()

    def other_writer() -> None:  # another run of the same table holds its lock for a while
        with provider.destination_lock(key):
            held.set()
            release.wait(timeout=20)

    thread = threading.Thread(target=other_writer)
    thread.start()
    held.wait(timeout=20)
    threading.Timer(1.0, release.set).start()
    with caplog.at_level(logging.INFO, logger="datacoolie.driver"):
        code, row = lake.run(capsys)
    thread.join()
    assert (code, row["status"]) == (0, "succeeded")
    assert row["phase_seconds"]["lock_wait"] > 0.1
    (message,) = [r.getMessage() for r in caplog.records if "lock_wait" in r.getMessage()]
    assert f"for the writer lock of {lake.table_path}" in message
    assert "orders: waited" in message
