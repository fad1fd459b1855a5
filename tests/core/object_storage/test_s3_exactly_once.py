"""Exactly once on S3: a run killed between the Delta commit and the watermark save is repaired.

Mirrors ``tests/core/adversarial/test_state_integrity.py`` (local tables) with the table in moto's
S3: load 2 runs in a real subprocess that SIGKILLs itself right after its commit landed in S3
(``DATACOOLIE_CRASH_AT=after_commit``); the rerun proves from the S3 Delta log that load 2 landed,
saves its watermark and reads nothing again: 0 duplicates, 0 rows lost. The state stays local.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from datacoolie_core.faults import AFTER_COMMIT, ENV_VAR
from tests.core.object_storage.lake import minutes, orders
from tests.core.object_storage.test_s3_load_strategies import AFTER_LOAD_2, DESTINATIONS, orders_lake
from tests.support.s3 import S3Server

pytestmark = [pytest.mark.slow, pytest.mark.s3]
REPO = Path(__file__).parents[3]
WATERMARK_AT = {20: {"updated_at": {"__datetime__": "2026-01-01T00:20:00+00:00"}},
                30: {"updated_at": {"__datetime__": "2026-01-01T00:30:00+00:00"}}}  # fmt: skip


@pytest.mark.parametrize("strategy", ["append", "merge_upsert", "overwrite", "scd2"])
def test_a_crash_after_the_s3_commit_is_settled_from_the_delta_log(
    s3: S3Server, tmp_path: Path, capsys: pytest.CaptureFixture[str], strategy: str
) -> None:
    lake = orders_lake(s3, tmp_path, DESTINATIONS[strategy])
    columns = ["__is_current"] if strategy == "scd2" else []
    # load 1 — initial
    lake.land("sales/orders", "a", orders([1, 2], [10, 20]))
    code, (row,) = lake.run(capsys)
    assert (code, row["status"]) == (0, "succeeded"), row["error_message"]
    watermark = lake.watermark_path("orders")
    assert json.loads(watermark.read_text()) == WATERMARK_AT[20]
    # load 2 — a separate process, killed after its commit landed in S3 and before the watermark save
    lake.land("sales/orders", "b", orders([2, 3], [25, 30]))
    script = "import sys; from datacoolie_core.cli import main; sys.exit(main(sys.argv[1:]))"
    crashed = subprocess.run(
        [sys.executable, "-c", script, "run", "--metadata", str(lake.metadata), "--state-path", str(lake.state)],
        cwd=REPO, env=os.environ | {ENV_VAR: AFTER_COMMIT}, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert minutes(lake.table("silver", "orders"), *columns) == AFTER_LOAD_2[strategy]  # the commit is in S3
    assert json.loads(watermark.read_text()) == WATERMARK_AT[20]  # ... and the watermark is behind it
    # load 3 — the S3 log proves load 2 landed: its watermark is saved, nothing is read or written again
    code, (row,) = lake.run(capsys)
    assert (code, row["status"], row["skip_reason"]) == (0, "skipped", "no new source rows"), row["error_message"]
    assert minutes(lake.table("silver", "orders"), *columns) == AFTER_LOAD_2[strategy]  # 0 duplicates, 0 lost
    assert json.loads(watermark.read_text()) == WATERMARK_AT[30]
