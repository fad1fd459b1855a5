"""A stateless dataflow collects its read and its transforms as one query: same record, same errors.

The run of a dataflow without watermark columns whose transforms keep every row collects the read
together with the transforms (dataflow_runner._fuses). What it records (rows read, rows out, the
transformers applied) and the errors it raises (a read's SourceError, a transform's TransformError,
each with its own message) are those of collecting the read first, then the transforms.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from datacoolie_core import FileProvider
from datacoolie_core.models.runtime import DataFlowRuntimeInfo
from datacoolie_core.orchestration import dataflow_runner
from datacoolie_core.orchestration.dataflow_runner import DataflowRun, run_dataflow
from tests.core.orchestration.driver_support import Lake


def metadata(tmp_path: Path, **transform: Any) -> Path:
    """One dataflow: ``landing/sales/orders`` (parquet) -> ``lake/silver/orders``, with ``transform``."""
    source = {"connection_name": "landing", "schema_name": "sales", "table": "orders"}
    lake = Lake(tmp_path).add("orders", source=source, transform=transform, destination={"schema_name": "silver"})
    return lake.write()


def land(tmp_path: Path, frame: pl.DataFrame, name: str = "a") -> Path:
    folder = tmp_path / "landing" / "sales" / "orders"
    folder.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(folder / f"{name}.parquet", compression="uncompressed", statistics=False)
    return folder / f"{name}.parquet"


def execute(path: Path) -> DataFlowRuntimeInfo:
    (dataflow,) = FileProvider(path).get_dataflows()
    return run_dataflow(dataflow, DataflowRun())


def two_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run as before fusing: the read collected, then the transforms."""
    monkeypatch.setattr(dataflow_runner, "_fuses", lambda dataflow, run: False)


def orders(count: int) -> pl.DataFrame:
    return pl.DataFrame({"order_id": list(range(count)), "code": [str(i) for i in range(count)]})


def record(info: DataFlowRuntimeInfo) -> tuple[Any, ...]:
    return (
        info.status,
        info.source.rows_read,
        info.transform.rows_out,
        info.transform.transformers_applied,
        info.destination.rows_written,
        info.error_type,
        info.error_message,
    )


def test_a_stateless_read_is_fused_and_records_what_two_steps_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    land(tmp_path, orders(5))
    path = metadata(tmp_path, schema_hints=[{"column_name": "code", "data_type": "int"}])
    (dataflow,) = FileProvider(path).get_dataflows()
    assert dataflow_runner._fuses(dataflow, DataflowRun())

    with monkeypatch.context() as patched:  # one collect: the read is never collected on its own
        patched.setattr(dataflow_runner, "collect_scan", lambda scan: pytest.fail("the read was collected apart"))
        fused = execute(path)
    two_steps(monkeypatch)
    (tmp_path / "second").mkdir()
    land(tmp_path / "second", orders(5))
    stepped = execute(metadata(tmp_path / "second", schema_hints=[{"column_name": "code", "data_type": "int"}]))

    assert record(fused) == record(stepped)
    assert record(fused)[:3] == ("succeeded", 5, 5)
    assert "SchemaConverter(1 casts)" in fused.transform.transformers_applied
    written = pl.read_delta(str(tmp_path / "lake" / "silver" / "orders"))
    assert (
        written.drop(pl.selectors.starts_with("__"))
        .sort("order_id")
        .equals(
            pl.DataFrame(
                {"order_id": list(range(5)), "code": list(range(5))}, schema={"order_id": pl.Int64, "code": pl.Int32}
            )
        )
    )


def test_a_transform_failing_on_the_data_raises_its_own_error_with_the_rows_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    land(tmp_path, pl.DataFrame({"order_id": [1, 2], "code": ["7", "not a number"]}))
    path = metadata(tmp_path, schema_hints=[{"column_name": "code", "data_type": "int"}])

    fused = execute(path)
    two_steps(monkeypatch)
    stepped = execute(path)

    assert record(fused) == record(stepped)
    assert (fused.status, fused.error_type, fused.source.rows_read) == ("failed", "TransformError", 2)
    assert fused.error_message.startswith("dataflow 'orders': the transforms failed on the data:")
    assert "not a number" in fused.error_message
    assert not (tmp_path / "lake" / "silver" / "orders").exists()


def test_a_read_failing_on_the_data_raises_the_reads_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = land(tmp_path, pl.DataFrame({"order_id": list(range(1000)), "code": ["x" * 20] * 1000}))
    data = bytearray(file.read_bytes())
    data[4:64] = b"\xff" * 60  # the first page header, not the footer: planning reads the schema fine
    file.write_bytes(bytes(data))
    path = metadata(tmp_path)

    fused = execute(path)
    two_steps(monkeypatch)
    stepped = execute(path)

    assert record(fused) == record(stepped)
    assert (fused.status, fused.error_type) == ("failed", "SourceError")
    assert "reading failed" in fused.error_message


def test_an_empty_read_is_skipped(tmp_path: Path) -> None:
    land(tmp_path, orders(0))

    info = execute(metadata(tmp_path))

    assert (info.status, info.skip_reason, info.transform.transformers_applied) == (
        "skipped",
        "no new source rows",
        [],
    )
    assert not (tmp_path / "lake" / "silver" / "orders").exists()


def test_a_row_filter_is_not_fused_and_counts_the_rows_read_before_it(tmp_path: Path) -> None:
    land(tmp_path, orders(5))
    path = metadata(tmp_path, filter_expression="order_id >= 3")
    (dataflow,) = FileProvider(path).get_dataflows()

    info = execute(path)

    assert not dataflow_runner._fuses(dataflow, DataflowRun())
    assert (info.status, info.source.rows_read, info.transform.rows_out, info.destination.rows_written) == (
        "succeeded",
        5,
        2,
        2,
    )


def test_a_watermarked_read_is_not_fused(tmp_path: Path) -> None:
    land(tmp_path, orders(3))
    path = metadata(tmp_path)
    document = json.loads(path.read_text())
    document["dataflows"][0]["source"]["watermark_columns"] = ["order_id"]
    path.write_text(json.dumps(document))
    (dataflow,) = FileProvider(path).get_dataflows()

    assert not dataflow_runner._fuses(dataflow, DataflowRun())
