"""Raw source names in metadata, end to end: every metadata key that names a column accepts the
source's spelling (``Order ID``, ``Unit Price (€)``, ``customerName``) and the sanitized one
(``order_id``), with sanitizing on, on real Delta tables written by the real driver from a CSV folder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from deltalake import DeltaTable

from datacoolie_core import DataCoolieRunConfig, ReplayConfig
from datacoolie_core.columns import TRAILING_COLUMNS
from datacoolie_core.models.runtime import DataFlowRuntimeInfo
from datacoolie_core.orchestration.driver import DataCoolieDriver
from tests.core.orchestration.driver_support import Lake

HEADER = "Order ID,Unit Price (€),customerName,Order Date,Region\n"
FIRST = HEADER + "1,2.50,ann,2025-01-01,EU\n2,3.50,bob,2025-01-02,US\n3,4.50,ann,2025-01-03,EU\n"
SANITIZED = ["order_id", "unit_price", "customername", "order_date", "region"]


@dataclass(frozen=True)
class Spelling:
    """How a test's metadata spells the source columns."""

    id: str
    price: str
    customer: str
    date: str
    region: str
    date_sql: str
    """The date column inside SQL (a raw name with a space needs backticks, as in Spark)."""


RAW = Spelling("Order ID", "Unit Price (€)", "customerName", "Order Date", "Region", "`Order Date`")
CLEAN = Spelling("order_id", "unit_price", "customername", "order_date", "region", "order_date")
SPELLINGS = pytest.mark.parametrize("s", [RAW, CLEAN], ids=["raw", "sanitized"])


def csv_lake(root: Path) -> Lake:
    lake = Lake(root)
    lake.connections = [
        {
            "name": "files",
            "format": "csv",
            "configure": {
                "base_path": str(root / "landing"),
                "read_options": {"header": "true", "inferSchema": "true"},
            },
        },
        {"name": "lake", "format": "delta", "configure": {"base_path": str(root / "lake")}},
    ]
    land(lake, "a.csv", FIRST)
    return lake


def land(lake: Lake, name: str, text: str) -> None:
    folder = lake.root / "landing" / "orders"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")


def add_orders(lake: Lake, source: dict[str, Any] | None = None, **blocks: Any) -> Lake:
    lake.add("orders", source={"connection_name": "files", "table": "orders", **(source or {})}, **blocks)
    lake.write()
    return lake


def run(lake: Lake, mode: str = "lower") -> DataFlowRuntimeInfo:
    config = DataCoolieRunConfig(retry_delay=0, column_name_mode=mode)  # type: ignore[arg-type]
    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=config) as driver:
        (runtime,) = driver.run().runtimes
    assert runtime.status == "succeeded", runtime.error_message
    return runtime


def table(lake: Lake) -> pl.DataFrame:
    return pl.read_delta(str(lake.root / "lake" / "orders")).sort("order_id")


def business(frame: pl.DataFrame) -> list[str]:
    return [c for c in frame.columns if c not in TRAILING_COLUMNS]


def stored_watermark(lake: Lake) -> dict[str, Any]:
    (path,) = (lake.metadata_path.parent / "watermarks").glob("*/watermark_value.json")
    return dict(json.loads(path.read_text(encoding="utf-8")))


# --- one test per metadata key that names a column -------------------------------------------


@SPELLINGS
def test_merge_keys(tmp_path: Path, s: Spelling) -> None:
    lake = add_orders(
        csv_lake(tmp_path),
        source={"watermark_columns": [s.date]},
        destination={"load_type": "merge_upsert", "merge_keys": [s.id]},
    )
    # load 1 — initial: the table is created with sanitized names
    run(lake)
    assert business(table(lake)) == SANITIZED

    # load 2 — order 1 changes: merged on order_id, not appended
    land(lake, "b.csv", HEADER + "1,9.99,ann,2025-01-05,EU\n")
    run(lake)
    assert table(lake).select("order_id", "unit_price").rows() == [(1, 9.99), (2, 3.5), (3, 4.5)]


@SPELLINGS
def test_watermark_columns(tmp_path: Path, s: Spelling) -> None:
    lake = add_orders(csv_lake(tmp_path), source={"watermark_columns": [s.date]})
    # load 1 — everything
    assert run(lake).source.rows_read == 3
    assert stored_watermark(lake) == {s.date: {"__date__": "2025-01-03"}}

    # load 2 — only the row after the stored watermark; the old one stays out
    land(lake, "b.csv", HEADER + "4,1.00,cy,2025-01-04,EU\n5,1.00,dee,2024-12-31,EU\n")
    assert run(lake).source.rows_read == 1
    assert table(lake)["order_id"].to_list() == [1, 2, 3, 4]
    assert stored_watermark(lake) == {s.date: {"__date__": "2025-01-04"}}


@SPELLINGS
def test_schema_hints(tmp_path: Path, s: Spelling) -> None:
    hints = [{"column_name": s.price, "data_type": "decimal(10,2)"}, {"column_name": s.date, "data_type": "date"}]
    lake = add_orders(csv_lake(tmp_path), transform={"schema_hints": hints})
    run(lake)
    written = table(lake)
    assert (written.schema["unit_price"], written.schema["order_date"]) == (pl.Decimal(10, 2), pl.Date())
    assert written["unit_price"].to_list() == [Decimal("2.50"), Decimal("3.50"), Decimal("4.50")]


@SPELLINGS
def test_partition_columns(tmp_path: Path, s: Spelling) -> None:
    lake = add_orders(csv_lake(tmp_path), destination={"load_type": "overwrite", "partition_columns": [s.region]})
    run(lake)
    assert DeltaTable(str(tmp_path / "lake" / "orders")).metadata().partition_columns == ["region"]
    assert table(lake)["region"].to_list() == ["EU", "US", "EU"]


@SPELLINGS
def test_deduplicate_and_latest_data_columns(tmp_path: Path, s: Spelling) -> None:
    transform = {"deduplicate_columns": [s.customer], "latest_data_columns": [s.date]}
    lake = add_orders(csv_lake(tmp_path), transform=transform)
    run(lake)
    assert table(lake).select("order_id", "customername").rows() == [(2, "bob"), (3, "ann")]


@SPELLINGS
def test_value_rules_columns(tmp_path: Path, s: Spelling) -> None:
    rules = [{"operation": "case", "mode": "upper", "columns": [s.customer]}]
    lake = add_orders(csv_lake(tmp_path), transform={"value_rules": rules})
    run(lake)
    assert table(lake)["customername"].to_list() == ["ANN", "BOB", "ANN"]


@SPELLINGS
def test_masking_rules_columns(tmp_path: Path, s: Spelling) -> None:
    rules = [{"method": "partial", "columns": [s.customer], "keep_start": 1}]
    lake = add_orders(csv_lake(tmp_path), transform={"masking_rules": rules})
    run(lake)
    assert table(lake)["customername"].to_list() == ["a*", "b*", "a*"]


@SPELLINGS
def test_masking_a_merge_key_under_its_other_spelling_is_refused(tmp_path: Path, s: Spelling) -> None:
    other = CLEAN if s is RAW else RAW
    lake = add_orders(
        csv_lake(tmp_path),
        transform={"masking_rules": [{"method": "nullify", "columns": [other.id]}]},
        destination={"load_type": "merge_upsert", "merge_keys": [s.id]},
    )
    config = DataCoolieRunConfig(retry_delay=0)
    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=config) as driver:
        (runtime,) = driver.run().runtimes
    assert runtime.status == "failed"
    assert f"masks '{other.id}', which is a merge key" in (runtime.error_message or "")
    assert not lake.has_table("orders")


@SPELLINGS
def test_hash_columns_columns(tmp_path: Path, s: Spelling) -> None:
    hashes = [{"target_column": "customer_hash", "columns": [s.customer, s.id]}]
    lake = add_orders(csv_lake(tmp_path), transform={"hash_columns": hashes})
    run(lake)
    digests = table(lake)["customer_hash"].to_list()
    assert len(set(digests)) == 3
    assert all(len(d) == 64 for d in digests)


@SPELLINGS
def test_select_columns(tmp_path: Path, s: Spelling) -> None:
    lake = add_orders(csv_lake(tmp_path), transform={"select_columns": [s.id, s.customer]})
    run(lake)
    assert business(table(lake)) == ["order_id", "customername"]


@SPELLINGS
def test_drop_columns(tmp_path: Path, s: Spelling) -> None:
    lake = add_orders(csv_lake(tmp_path), transform={"drop_columns": [s.price, s.region]})
    run(lake)
    assert business(table(lake)) == ["order_id", "customername", "order_date"]


@SPELLINGS
def test_rename_columns(tmp_path: Path, s: Spelling) -> None:
    lake = add_orders(csv_lake(tmp_path), transform={"rename_columns": {s.customer: "Buyer Name"}})
    run(lake)
    assert business(table(lake)) == ["order_id", "unit_price", "buyer_name", "order_date", "region"]


@SPELLINGS
def test_additional_columns_target_replaces_the_column_it_names(tmp_path: Path, s: Spelling) -> None:
    computed = [{"column": s.price, "expression": "`Unit Price (€)` * 2"}]
    lake = add_orders(csv_lake(tmp_path), transform={"additional_columns": computed})
    run(lake)  # no "duplicate column names" from the sanitizer: the entry replaced the column in place
    assert table(lake)["unit_price"].to_list() == [5.0, 7.0, 9.0]


@SPELLINGS
def test_scd2_effective_column(tmp_path: Path, s: Spelling) -> None:
    destination = {"load_type": "scd2", "merge_keys": [s.id], "configure": {"scd2_effective_column": s.date_sql}}
    lake = add_orders(csv_lake(tmp_path), source={"watermark_columns": [s.date]}, destination=destination)
    # load 1 — initial: every row current from its order date
    run(lake)
    assert table(lake).select("order_id", "__valid_from", "__is_current").rows() == [
        (1, date(2025, 1, 1), True), (2, date(2025, 1, 2), True), (3, date(2025, 1, 3), True),
    ]  # fmt: skip

    # load 2 — a new version of order 1 closes the old one
    land(lake, "b.csv", HEADER + "1,9.99,ann,2025-01-05,EU\n")
    run(lake)
    versions = table(lake).filter(pl.col("order_id") == 1).sort("__valid_from")
    assert versions.select("__valid_from", "__valid_to", "__is_current").rows() == [
        (date(2025, 1, 1), date(2025, 1, 5), False), (date(2025, 1, 5), None, True),
    ]  # fmt: skip


@SPELLINGS
def test_replay_chunk_column(tmp_path: Path, s: Spelling) -> None:
    lake = add_orders(csv_lake(tmp_path), source={"watermark_columns": ["Order Date"]})
    replay = ReplayConfig(start="2025-01-02", end="2025-01-03", chunk_column=s.date)
    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=DataCoolieRunConfig(retry_delay=0)) as driver:
        result = driver.run_replay(driver.load_dataflows(), replay)
    assert result.succeeded == 1, [r.error_message for r in result.runtimes]
    assert table(lake)["order_id"].to_list() == [2]


@SPELLINGS
def test_replace_by_watermark_window_columns(tmp_path: Path, s: Spelling) -> None:
    destination = {"load_type": "merge_overwrite", "merge_keys": [s.id], "configure": {"replace_by_watermark": True}}
    source = {"watermark_columns": [s.date], "configure": {"backward": {"days": 1}}}
    lake = add_orders(csv_lake(tmp_path), source=source, destination=destination)
    # load 1 — initial
    run(lake)
    # load 2 — re-reads from 2025-01-02 (one day back); order 3 left the source, order 4 arrived:
    # the target rows in (2025-01-02, 2025-01-04] are replaced by what was read
    (tmp_path / "landing" / "orders" / "a.csv").write_text(
        HEADER + "1,2.50,ann,2025-01-01,EU\n2,3.50,bob,2025-01-02,US\n4,5.50,cy,2025-01-04,US\n", encoding="utf-8"
    )
    run(lake)
    assert table(lake)["order_id"].to_list() == [1, 2, 4]


def test_snake_mode_resolves_camel_case_names_both_ways(tmp_path: Path) -> None:
    for spelling, name in (("customerName", "camel"), ("customer_name", "snake")):
        lake = add_orders(
            csv_lake(tmp_path / name),
            transform={"deduplicate_columns": [spelling], "latest_data_columns": ["Order Date"]},
            destination={"load_type": "merge_upsert", "merge_keys": [spelling]},
        )
        run(lake, mode="snake")
        written = pl.read_delta(str(tmp_path / name / "lake" / "orders")).sort("customer_name")
        assert business(written) == ["order_id", "unit_price", "customer_name", "order_date", "region"]
        assert written.select("customer_name", "order_id").rows() == [("ann", 3), ("bob", 2)]


# --- the stored watermark's key ----------------------------------------------------------------


def test_a_watermark_saved_under_one_spelling_still_reads_after_metadata_switches(tmp_path: Path) -> None:
    lake = add_orders(csv_lake(tmp_path), source={"watermark_columns": ["Order Date"]})
    # load 1 — saved under the raw spelling
    run(lake)
    assert stored_watermark(lake) == {"Order Date": {"__date__": "2025-01-03"}}

    # load 2 — metadata now says order_date: the stored value still bounds the read (no reload),
    # and the key keeps its first spelling
    lake.dataflows[0]["source"]["watermark_columns"] = ["order_date"]
    lake.write()
    land(lake, "b.csv", HEADER + "4,1.00,cy,2025-01-04,EU\n")
    assert run(lake).source.rows_read == 1
    assert stored_watermark(lake) == {"Order Date": {"__date__": "2025-01-04"}}
    assert table(lake)["order_id"].to_list() == [1, 2, 3, 4]


def test_two_stored_keys_for_one_column_fail_the_dataflow_instead_of_guessing(tmp_path: Path) -> None:
    lake = add_orders(csv_lake(tmp_path), source={"watermark_columns": ["order_date"]})
    run(lake)
    (path,) = (lake.metadata_path.parent / "watermarks").glob("*/watermark_value.json")
    path.write_text(json.dumps({"Order Date": "2025-01-01", "order date": "2025-01-03"}), encoding="utf-8")
    version = DeltaTable(str(tmp_path / "lake" / "orders")).version()

    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=DataCoolieRunConfig(retry_delay=0)) as driver:
        (runtime,) = driver.run().runtimes

    assert runtime.status == "failed"
    assert "the stored watermark has several keys for watermark column 'order_date'" in (runtime.error_message or "")
    assert "delete the others from the watermark file" in (runtime.error_message or "")
    assert DeltaTable(str(tmp_path / "lake" / "orders")).version() == version
