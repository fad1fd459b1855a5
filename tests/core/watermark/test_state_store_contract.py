"""One contract, every state store: the file store (default) and the PostgreSQL store.

Each test runs against ``state_store`` = ``file`` and ``postgres`` (see ``conftest.py``): records
round-trip byte for byte, watermarks never move backward under concurrent savers in several
processes, a crash between the destination commit and the watermark save neither loses nor
duplicates rows, two writers of one table take turns (also when the holder is killed), and
damaged state is an error naming the record, never a first run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import polars as pl
import pytest

from datacoolie_core import FileProvider, WatermarkManager
from datacoolie_core.cli import main
from datacoolie_core.errors import WatermarkError
from datacoolie_core.faults import AFTER_COMMIT, ENV_VAR
from datacoolie_core.orchestration.driver import DataCoolieDriver
from datacoolie_core.watermark import CommitJournal
from datacoolie_core.watermark.store import JOURNAL_RECORD, WATERMARK_RECORD
from tests.core.orchestration.test_dataflow_runner import T0, land, metadata
from tests.core.watermark.conftest import StateSetup

REPO = Path(__file__).parents[3]
PROCESS_TIMEOUT = 300  # seconds; the machine is shared, a process may start slowly


def provider(path: Path, store: StateSetup) -> FileProvider:
    return FileProvider(path, **store.provider_args)


def spawn(code: str, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], cwd=REPO, env=os.environ | env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


# --- records ----------------------------------------------------------------------------------


def test_records_round_trip_byte_for_byte(state_store: StateSetup) -> None:
    store = state_store.open()
    text = '{"b": {"__type__": "decimal", "value": "1.50"},\n "a": "é \\u00e9\t"}  '  # order, spaces, unicode kept
    assert store.read("orders_1") is None
    store.write("orders_1", text)
    store.write("orders_1", '{"state": "pending"}', JOURNAL_RECORD, durable=False)
    assert store.read("orders_1") == text
    assert store.read("orders_1", JOURNAL_RECORD) == '{"state": "pending"}'
    assert list(store.entries()) == [
        ("orders_1", JOURNAL_RECORD, '{"state": "pending"}'),
        ("orders_1", WATERMARK_RECORD, text),
    ]
    store.delete("orders_1", JOURNAL_RECORD)
    assert store.read("orders_1", JOURNAL_RECORD) is None
    assert state_store.open().read("orders_1") == text  # another instance (connection) sees it
    store.close()


def test_a_folder_that_could_escape_is_refused(state_store: StateSetup) -> None:
    with pytest.raises(ValueError, match="must not contain"):
        state_store.open().write("../elsewhere", "{}")


# --- watermarks never move backward, whoever saves ------------------------------------------------

SAVER = """
import random, sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from datacoolie_core import FileProvider, WatermarkManager
path, kind, location, seed, processes = sys.argv[1:6]
provider = FileProvider(Path(path), **({"state_base_path": location} if kind == "file" else {"state_url": location}))
(dataflow,) = provider.get_dataflows()
dataflow_id = str(dataflow.dataflow_id)
manager = WatermarkManager(provider)
t0 = datetime(2026, 1, 1, tzinfo=UTC)
values = list(range(int(seed), 240, int(processes)))
random.Random(int(seed)).shuffle(values)
manager.get_watermark(dataflow_id)  # connected and warm before the start line
print("ready", flush=True)
sys.stdin.readline()  # every saver starts at once
for v in values:
    candidate = {"version": v, "updated_at": t0 + timedelta(minutes=239 - v)}
    merged = manager.save_watermark(dataflow_id, candidate, job_id=f"p{seed}")
    seen = manager.get_watermark(dataflow_id)  # what any reader sees right after: never behind the save
    for column in ("version", "updated_at"):
        assert merged[column] >= candidate[column], (merged, candidate)
        assert seen[column] >= merged[column], ("moved backward", merged, seen)
print("ok", len(values))
"""


def test_watermarks_never_move_backward_under_concurrent_savers(tmp_path: Path, state_store: StateSetup) -> None:
    path = metadata(tmp_path)
    processes = 4
    savers = [spawn(SAVER, str(path), state_store.kind, state_store.location, str(i), str(processes))
              for i in range(processes)]  # fmt: skip
    for saver in savers:
        assert saver.stdout is not None
        assert saver.stdout.readline() == "ready\n", saver.communicate(timeout=PROCESS_TIMEOUT)[1]
    for saver in savers:
        saver.stdin.write("go\n")  # type: ignore[union-attr]
        saver.stdin.flush()  # type: ignore[union-attr]
    for saver in savers:
        out, err = saver.communicate(timeout=PROCESS_TIMEOUT)
        assert saver.returncode == 0, err
        assert out == "ok 60\n"
    # each column's maximum survived, although the processes raced and their candidates disagree
    watermarks = WatermarkManager(provider(path, state_store))
    (dataflow,) = provider(path, state_store).get_dataflows()
    assert watermarks.get_watermark(str(dataflow.dataflow_id)) == {
        "version": 239,
        "updated_at": T0 + timedelta(minutes=239),
    }


# --- exactly once across a crash ----------------------------------------------------------------

RUN = "from datacoolie_core.cli import main; raise SystemExit(main())"


def test_crash_between_commit_and_save_neither_loses_nor_duplicates(tmp_path: Path, state_store: StateSetup) -> None:
    path = metadata(tmp_path)  # append: the strategy a lost watermark would duplicate
    argv = ["run", "--metadata", str(path), *state_store.cli_args]
    # run 1 — rows 1, 2
    land(tmp_path, "a", [1, 2], [10, 20])
    assert main(argv) == 0
    # run 2 — a real process killed right after its Delta commit, before its watermark save
    land(tmp_path, "b", [2, 3], [25, 30])
    crashed = spawn(RUN, *argv, **{ENV_VAR: AFTER_COMMIT})
    _, err = crashed.communicate(timeout=PROCESS_TIMEOUT)
    assert crashed.returncode == -signal.SIGKILL, err
    (dataflow,) = provider(path, state_store).get_dataflows()
    dataflow_id = str(dataflow.dataflow_id)
    stale = WatermarkManager(provider(path, state_store)).get_watermark(dataflow_id)
    assert stale == {"updated_at": T0 + timedelta(minutes=20)}  # the crash came before the save
    # run 3 — sees run 2's commit, saves its watermark, reads nothing again
    with DataCoolieDriver(metadata_base_path=str(path), **state_store.provider_args) as driver:
        (runtime,) = driver.run().runtimes
    assert (runtime.status, runtime.skip_reason) == ("skipped", "no new source rows")
    state = provider(path, state_store)
    assert WatermarkManager(state).get_watermark(dataflow_id) == {"updated_at": T0 + timedelta(minutes=30)}
    journal = CommitJournal(state, WatermarkManager(state)).record(dataflow_id)
    assert journal is not None
    assert journal.settled
    rows = pl.read_delta(str(tmp_path / "lake" / "silver" / "orders")).select("order_id", "updated_at")
    minutes = sorted((r[0], int((r[1] - T0).total_seconds() // 60)) for r in rows.iter_rows())
    assert minutes == [(1, 10), (2, 20), (2, 25), (3, 30)]


# --- one writer per table -------------------------------------------------------------------------

HOLDER = """
import sys
from pathlib import Path
from datacoolie_core import FileProvider
path, kind, location = sys.argv[1:4]
provider = FileProvider(Path(path), **({"state_base_path": location} if kind == "file" else {"state_url": location}))
(dataflow,) = provider.get_dataflows()
with provider.destination_lock(dataflow.destination.destination_key):
    print("held", flush=True)
    sys.stdin.readline()
"""


@pytest.mark.parametrize("ending", ["released", "killed"])
def test_a_second_writer_of_a_table_waits_until_the_first_is_gone(
    tmp_path: Path, state_store: StateSetup, ending: str
) -> None:
    path = metadata(tmp_path)
    holder = spawn(HOLDER, str(path), state_store.kind, state_store.location)
    try:
        assert holder.stdout is not None
        assert holder.stdin is not None
        assert holder.stdout.readline() == "held\n", holder.stderr.read() if holder.stderr else ""
        second = provider(path, state_store)
        (dataflow,) = second.get_dataflows()
        acquired, release = threading.Event(), threading.Event()

        def write() -> None:
            with second.destination_lock(dataflow.destination.destination_key):
                acquired.set()
                release.wait(PROCESS_TIMEOUT)

        waiter = threading.Thread(target=write, daemon=True)
        waiter.start()
        assert not acquired.wait(1.0)  # the first writer holds the table: the second waits (flock semantics)
        if ending == "released":
            holder.stdin.write("\n")
            holder.stdin.flush()
        else:
            holder.send_signal(signal.SIGKILL)  # the holder dies: the lock must not outlive it
        assert acquired.wait(PROCESS_TIMEOUT)
        release.set()
        waiter.join(PROCESS_TIMEOUT)
        holder.communicate(timeout=PROCESS_TIMEOUT)
        assert holder.returncode == (0 if ending == "released" else -signal.SIGKILL)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.communicate(timeout=PROCESS_TIMEOUT)


# --- damaged state is an error, never a first run ------------------------------------------------


@pytest.mark.parametrize("damage", ['{"updated_at": {"__type__": "datetime", "val', "", "[1, 2]"],
                         ids=["truncated", "empty", "not-an-object"])  # fmt: skip
def test_a_damaged_watermark_is_an_error_naming_its_record(
    tmp_path: Path, state_store: StateSetup, damage: str
) -> None:
    path = metadata(tmp_path)
    state = provider(path, state_store)
    (dataflow,) = state.get_dataflows()
    folder = state.watermark_folder(str(dataflow.dataflow_id))
    state_store.open().write(folder, damage)  # what a bad hand edit or a broken disk leaves
    where = (
        "watermark_value.json" if state_store.kind == "file" else f"datacoolie_state.watermarks state_key='{folder}'"
    )
    with pytest.raises(WatermarkError, match="NOT treated as a first run") as caught:
        WatermarkManager(state).get_watermark(str(dataflow.dataflow_id))
    assert where in str(caught.value)
    # and a run refuses it: nothing is read again, nothing written
    land(tmp_path, "a", [1, 2], [10, 20])
    with DataCoolieDriver(metadata_base_path=str(path), **state_store.provider_args) as driver:
        (runtime,) = driver.run().runtimes
    assert runtime.status == "failed"
    assert "NOT treated as a first run" in str(runtime.error_message)
    assert not (tmp_path / "lake" / "silver" / "orders").exists()


def test_a_damaged_commit_record_is_an_error_naming_its_record(tmp_path: Path, state_store: StateSetup) -> None:
    path = metadata(tmp_path)
    state = provider(path, state_store)
    (dataflow,) = state.get_dataflows()
    folder = state.watermark_folder(str(dataflow.dataflow_id))
    state_store.open().write(folder, '{"app_id": "x", "sequence": 0}', JOURNAL_RECORD)
    journal = CommitJournal(state, WatermarkManager(state))
    with pytest.raises(WatermarkError, match="commit journal record is corrupt"):
        journal.record(str(dataflow.dataflow_id))
    where = (
        "pending_commit.json" if state_store.kind == "file" else f"datacoolie_state.commit_journal state_key='{folder}'"
    )
    assert where in str(journal.location(str(dataflow.dataflow_id)))
