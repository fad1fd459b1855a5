"""Appends and overwrites of Delta tables run as ONE streaming pass: same rows, counts and watermark.

The count and the new watermark of a streamed write come from an aggregate over the same pinned
rows, never from Delta's file statistics (which truncate strings and skip some types). Every
expected value here is computed independently, with Polars on the landed data.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from deltalake import DeltaTable, write_deltalake
from polars.testing import assert_frame_equal

from datacoolie_core import FileProvider, WatermarkManager
from datacoolie_core.destinations.delta import META_WATERMARK
from datacoolie_core.models.run_config import DataCoolieRunConfig, WindowSpec
from datacoolie_core.models.runtime import DataFlowRuntimeInfo
from datacoolie_core.orchestration import dataflow_runner
from datacoolie_core.orchestration.dataflow_runner import DataflowRun, prepare_baseline, run_dataflow, streams
from datacoolie_core.orchestration.state_check import check_state
from datacoolie_core.sources.base import ReadRequest, SourceScan
from datacoolie_core.transforms.base import TransformContext
from datacoolie_core.transforms.pipeline import DEFAULT_TRANSFORMERS
from datacoolie_core.watermark import CommitJournal
from datacoolie_core.watermark.serializer import deserialize_watermark

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def stream_every_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """These loads are small: stream them anyway (below the threshold a load is collected)."""
    monkeypatch.setattr(dataflow_runner, "STREAM_FROM_BYTES", 0)


LONG = "x" * 200  # Delta's statistics keep 32 characters of a string: a max from them would be wrong


def metadata(tmp_path: Path, *, source_format: str = "parquet", load_type: str = "append", **source: Any) -> Path:
    keys = {"merge_keys": ["order_id"]} if load_type.startswith("merge") else {}
    document = {
        "connections": [
            {"name": "landing", "format": source_format, "configure": {"base_path": str(tmp_path / "landing")}},
            {"name": "lake", "format": "delta", "configure": {"base_path": str(tmp_path / "lake")}},
        ],
        "dataflows": [
            {
                "name": "orders",
                "stage": "bronze2silver",
                "source": {"connection_name": "landing", "schema_name": "sales", "table": "orders"} | source,
                "destination": {
                    "connection_name": "lake",
                    "schema_name": "silver",
                    "table": "orders",
                    "load_type": load_type,
                }
                | keys,
            }
        ],
    }
    path = tmp_path / "meta" / "metadata.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def land(tmp_path: Path, name: str, frame: pl.DataFrame) -> Path:
    folder = tmp_path / "landing" / "sales" / "orders"
    folder.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(folder / f"{name}.parquet")
    return folder / f"{name}.parquet"


def execute(path: Path, **run: Any) -> tuple[DataFlowRuntimeInfo, WatermarkManager, str]:
    provider = FileProvider(path)
    (dataflow,) = provider.get_dataflows()
    watermarks = WatermarkManager(provider)
    journal = CommitJournal(provider, watermarks)
    baseline = prepare_baseline(dataflow, watermarks, journal)
    info = run_dataflow(dataflow, DataflowRun(watermarks=watermarks, journal=journal, baseline=baseline, **run))
    return info, watermarks, str(dataflow.dataflow_id)


def target(tmp_path: Path) -> str:
    return str(tmp_path / "lake" / "silver" / "orders")


def recorded_watermark(tmp_path: Path) -> dict[str, Any] | None:
    """The watermark the last commit recorded (what a repair rebuilds the state from)."""
    return deserialize_watermark(DeltaTable(target(tmp_path)).history(1)[0].get(META_WATERMARK))


def frames(tmp_path: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The landed rows and the table, timestamps as Delta stores them (microseconds, UTC)."""
    folder = tmp_path / "landing" / "sales" / "orders"
    landed = pl.concat([pl.read_parquet(p) for p in sorted(folder.glob("*.parquet"))])
    return as_stored(landed), as_stored(pl.read_delta(target(tmp_path)))


def as_stored(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(
        (column.dt.convert_time_zone("UTC") if dtype.time_zone else column.dt.replace_time_zone("UTC"))
        for name, dtype in frame.schema.items()
        if isinstance(dtype, pl.Datetime) and (column := pl.col(name).dt.cast_time_unit("us")) is not None
    )


WATERMARK_CASES = [
    pytest.param(
        pl.Series("wm", [LONG + "a", LONG + "c", None, LONG + "b"]), LONG + "c", id="string-longer-than-the-stats"
    ),
    pytest.param(
        pl.Series("wm", [T0, T0 + timedelta(hours=5), T0 + timedelta(hours=1)]).dt.convert_time_zone("Asia/Tokyo"),
        T0 + timedelta(hours=5),
        id="tz-aware-timestamp-in-utc",
    ),
    pytest.param(
        pl.Series("wm", [datetime(2026, 1, 1), datetime(2026, 1, 1, 0, 0, 0, 5)]).cast(pl.Datetime("ns"))
        + pl.Series([1, 1], dtype=pl.Duration("ns")),
        datetime(2026, 1, 1, 0, 0, 0, 6),
        id="nanoseconds-rounded-up",
    ),
    pytest.param(
        pl.Series("wm", [Decimal("1.000000001"), Decimal("12345678901234567890.123456789")], pl.Decimal(38, 9)),
        Decimal("12345678901234567890.123456789"),
        id="decimal-exact",
    ),
]


@pytest.mark.parametrize(("column", "expected"), WATERMARK_CASES)
def test_streamed_append_records_the_exact_max_of_the_watermark_column(
    tmp_path: Path, column: pl.Series, expected: Any
) -> None:
    path = metadata(tmp_path, watermark_columns=["wm"])
    land(tmp_path, "a", pl.DataFrame({"order_id": range(column.len())}).with_columns(column))
    info, watermarks, dataflow_id = execute(path)
    assert info.status == "succeeded", info.error_message
    landed, written = frames(tmp_path)
    assert (info.source.rows_read, info.transform.rows_out, info.destination.rows_written) == (landed.height,) * 3
    # delta-rs writes a stream's batches concurrently: a table's rows have no order, compare them sorted
    assert_frame_equal(written.select(landed.columns).sort("order_id"), landed, check_dtypes=False)
    assert info.source.watermark_after == {"wm": expected}
    assert watermarks.get_watermark(dataflow_id) == {"wm": expected}
    assert recorded_watermark(tmp_path) == {"wm": expected}


def test_a_null_only_watermark_column_is_left_out_and_the_other_advances(tmp_path: Path) -> None:
    path = metadata(tmp_path, watermark_columns=["empty", "n"])
    land(
        tmp_path, "a", pl.DataFrame({"n": [3, 1, 2], "empty": [None, None, None]}, schema_overrides={"empty": pl.Int64})
    )
    info, watermarks, dataflow_id = execute(path)
    assert (info.status, info.source.rows_read, info.destination.rows_written) == ("succeeded", 3, 3)
    assert watermarks.get_watermark(dataflow_id) == {"n": 3}


def test_an_incremental_delta_read_writes_and_counts_only_the_rows_past_the_watermark(tmp_path: Path) -> None:
    source = tmp_path / "landing" / "sales" / "orders"
    times = [T0 + timedelta(minutes=m) for m in (10, 20, 30, 40)]
    write_deltalake(str(source), pl.DataFrame({"order_id": [1, 2, 3, 4], "updated_at": times}).to_arrow())
    path = metadata(tmp_path, source_format="delta", watermark_columns=["updated_at"])
    provider = FileProvider(path)
    (dataflow,) = provider.get_dataflows()
    WatermarkManager(provider).save_watermark(str(dataflow.dataflow_id), {"updated_at": times[1]})
    info, watermarks, dataflow_id = execute(path)
    assert (info.status, info.source.rows_read, info.destination.rows_written) == ("succeeded", 2, 2)
    assert pl.read_delta(target(tmp_path))["order_id"].sort().to_list() == [3, 4]
    assert watermarks.get_watermark(dataflow_id) == {"updated_at": times[3]}


class AppendToSource:
    """A plugin slot that appends a newer row to the Delta source while the run is being planned."""

    name = "AppendToSource"
    order = 45

    def __init__(self, source: Path) -> None:
        self.source = source

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]:
        late = pl.DataFrame({"order_id": [99], "updated_at": [T0 + timedelta(days=9)]})
        write_deltalake(str(self.source), late.to_arrow(), mode="append")
        return frame, None


def test_rows_committed_to_a_delta_source_during_the_run_are_neither_written_nor_counted(tmp_path: Path) -> None:
    source = tmp_path / "landing" / "sales" / "orders"
    write_deltalake(str(source), pl.DataFrame({"order_id": [1, 2], "updated_at": [T0, T0 + timedelta(1)]}).to_arrow())
    path = metadata(tmp_path, source_format="delta", watermark_columns=["updated_at"])
    info, watermarks, dataflow_id = execute(path, transformers=[*DEFAULT_TRANSFORMERS, AppendToSource(source)])
    assert (info.status, info.source.rows_read, info.destination.rows_written) == ("succeeded", 2, 2)
    assert pl.read_delta(target(tmp_path))["order_id"].sort().to_list() == [1, 2]
    assert watermarks.get_watermark(dataflow_id) == {"updated_at": T0 + timedelta(1)}
    # the next run picks the late row up: nothing lost
    info, watermarks, dataflow_id = execute(path)
    assert (info.status, info.source.rows_read) == ("succeeded", 1)
    assert watermarks.get_watermark(dataflow_id) == {"updated_at": T0 + timedelta(days=9)}


class ChangeFile:
    """A plugin slot that rewrites a landed file, or only touches it, while the run is being planned."""

    name = "ChangeFile"
    order = 45

    def __init__(self, path: Path, *, rewrite: bool) -> None:
        self.path, self.rewrite = path, rewrite

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]:
        if self.rewrite:
            pl.DataFrame({"order_id": [7, 8, 9], "n": [70, 80, 90]}).write_parquet(self.path)
        stat = os.stat(self.path)
        os.utime(self.path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
        return frame, None


@pytest.mark.parametrize("rewrite", [True, False], ids=["rewritten", "touched"])
def test_a_file_changed_during_the_read_fails_the_write_before_anything_is_committed(
    tmp_path: Path, rewrite: bool
) -> None:
    path = metadata(tmp_path, watermark_columns=["n"])
    landed = land(tmp_path, "a", pl.DataFrame({"order_id": [1, 2], "n": [10, 20]}))
    change = ChangeFile(landed, rewrite=rewrite)
    info, watermarks, dataflow_id = execute(path, transformers=[*DEFAULT_TRANSFORMERS, change])
    assert (info.status, info.error_type) == ("failed", "SourceError"), info.error_message
    assert "changed during the read" in (info.error_message or "")
    assert not (tmp_path / "lake" / "silver" / "orders" / "_delta_log").exists()
    assert watermarks.get_watermark(dataflow_id) is None
    # the next run reads the file as it is now, once
    info, watermarks, dataflow_id = execute(path)
    expected = pl.read_parquet(landed)
    assert (info.status, info.source.rows_read) == ("succeeded", expected.height)
    assert pl.read_delta(target(tmp_path))["order_id"].sort().to_list() == expected["order_id"].to_list()
    assert watermarks.get_watermark(dataflow_id) == {"n": expected["n"].max()}


def test_a_full_load_counts_the_rows_it_streams(tmp_path: Path) -> None:
    path = metadata(tmp_path)
    land(tmp_path, "a", pl.DataFrame({"order_id": range(1000)}))
    land(tmp_path, "b", pl.DataFrame({"order_id": range(1000, 1500)}))
    info, _, _ = execute(path)
    assert (info.source.rows_read, info.transform.rows_out, info.destination.rows_written) == (1500, 1500, 1500)
    assert pl.read_delta(target(tmp_path)).height == 1500


def test_a_streamed_load_of_categorical_enum_and_null_columns_writes_strings_and_void(tmp_path: Path) -> None:
    # a parquet file written by Polars from a Categorical column reads back as one; delta-rs 1.6.6
    # panicked on its Utf8View dictionary mid-stream ("cannot downcast Utf8View dictionary value")
    path = metadata(tmp_path)
    land(
        tmp_path,
        "a",
        pl.DataFrame(
            {
                "order_id": range(3000),
                "status": pl.Series(["new", "paid", "sent"] * 1000, dtype=pl.Categorical),
                "size": pl.Series(["S", "M", "L"] * 1000, dtype=pl.Enum(["S", "M", "L"])),
                "unknown": pl.Series([None] * 3000, dtype=pl.Null),
            }
        ),
    )
    info, _, _ = execute(path)
    assert (info.status, info.destination.rows_written) == ("succeeded", 3000)
    table = pl.read_delta(target(tmp_path))
    assert table.group_by("status").len().sort("status").rows() == [("new", 1000), ("paid", 1000), ("sent", 1000)]
    types = {field.name: str(field.type) for field in DeltaTable(target(tmp_path)).schema().fields}
    assert (types["status"], types["size"], types["unknown"]) == ('PrimitiveType("string")',) * 2 + (
        'PrimitiveType("void")',
    )
    assert table["size"].value_counts().sort("size").rows() == [("L", 1000), ("M", 1000), ("S", 1000)]


def test_a_full_load_the_transforms_filter_to_nothing_writes_nothing(tmp_path: Path) -> None:
    path = metadata(tmp_path)
    document = json.loads(path.read_text())
    document["dataflows"][0]["transform"] = {"filter_expression": "order_id < 0"}
    path.write_text(json.dumps(document))
    land(tmp_path, "a", pl.DataFrame({"order_id": [1, 2, 3]}))
    info, _, _ = execute(path)
    assert (info.status, info.source.rows_read, info.transform.rows_out) == ("succeeded", 3, 0)
    assert not (tmp_path / "lake" / "silver" / "orders").exists()


def test_a_full_load_of_empty_files_is_skipped(tmp_path: Path) -> None:
    path = metadata(tmp_path)
    land(tmp_path, "a", pl.DataFrame({"order_id": []}, schema={"order_id": pl.Int64}))
    info, _, _ = execute(path)
    assert (info.status, info.skip_reason) == ("skipped", "no new source rows")
    assert not (tmp_path / "lake" / "silver" / "orders").exists()


def test_a_value_failing_a_cast_mid_stream_is_a_transform_error_and_writes_nothing(tmp_path: Path) -> None:
    path = metadata(tmp_path, watermark_columns=["n"])
    document = json.loads(path.read_text())
    document["dataflows"][0]["transform"] = {"schema_hints": [{"column_name": "code", "data_type": "INT"}]}
    path.write_text(json.dumps(document))
    land(tmp_path, "a", pl.DataFrame({"n": [1, 2], "code": ["1", "not a number"]}))
    info, watermarks, dataflow_id = execute(path)
    assert (info.status, info.error_type) == ("failed", "TransformError")
    assert not (tmp_path / "lake" / "silver" / "orders" / "_delta_log").exists()
    assert watermarks.get_watermark(dataflow_id) is None


def test_the_windows_a_streamed_write_touched_are_counted_over_every_batch(tmp_path: Path) -> None:
    path = metadata(tmp_path, watermark_columns=["updated_at"])
    rows = 300_000  # several streaming batches
    stamps = pl.datetime_range(T0, T0 + timedelta(days=9), interval="1s", eager=True, time_zone="UTC")[:rows]
    land(tmp_path, "a", pl.DataFrame({"order_id": range(rows), "updated_at": stamps, "n": [None, *range(rows - 1)]}))
    provider = FileProvider(path)
    (dataflow,) = provider.get_dataflows()
    spec = WindowSpec(column="updated_at", every="1d")
    config = DataCoolieRunConfig(touched_windows={str(dataflow.dataflow_id): spec})
    info, _, _ = execute(path, run_config=config)
    assert info.status == "succeeded", info.error_message
    days = stamps.dt.replace_time_zone(None).dt.truncate("1d").alias("day").value_counts(sort=False).sort("day")
    touched = info.destination.touched
    assert touched is not None
    assert (touched.starts, touched.rows, touched.null_rows) == (
        days["day"].to_list(),
        days["count"].to_list(),
        0,
    )


def test_a_retried_attempt_whose_commit_already_landed_writes_nothing_again(tmp_path: Path) -> None:
    path = metadata(tmp_path, watermark_columns=["n"])
    land(tmp_path, "a", pl.DataFrame({"order_id": [1, 2, 3], "n": [10, 20, 30]}))
    provider = FileProvider(path)
    (dataflow,) = provider.get_dataflows()
    watermarks = WatermarkManager(provider)
    journal = CommitJournal(provider, watermarks)
    state = check_state(dataflow, watermarks, journal)
    run = DataflowRun(watermarks=watermarks, journal=journal, baseline=state.watermark, state=state)
    first = run_dataflow(dataflow, run)
    again = run_dataflow(dataflow, run)  # a retry of the same run: the same sequence, already committed
    assert (first.destination.rows_written, first.destination.recovered) == (3, False)
    assert (again.status, again.destination.recovered, again.destination.rows_written) == ("succeeded", True, 0)
    assert (again.source.rows_read, again.transform.rows_out) == (3, 3)
    assert pl.read_delta(target(tmp_path)).height == 3
    assert watermarks.get_watermark(str(dataflow.dataflow_id)) == {"n": 30}


@pytest.mark.parametrize(
    ("load_type", "size", "expected"),
    [("append", 10, True), ("overwrite", None, True), ("merge_upsert", 10, False), ("append", 2, False)],
    ids=["append", "overwrite-size-unknown", "merge-collects", "small-read-collects"],
)
def test_which_loads_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, load_type: str, size: int | None, expected: bool
) -> None:
    monkeypatch.setattr(dataflow_runner, "STREAM_FROM_BYTES", 5)
    path = metadata(tmp_path, watermark_columns=["n"], load_type=load_type)
    (dataflow,) = FileProvider(path).get_dataflows()
    scan = SourceScan(pl.LazyFrame(), dataflow.source, ReadRequest(), "label", {}, size_hint=size)
    assert streams(dataflow, scan) is expected


LINEAGE_AND_SYSTEM_TYPES = {
    "__file_name": "string",
    "__file_path": "string",
    "__file_modification_time": "timestamp",
    "__created_at": "timestamp",
    "__updated_at": "timestamp",
    "__updated_by": "string",
    "__dataflow_run_id": "string",
}
"""The Delta types DataCoolie (Spark) writes these columns with: plain strings and UTC timestamps."""


@pytest.mark.parametrize(
    ("load_type", "streamed"),
    [("append", True), ("append", False), ("merge_upsert", False)],
    ids=["append-streamed", "append-collected", "merge-collected"],
)
@pytest.mark.parametrize("source_format", ["parquet", "jsonl", "csv"])
def test_lineage_and_system_columns_keep_their_delta_types(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source_format: str, load_type: str, streamed: bool
) -> None:
    """However a load runs, the table's log declares the framework columns as Spark does, never as a
    dictionary/categorical or a view type, and every row holds its own file's name and path."""
    if not streamed:
        monkeypatch.setattr(dataflow_runner, "STREAM_FROM_BYTES", 2**62)
    options = {"read_options": {"header": "true"}} if source_format == "csv" else {}
    path = metadata(tmp_path, source_format=source_format, load_type=load_type)
    if options:
        document = json.loads(path.read_text())
        document["connections"][0]["configure"] |= options
        path.write_text(json.dumps(document))
    folder = tmp_path / "landing" / "sales" / "orders"
    folder.mkdir(parents=True)
    for name, ids in (("a", range(3)), ("b", range(3, 5))):
        frame = pl.DataFrame({"order_id": list(ids)})
        {"parquet": frame.write_parquet, "jsonl": frame.write_ndjson, "csv": frame.write_csv}[source_format](
            folder / f"{name}.{source_format}"
        )
    info, _, _ = execute(path)
    assert info.status == "succeeded", info.error_message
    logged = {f.name: f.type.type for f in DeltaTable(target(tmp_path)).schema().fields if f.name.startswith("__")}
    assert logged == LINEAGE_AND_SYSTEM_TYPES
    table = pl.read_delta(target(tmp_path)).sort("order_id")
    assert table["__file_name"].to_list() == [f"a.{source_format}"] * 3 + [f"b.{source_format}"] * 2
    assert table["__file_path"].to_list() == [str(folder / n) for n in table["__file_name"]]
    assert table["__dataflow_run_id"].unique().to_list() == [info.dataflow_run_id]
