"""OPTIMIZE and VACUUM of an S3 Delta table by ``datacoolie maintenance``, in a fresh process.

A fresh process matters: maintenance resolves only the destination's secrets (DataCoolie O-17), and
those must be what reaches S3; nothing bound by an earlier run in the same process may help.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.core.object_storage.lake import minutes, orders
from tests.core.object_storage.test_s3_load_strategies import orders_lake
from tests.support.s3 import S3Server

pytestmark = [pytest.mark.slow, pytest.mark.s3]
REPO = Path(__file__).parents[3]


def test_maintenance_compacts_and_vacuums_an_s3_table(
    s3: S3Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lake = orders_lake(s3, tmp_path, {"load_type": "append"})
    for load, (ids, at) in enumerate([([1], [10]), ([2], [20]), ([3], [30])]):  # three commits, three small files
        lake.land("sales/orders", f"f{load}", orders(ids, at))
        code, (row,) = lake.run(capsys)
        assert (code, row["status"]) == (0, "succeeded"), row["error_message"]
    table_url = f"{lake.lake}/silver/orders"
    data_files = [k for k in s3.keys(table_url) if k.endswith(".parquet")]
    assert len(data_files) == 3
    script = "import sys; from datacoolie_core.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", script, "maintenance", "--metadata", str(lake.metadata), "--state-path", str(lake.state),
         "--retention-hours", "0", "--json"],
        cwd=REPO, env=dict(os.environ), capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = json.loads(done.stdout)["dataflows"]
    assert row["status"] == "succeeded", row["error_message"]
    assert (row["destination"]["files_added"], row["destination"]["files_removed"]) == (1, 3 + 3)  # optimize, vacuum
    table = DeltaTable(table_url, storage_options=s3.storage_options)
    assert [h["operation"] for h in table.history(3)][-1] == "OPTIMIZE"
    assert len(table.file_uris()) == 1
    assert len([k for k in s3.keys(table_url) if k.endswith(".parquet")]) == 1  # the 3 old files deleted from S3
    assert minutes(lake.table("silver", "orders")) == [(1, 10), (2, 20), (3, 30)]
