"""Two writers of one S3 Delta table both commit, neither over the other.

delta-rs commits version N by creating ``_delta_log/<N>.json`` only if it is absent; on S3 that is a
conditional put (``If-None-Match: *``), which S3 (and moto) refuse with 412 when the version exists.
The loser re-reads the log and commits as N+1 (an append never conflicts with an append). Checked
three ways: every commit request the server receives carries the condition (moto's recorder), a
writer holding a stale snapshot commits after the other writer instead of over it, and two real
processes appending at the same time both land, exactly once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from deltalake import DeltaTable

from datacoolie_core.destinations import delta
from datacoolie_core.destinations.base import CommitMarker
from datacoolie_core.platform.storage import bind_storage_options
from tests.core.object_storage.lake import S3Lake, minutes, orders
from tests.support.s3 import S3Server

pytestmark = [pytest.mark.slow, pytest.mark.s3]
REPO = Path(__file__).parents[3]
COMMIT_FILE = "/_delta_log/0"


def append_lake(s3: S3Server, root: Path, bucket: str | None = None, name: str = "orders") -> S3Lake:
    lake = S3Lake(s3, root)
    if bucket is not None:  # a second writer of the same bucket's table
        lake.bucket, lake.landing, lake.lake = bucket, f"s3://{bucket}/landing/{root.name}", f"s3://{bucket}/lake"
    lake.write_metadata(
        [{"name": name, "stage": "s",
          "source": {"connection_name": "landing", "schema_name": "sales", "table": "orders",
                     "watermark_columns": ["updated_at"]},
          "destination": {"connection_name": "lake", "schema_name": "silver", "table": "orders", "load_type": "append"}}]
    )  # fmt: skip
    return lake


def test_every_commit_to_s3_is_a_conditional_put(
    s3: S3Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lake = append_lake(s3, tmp_path)
    lake.land("sales/orders", "a", orders([1], [10]))
    with s3.recording() as requests:
        code, (row,) = lake.run(capsys)
        lake.land("sales/orders", "b", orders([2], [20]))
        code2, (row2,) = lake.run(capsys)
    assert (code, code2, row["status"], row2["status"]) == (0, 0, "succeeded", "succeeded")
    commits = [r for r in requests if r["method"] == "PUT" and COMMIT_FILE in r["url"] and lake.bucket in r["url"]]
    assert [r["url"].rsplit("/", 1)[-1] for r in commits] == [f"{v:020d}.json" for v in (0, 1)]
    assert all(r["headers"].get("If-None-Match") == "*" for r in commits), [r["headers"] for r in commits]


def test_a_writer_with_a_stale_snapshot_commits_after_the_other_writer_not_over_it(s3: S3Server) -> None:
    url = f"s3://{s3.bucket()}/lake/silver/orders"
    bind_storage_options(url, s3.storage_options)
    first = CommitMarker(app_id="writer-a", sequence=1, dataflow_run_id="run-a0")
    delta.create_table(url, orders([1], [10]), partition_by=(), marker=first)
    stale = delta.open_table(url)  # writer A reads the log at version 0 ...
    fresh = delta.open_table(url)
    assert stale is not None
    assert fresh is not None
    # ... writer B commits version 1 ...
    delta.write_table(fresh, orders([2], [20]), mode="append", partition_by=(),
                      marker=CommitMarker(app_id="writer-b", sequence=1, dataflow_run_id="run-b1"))  # fmt: skip
    # ... and A, still at version 0, commits: its version-1 put is refused, it lands as version 2
    delta.write_table(stale, orders([3], [30]), mode="append", partition_by=(),
                      marker=CommitMarker(app_id="writer-a", sequence=2, dataflow_run_id="run-a2"))  # fmt: skip
    table = DeltaTable(url, storage_options=s3.storage_options)
    assert table.version() == 2
    assert (table.transaction_version("writer-a"), table.transaction_version("writer-b")) == (2, 1)
    assert minutes(pl.read_delta(url, storage_options=s3.storage_options)) == [(1, 10), (2, 20), (3, 30)]


def test_two_processes_appending_to_one_s3_table_at_once_both_land_exactly_once(
    s3: S3Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = append_lake(s3, tmp_path / "w1", name="orders_w1")
    # another dataflow (own landing folder, own state, own commit app id) writing the same table
    second = append_lake(s3, tmp_path / "w2", bucket=first.bucket, name="orders_w2")
    first.land("sales/orders", "a", orders([1, 2], [10, 20]))
    code, (row,) = first.run(capsys)  # the table exists: both writers below append to it
    assert (code, row["status"]) == (0, "succeeded"), row["error_message"]
    first.land("sales/orders", "b", orders([3, 4], [30, 40]))
    second.land("sales/orders", "c", orders([5, 6], [50, 60]))
    script = "import sys; from datacoolie_core.cli import main; sys.exit(main(sys.argv[1:]))"
    commands = [
        [sys.executable, "-c", script, "run", "--metadata", str(lake.metadata), "--state-path", str(lake.state),
         "--retry-count", "3", "--retry-delay", "0.1"]
        for lake in (first, second)
    ]  # fmt: skip
    writers = [
        subprocess.Popen(
            command, cwd=REPO, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for command in commands
    ]
    results = [w.communicate(timeout=300) for w in writers]
    assert [w.returncode for w in writers] == [0, 0], results
    table = DeltaTable(f"{first.lake}/silver/orders", storage_options=s3.storage_options)
    assert table.version() == 2  # version 0 (load 1), then one commit per writer
    rows = minutes(first.table("silver", "orders"))
    assert rows == [(1, 10), (2, 20), (3, 30), (4, 40), (5, 50), (6, 60)]  # each once
