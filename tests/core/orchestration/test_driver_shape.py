"""Shape errors are errors: a source (file) lacking a watermark column, a merge key or a hinted column
fails THAT dataflow, naming the file, the expected and the found columns; nothing is written, its
watermark does not move, and the other dataflows of the run go on."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from datacoolie_core import DataCoolieRunConfig
from datacoolie_core.models.runtime import DataFlowRuntimeInfo
from datacoolie_core.orchestration.driver import DataCoolieDriver
from tests.core.orchestration.driver_support import Lake, function_source

HEADER = "Order ID,Unit Price (€),customerName,Order Date\n"
FIRST = HEADER + "1,2.50,ann,2025-01-01\n2,3.50,bob,2025-01-02\n"
HINTS = [{"column_name": "Unit Price (€)", "data_type": "decimal(10,2)"}]


def shaped_lake(root: Path, *, transform: dict[str, Any] | None = None, **orders: Any) -> Lake:
    """``orders``: CSV folder -> merge on ``Order ID``, incremental on ``Order Date``; ``other``: always loads."""
    lake = Lake(root)
    lake.connections.append(
        {
            "name": "files",
            "format": "csv",
            "configure": {
                "base_path": str(root / "landing"),
                "read_options": {"header": "true", "inferSchema": "true"},
            },
        }
    )
    source = {"connection_name": "files", "table": "orders", "watermark_columns": ["Order Date"]}
    destination = {"load_type": "merge_upsert", "merge_keys": ["Order ID"]}
    lake.add(
        "orders",
        source=source | orders.pop("source", {}),
        destination=destination | orders.pop("destination", {}),
        transform={"schema_hints": HINTS} | (transform or {}),
    )
    lake.add("other", source=function_source("orders"))
    lake.write()
    return lake


def land(lake: Lake, name: str, text: str) -> Path:
    folder = lake.root / "landing" / "orders"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def run(lake: Lake, **config: Any) -> dict[str, DataFlowRuntimeInfo]:
    with DataCoolieDriver(
        metadata_base_path=lake.metadata_path, config=DataCoolieRunConfig(retry_delay=0, **config)
    ) as driver:
        return {r.dataflow_name: r for r in driver.run().runtimes}


def version(lake: Lake) -> int:
    return DeltaTable(str(lake.root / "lake" / "orders")).version()


def watermark_files(lake: Lake) -> dict[str, bytes]:
    folder = lake.metadata_path.parent / "watermarks"
    return {p.parent.name: p.read_bytes() for p in folder.glob("*/watermark_value.json")}


def failed(runtime: DataFlowRuntimeInfo) -> str:
    assert runtime.status == "failed"
    assert runtime.error_type == "SourceShapeError"
    return runtime.error_message or ""


def test_a_file_without_the_watermark_column_fails_instead_of_being_skipped_forever(tmp_path: Path) -> None:
    lake = shaped_lake(tmp_path)
    land(lake, "a.csv", FIRST)
    # load 1 — both dataflows load
    assert {name: r.status for name, r in run(lake).items()} == {"orders": "succeeded", "other": "succeeded"}
    before, stored = version(lake), watermark_files(lake)

    # load 2 — a file whose header lacks Order Date: its rows would have a null watermark and never load
    odd = land(lake, "b.csv", "Order ID,Unit Price (€),customerName\n3,4.50,cy\n")
    runtimes = run(lake)

    message = failed(runtimes["orders"])
    assert f"1 of 2 file(s) lack expected columns: file '{odd}' lacks 'Order Date' (source.watermark_columns" in message
    assert "(its columns: Order ID, Unit Price (€), customerName)" in message
    assert runtimes["other"].status == "succeeded"
    assert version(lake) == before
    assert watermark_files(lake) == stored

    # load 3 — the file fixed: its row loads, nothing was lost
    land(lake, "b.csv", HEADER + "3,4.50,cy,2025-01-03\n")
    assert run(lake)["orders"].status == "succeeded"
    assert lake.table("orders", sort="order_id")["order_id"].to_list() == [1, 2, 3]


def test_a_file_with_a_wrong_header_is_not_merged_as_a_null_key_row(tmp_path: Path) -> None:
    lake = shaped_lake(tmp_path, source={"watermark_columns": []})
    land(lake, "a.csv", FIRST)
    run(lake)
    before, stored = version(lake), watermark_files(lake)

    odd = land(lake, "b.csv", "foo,bar\n1,2\n")
    runtimes = run(lake)

    message = failed(runtimes["orders"])
    assert (
        f"file '{odd}' lacks 'Order ID' (destination.merge_keys), 'Unit Price (€)' (transform.schema_hints) "
        "(its columns: foo, bar); nothing was loaded" in message
    )
    assert runtimes["other"].status == "succeeded"
    assert version(lake) == before
    assert watermark_files(lake) == stored
    assert lake.table("orders", sort="order_id").columns[:4] == ["order_id", "unit_price", "customername", "order_date"]


def test_a_source_without_a_hinted_column_fails_its_first_load_and_creates_nothing(tmp_path: Path) -> None:
    lake = shaped_lake(tmp_path)
    land(lake, "a.csv", "Order ID,Price,customerName,Order Date\n1,2.50,ann,2025-01-01\n")

    runtimes = run(lake, retry_count=2)

    message = failed(runtimes["orders"])
    assert (
        "lacks 'Unit Price (€)' (transform.schema_hints) (its columns: Order ID, Price, customerName, Order Date)"
        in (message)
    )
    assert runtimes["orders"].retry_attempts == 0  # the same file fails the same way: not retried
    assert runtimes["other"].status == "succeeded"
    assert not lake.has_table("orders")
    assert watermark_files(lake) == {}  # "other" keeps no watermark; "orders" saved none


def test_missing_hinted_columns_only_warn_with_the_ignore_policy(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lake = shaped_lake(tmp_path, transform={"configure": {"missing_column_policy": "ignore"}})
    land(lake, "a.csv", "Order ID,Price,customerName,Order Date\n1,2.50,ann,2025-01-01\n")

    assert run(lake)["orders"].status == "succeeded"
    assert "1 active schema-hint column(s) not found and skipped: ['Unit Price (€)']" in caplog.text


def test_a_file_sharing_no_column_with_the_others_fails_even_without_required_columns(tmp_path: Path) -> None:
    lake = shaped_lake(
        tmp_path, source={"watermark_columns": []}, destination={"load_type": "append", "merge_keys": []}
    )
    lake.dataflows[0]["transform"] = {}
    lake.write()
    land(lake, "a.csv", FIRST)
    odd = land(lake, "b.csv", "3,4.50,cy,2025-01-03\n")  # no header line: its first row became the names

    runtimes = run(lake)

    message = failed(runtimes["orders"])
    assert f"file '{odd}' shares no column with file '{tmp_path / 'landing' / 'orders' / 'a.csv'}'" in message
    assert "its columns: 3, 4.50, cy, 2025-01-03; its header is missing or wrong" in message
    assert runtimes["other"].status == "succeeded"
    assert not lake.has_table("orders")


def test_files_whose_headers_differ_only_in_order_are_read_by_name(tmp_path: Path) -> None:
    lake = shaped_lake(tmp_path)
    land(lake, "a.csv", FIRST)
    land(lake, "b.csv", "Order Date,customerName,Unit Price (€),Order ID\n2025-01-03,cy,4.50,3\n")

    assert run(lake)["orders"].status == "succeeded"
    assert lake.table("orders", sort="order_id").select("order_id", "customername", "order_date").rows() == [
        (1, "ann", date(2025, 1, 1)), (2, "bob", date(2025, 1, 2)), (3, "cy", date(2025, 1, 3)),
    ]  # fmt: skip


def test_a_function_source_without_the_merge_key_fails_naming_the_source(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.add(
        "keyed",
        source=function_source("orders"),
        destination={"load_type": "merge_upsert", "merge_keys": ["Order Number"]},
    )
    lake.add("other", source=function_source("orders"))
    lake.write()

    runtimes = run(lake)

    message = failed(runtimes["keyed"])
    assert message.startswith("source 'tests.core.orchestration.driver_support.orders' (connection 'fn'): ")
    assert "the source lacks 'Order Number' (destination.merge_keys); " in message
    assert "found columns: order_id, amount, updated_at" in message
    assert runtimes["other"].status == "succeeded"
    assert not lake.has_table("keyed")
