"""Exactly once into Iceberg: a run killed between its commit and its watermark save is repaired.

The run is a real subprocess SIGKILLed at the fault point right after the commit
(:mod:`datacoolie_core.faults`); the next run reads the table's commit record (the table property
and the snapshot summaries the write stamped) and neither loses nor duplicates a row.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core import FileProvider
from datacoolie_core.faults import AFTER_COMMIT, ENV_VAR
from datacoolie_core.watermark import CommitJournal, WatermarkManager
from tests.core.orchestration.test_dataflow_runner import T0, execute, land
from tests.support.iceberg import iceberg_connection, load_table, read_back

REPO = Path(__file__).parents[3]
CRASHING_RUN = """
import sys
from pathlib import Path
from tests.core.orchestration.test_dataflow_runner import execute
info, _, _ = execute(Path(sys.argv[1]))
raise SystemExit(f"expected to be killed, got {info.status}: {info.error_message}")
"""


def metadata(tmp_path: Path, load_type: str) -> Path:
    destination: dict[str, Any] = {"connection_name": "lake", "schema_name": "silver", "table": "orders"}
    destination["load_type"] = load_type
    if load_type != "append":
        destination["merge_keys"] = ["order_id"]
    if load_type == "scd2":
        destination["configure"] = {"scd2_effective_column": "updated_at"}
    document = {
        "connections": [
            {"name": "landing", "format": "parquet", "configure": {"base_path": str(tmp_path / "landing")}},
            iceberg_connection(tmp_path),
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
    path = tmp_path / "meta" / "metadata.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def rows(tmp_path: Path) -> list[tuple[int, int]]:
    table = read_back(tmp_path, "silver", "orders", by=("order_id", "updated_at"))
    return [(r[0], int((r[1] - T0).total_seconds() // 60)) for r in table.select("order_id", "updated_at").iter_rows()]


def crash_after_commit(path: Path) -> None:
    crashed = subprocess.run(
        [sys.executable, "-c", CRASHING_RUN, str(path)],
        cwd=REPO, env=os.environ | {ENV_VAR: AFTER_COMMIT}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr


EXPECTED = {
    "append": [(1, 10), (2, 20), (2, 25), (3, 30)],
    "merge_upsert": [(1, 10), (2, 25), (3, 30)],
    "merge_overwrite": [(1, 10), (2, 25), (3, 30)],
    "scd2": [(1, 10), (2, 20), (2, 25), (3, 30)],
}


@pytest.mark.slow
@pytest.mark.parametrize("load_type", list(EXPECTED))
def test_crash_after_commit_before_watermark_save_neither_loses_nor_duplicates(tmp_path: Path, load_type: str) -> None:
    path = metadata(tmp_path, load_type)
    # run 1 — initial
    land(tmp_path, "a", [1, 2], [10, 20])
    first, _, _ = execute(path)
    assert first.status == "succeeded", first.error_message
    # run 2 — killed right after its commit landed, before the watermark was saved
    land(tmp_path, "b", [2, 3], [25, 30])
    crash_after_commit(path)
    # run 3 — sees that run 2's write landed (sequence 2 in the table), saves its watermark, reads nothing new
    info, watermarks, dataflow = execute(path)
    assert (info.status, info.skip_reason) == ("skipped", "no new source rows")
    assert watermarks.get_watermark(str(dataflow.dataflow_id)) == {"updated_at": T0 + timedelta(minutes=30)}
    assert rows(tmp_path) == EXPECTED[load_type]
    record = json.loads(
        load_table(tmp_path, "silver", "orders").properties[f"datacoolie.commit.datacoolie:{dataflow.dataflow_id}"]
    )
    assert record["sequence"] == 2


@pytest.mark.slow
def test_a_lost_journal_is_rebuilt_from_the_tables_commit_record(tmp_path: Path) -> None:
    path = metadata(tmp_path, "append")
    land(tmp_path, "a", [1, 2], [10, 20])
    execute(path)
    land(tmp_path, "b", [2, 3], [25, 30])
    crash_after_commit(path)
    # the journal is lost too: only the table says that write 2 landed, and with which watermark
    provider = FileProvider(path)
    (flow,) = provider.get_dataflows()
    journal = CommitJournal(provider, WatermarkManager(provider))
    Path(journal.location(str(flow.dataflow_id))).unlink()
    info, watermarks, dataflow = execute(path)
    assert (info.status, info.skip_reason) == ("skipped", "no new source rows")
    assert watermarks.get_watermark(str(dataflow.dataflow_id)) == {"updated_at": T0 + timedelta(minutes=30)}
    assert rows(tmp_path) == EXPECTED["append"]
