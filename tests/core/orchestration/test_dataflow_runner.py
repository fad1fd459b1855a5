"""One dataflow end to end: read -> transform -> write -> watermark, exactly once across a crash."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from datacoolie_core import DataFlow, FileProvider, WatermarkManager
from datacoolie_core.faults import AFTER_COMMIT, ENV_VAR
from datacoolie_core.models.runtime import DataFlowRuntimeInfo
from datacoolie_core.orchestration.dataflow_runner import DataflowRun, prepare_baseline, run_dataflow
from datacoolie_core.sources.base import ReadRange
from datacoolie_core.watermark import CommitJournal

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REPO = Path(__file__).parents[3]


def metadata(tmp_path: Path, load_type: str = "append", destination_format: str = "delta", **transform: Any) -> Path:
    destination: dict[str, Any] = {
        "connection_name": "lake",
        "schema_name": "silver",
        "table": "orders",
        "load_type": load_type,
    }
    if load_type in ("merge_upsert", "merge_overwrite", "scd2"):
        destination["merge_keys"] = ["order_id"]
    if load_type == "scd2":
        destination["configure"] = {"scd2_effective_column": "updated_at"}
    document = {
        "connections": [
            {"name": "landing", "format": "parquet", "configure": {"base_path": str(tmp_path / "landing")}},
            {"name": "lake", "format": destination_format, "configure": {"base_path": str(tmp_path / "lake")}},
        ],
        "dataflows": [
            {
                "name": "orders",
                "stage": "bronze2silver",
                "source": {
                    "connection_name": "landing",
                    "schema_name": "sales",
                    "table": "orders",
                    "watermark_columns": ["updated_at"],
                },
                "transform": transform,
                "destination": destination,
            }
        ],
    }
    path = tmp_path / "meta" / "metadata.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def land(tmp_path: Path, name: str, ids: list[int], minutes: list[int]) -> None:
    folder = tmp_path / "landing" / "sales" / "orders"
    folder.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(
        {
            "order_id": ids,
            "amount": [float(i) for i in ids],
            "updated_at": [T0 + timedelta(minutes=m) for m in minutes],
        },
        schema_overrides={"updated_at": pl.Datetime("us", "UTC")},
    ).write_parquet(folder / f"{name}.parquet")


def execute(path: Path, **run: Any) -> tuple[DataFlowRuntimeInfo, WatermarkManager, DataFlow]:
    provider = FileProvider(path)
    (dataflow,) = provider.get_dataflows()
    watermarks = WatermarkManager(provider)
    journal = CommitJournal(provider, watermarks)
    baseline = prepare_baseline(dataflow, watermarks, journal)
    info = run_dataflow(dataflow, DataflowRun(watermarks=watermarks, journal=journal, baseline=baseline, **run))
    return info, watermarks, dataflow


def table(tmp_path: Path) -> pl.DataFrame:
    return pl.read_delta(str(tmp_path / "lake" / "silver" / "orders")).sort("order_id", "updated_at")


def test_incremental_append_over_three_runs(tmp_path: Path) -> None:
    path = metadata(tmp_path)
    # run 1 — initial
    land(tmp_path, "a", [1, 2, 3], [10, 20, 30])
    info, watermarks, dataflow = execute(path)
    assert (info.status, info.source.rows_read, info.destination.rows_written) == ("succeeded", 3, 3)
    assert watermarks.get_watermark(str(dataflow.dataflow_id)) == {"updated_at": T0 + timedelta(minutes=30)}
    assert info.transform.transformers_applied[-2:] == ["SystemColumnAdder", "ColumnNameSanitizer(lower)"]
    assert table(tmp_path).columns[-7:] == [
        "__file_name", "__file_path", "__file_modification_time",
        "__created_at", "__updated_at", "__updated_by", "__dataflow_run_id",
    ]  # fmt: skip
    # run 2 — two new rows and one late row equal to the stored max (strict >: not re-read)
    land(tmp_path, "b", [4, 5, 6], [30, 40, 50])
    info, watermarks, _ = execute(path)
    assert (info.status, info.source.rows_read) == ("succeeded", 2)
    assert table(tmp_path)["order_id"].to_list() == [1, 2, 3, 5, 6]
    # run 3 — nothing new -> skipped, nothing written
    info, watermarks, _ = execute(path)
    assert (info.status, info.skip_reason) == ("skipped", "no new source rows")
    assert table(tmp_path).height == 5
    assert watermarks.get_watermark(str(dataflow.dataflow_id)) == {"updated_at": T0 + timedelta(minutes=50)}


def test_replay_range_leaves_the_watermark_alone(tmp_path: Path) -> None:
    path = metadata(tmp_path)
    land(tmp_path, "a", [1, 2, 3, 4], [10, 20, 30, 40])
    chunk = ReadRange("updated_at", T0 + timedelta(minutes=20), T0 + timedelta(minutes=40))
    info, watermarks, dataflow = execute(path, read_range=chunk, save_watermark=False, operation_type="replay")
    assert (info.status, info.operation_type) == ("succeeded", "replay")
    assert table(tmp_path)["order_id"].to_list() == [2, 3]
    assert watermarks.get_watermark(str(dataflow.dataflow_id)) is None


def test_a_failed_transform_writes_nothing_and_keeps_the_watermark(tmp_path: Path) -> None:
    path = metadata(tmp_path, additional_columns=[{"column": "x", "expression": "no_such_column + 1"}])
    land(tmp_path, "a", [1], [10])
    info, watermarks, dataflow = execute(path)
    assert info.status == "failed"
    assert info.error_type == "TransformError"
    assert "no_such_column" in (info.error_message or "")
    assert isinstance(info.exception, Exception)
    assert not (tmp_path / "lake" / "silver" / "orders").exists()
    assert watermarks.get_watermark(str(dataflow.dataflow_id)) is None


def test_rows_all_filtered_by_the_transform_advance_the_watermark_without_a_write(tmp_path: Path) -> None:
    path = metadata(tmp_path, filter_expression="amount > 100")
    land(tmp_path, "a", [1, 2], [10, 20])
    info, watermarks, dataflow = execute(path)
    assert (info.status, info.transform.rows_out, info.destination.rows_written) == ("succeeded", 0, 0)
    assert not (tmp_path / "lake" / "silver" / "orders").exists()
    assert watermarks.get_watermark(str(dataflow.dataflow_id)) == {"updated_at": T0 + timedelta(minutes=20)}


CRASHING_RUN = """
import sys
from tests.core.orchestration.test_dataflow_runner import execute
from pathlib import Path
info, _, _ = execute(Path(sys.argv[1]))
raise SystemExit(f"expected to be killed, got {info.status}: {info.error_message}")
"""


@pytest.mark.parametrize(
    ("load_type", "destination_format"),
    [("append", "delta"), ("overwrite", "delta"), ("merge_upsert", "delta"), ("merge_overwrite", "delta"),
     ("scd2", "delta"), ("append", "parquet")],
    ids=["append", "overwrite", "merge_upsert", "merge_overwrite", "scd2", "parquet-append"],
)  # fmt: skip
def test_crash_after_commit_before_watermark_save_neither_loses_nor_duplicates(
    tmp_path: Path, load_type: str, destination_format: str
) -> None:
    path = metadata(tmp_path, load_type, destination_format)
    land(tmp_path, "a", [1, 2], [10, 20])
    first, _, _ = execute(path)
    assert first.status == "succeeded"
    land(tmp_path, "b", [2, 3], [25, 30])  # an update of 2 and a new key 3
    # run 2 — killed right after its commit landed, before the watermark was saved
    crashed = subprocess.run(
        [sys.executable, "-c", CRASHING_RUN, str(path)],
        cwd=REPO, env=os.environ | {ENV_VAR: AFTER_COMMIT}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    # run 3 — sees that run 2's write landed, saves its watermark, and finds nothing new
    info, watermarks, dataflow = execute(path)
    assert (info.status, info.skip_reason) == ("skipped", "no new source rows")
    assert watermarks.get_watermark(str(dataflow.dataflow_id)) == {"updated_at": T0 + timedelta(minutes=30)}
    if destination_format == "delta":
        rows = table(tmp_path).select("order_id", "updated_at")
    else:
        rows = pl.read_parquet(tmp_path / "lake" / "silver" / "orders" / "**/*.parquet").select(
            "order_id", "updated_at"
        )
    expected = {
        "append": [(1, 10), (2, 20), (2, 25), (3, 30)],
        "overwrite": [(2, 25), (3, 30)],
        "merge_upsert": [(1, 10), (2, 25), (3, 30)],
        "merge_overwrite": [(1, 10), (2, 25), (3, 30)],
        "scd2": [(1, 10), (2, 20), (2, 25), (3, 30)],
    }[load_type]
    assert sorted((r[0], int((r[1] - T0).total_seconds() // 60)) for r in rows.iter_rows()) == expected
