"""The pre-write cross-check of watermark + commit journal against the destination's Delta log."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from datacoolie_core import FileProvider, WatermarkError, WatermarkManager
from datacoolie_core.cli import main
from datacoolie_core.destinations import delta
from datacoolie_core.orchestration.dataflow_runner import DataflowRun, run_dataflow
from datacoolie_core.orchestration.state_check import app_id_of, check_state
from datacoolie_core.watermark import CommitJournal, PendingCommit
from tests.core.orchestration.test_dataflow_runner import T0, execute, land, metadata, table


def journal_of(path: Path) -> tuple[CommitJournal, WatermarkManager, str, FileProvider]:
    provider = FileProvider(path)
    watermarks = WatermarkManager(provider)
    (dataflow,) = provider.get_dataflows()
    return CommitJournal(provider, watermarks), watermarks, str(dataflow.dataflow_id), provider


def two_loads(tmp_path: Path, load_type: str = "append", destination_format: str = "delta") -> Path:
    path = metadata(tmp_path, load_type, destination_format)
    land(tmp_path, "a", [1, 2], [10, 20])
    assert execute(path)[0].status == "succeeded"
    land(tmp_path, "b", [2, 3], [25, 30])
    assert execute(path)[0].status == "succeeded"
    return path


def test_the_normal_path_reads_the_log_once_and_the_write_once_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = two_loads(tmp_path)
    land(tmp_path, "c", [4], [40])
    provider = FileProvider(path)
    (dataflow,) = provider.get_dataflows()
    watermarks = WatermarkManager(provider)
    journal = CommitJournal(provider, watermarks)
    opened: list[str] = []
    real_open = delta.open_table
    monkeypatch.setattr(delta, "open_table", lambda p: opened.append(p) or real_open(p))  # a spy, not a fake
    state = check_state(dataflow, watermarks, journal)
    assert (state.sequence, state.checked, len(opened)) == (2, True, 1)
    info = run_dataflow(
        dataflow, DataflowRun(watermarks=watermarks, journal=journal, baseline=state.watermark, state=state)
    )
    assert (info.status, info.destination.commit_sequence, len(opened)) == ("succeeded", 3, 2)
    assert journal.record(str(dataflow.dataflow_id)) == PendingCommit(
        app_id_of(dataflow), 3, info.dataflow_run_id, {"updated_at": T0 + timedelta(minutes=40)}, settled=True
    )


def test_a_pending_write_that_never_landed_is_dropped_and_its_window_read_again(tmp_path: Path) -> None:
    path = metadata(tmp_path)
    land(tmp_path, "a", [1, 2], [10, 20])
    execute(path)
    journal, watermarks, dataflow_id, _ = journal_of(path)
    # a run announced write 2 and died before committing it
    land(tmp_path, "b", [3], [30])
    journal.announce(dataflow_id, PendingCommit(f"datacoolie:{dataflow_id}", 2, "lost-run", {"updated_at": T0}))
    info, _, _ = execute(path)
    assert (info.status, info.destination.commit_sequence) == ("succeeded", 2)
    assert table(tmp_path)["order_id"].to_list() == [1, 2, 3]
    assert watermarks.get_watermark(dataflow_id) == {"updated_at": T0 + timedelta(minutes=30)}


def test_a_pending_first_write_that_never_landed_is_a_first_run(tmp_path: Path) -> None:
    path = metadata(tmp_path)
    journal, _, dataflow_id, _ = journal_of(path)
    journal.announce(dataflow_id, PendingCommit(f"datacoolie:{dataflow_id}", 1, "lost-run"))
    land(tmp_path, "a", [1, 2], [10, 20])
    info, _, _ = execute(path)
    assert (info.status, info.destination.commit_sequence) == ("succeeded", 1)
    assert table(tmp_path)["order_id"].to_list() == [1, 2]


def test_a_journal_restored_from_an_older_backup_catches_up_from_the_log(tmp_path: Path) -> None:
    path = metadata(tmp_path)
    land(tmp_path, "a", [1, 2], [10, 20])
    execute(path)
    journal, watermarks, dataflow_id, provider = journal_of(path)
    backup = (provider.get_watermark(dataflow_id), provider.get_pending_commit(dataflow_id))
    land(tmp_path, "b", [3], [30])
    execute(path)
    provider.update_watermark(dataflow_id, backup[0] or "")
    provider.set_pending_commit(dataflow_id, backup[1])
    (dataflow,) = provider.get_dataflows()
    # show-mode first: it works out the same, and changes nothing
    dry = check_state(dataflow, watermarks, journal, apply=False)
    assert dry.watermark == {"updated_at": T0 + timedelta(minutes=30)}
    assert dry.notes == ("writes 2..2 found in the destination's log were settled from it",)
    assert provider.get_pending_commit(dataflow_id) == backup[1]
    state = check_state(dataflow, watermarks, journal)
    assert (state.watermark, state.sequence) == ({"updated_at": T0 + timedelta(minutes=30)}, 2)
    assert watermarks.get_watermark(dataflow_id) == {"updated_at": T0 + timedelta(minutes=30)}
    assert journal.record(dataflow_id).sequence == 2  # type: ignore[union-attr]
    info, _, _ = execute(path)
    assert (info.status, table(tmp_path).height) == ("skipped", 3)


def test_a_watermark_behind_the_last_settled_write_is_an_error(tmp_path: Path) -> None:
    path = two_loads(tmp_path)
    _, _watermarks, dataflow_id, provider = journal_of(path)
    provider.update_watermark(dataflow_id, json.dumps({"updated_at": {"__datetime__": "2026-01-01T00:20:00+00:00"}}))
    with pytest.raises(WatermarkError, match=r"the watermark is at .*, but the last settled write \(2\) saved") as info:
        execute(path)
    assert "datacoolie state repair --metadata <metadata file> --dataflow orders --confirm" in str(info.value)
    assert table(tmp_path).height == 4


def test_a_dataflow_without_watermark_columns_keeps_no_state_and_reads_no_log(tmp_path: Path) -> None:
    path = metadata(tmp_path, "overwrite")
    document = json.loads(path.read_text())
    del document["dataflows"][0]["source"]["watermark_columns"]
    path.write_text(json.dumps(document))
    land(tmp_path, "a", [1], [10])
    info, watermarks, dataflow = execute(path)
    assert info.status == "succeeded"
    journal, _, dataflow_id, _ = journal_of(path)
    assert journal.record(dataflow_id) is None
    assert check_state(dataflow, watermarks, journal).checked is False


def test_a_flat_file_destination_without_journal_asks_for_a_deliberate_repair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = two_loads(tmp_path, "append", "parquet")
    _, _, dataflow_id, provider = journal_of(path)
    provider.set_pending_commit(dataflow_id, None)
    with pytest.raises(WatermarkError, match="records no watermark to check the stored one against"):
        execute(path)
    code = main(["state", "repair", "--metadata", str(path), "--dataflow", "orders", "--confirm"])
    assert code == 0
    assert "done: take the stored watermark as right for write 2" in capsys.readouterr().out
    info, _, _ = execute(path)
    assert (info.status, info.skip_reason) == ("skipped", "no new source rows")


def test_state_errors_name_the_dataflow_file_and_command(tmp_path: Path) -> None:
    path = two_loads(tmp_path)
    _, watermarks, dataflow_id, provider = journal_of(path)
    provider.watermark_path(dataflow_id).write_text("{}")
    (dataflow,) = provider.get_dataflows()
    with pytest.raises(WatermarkError, match=r"^dataflow 'orders': Watermark is corrupt: it holds no value") as info:
        check_state(dataflow, watermarks, None)
    assert info.value.path == str(provider.watermark_path(dataflow_id))
    assert "`datacoolie state reset --metadata <metadata file> --dataflow orders --confirm`" in str(info.value)


def test_a_journal_of_another_dataflow_is_ignored_and_rebuilt_from_the_log(tmp_path: Path) -> None:
    path = two_loads(tmp_path)
    journal, watermarks, dataflow_id, provider = journal_of(path)
    provider.set_pending_commit(dataflow_id, PendingCommit("datacoolie:other", 9, "r", settled=True).to_text())
    (dataflow,) = provider.get_dataflows()
    state = check_state(dataflow, watermarks, journal)
    assert state.sequence == 2
    assert state.notes[0] == f"the commit journal belongs to datacoolie:other, not datacoolie:{dataflow_id}"
    assert journal.record(dataflow_id).app_id == f"datacoolie:{dataflow_id}"  # type: ignore[union-attr]
