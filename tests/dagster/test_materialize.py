"""Real ``dg.materialize`` runs over temporary lakes: the Delta tables are read back and compared."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
from deltalake import DeltaTable, write_deltalake
from polars.testing import assert_frame_equal

from datacoolie_dagster.location.checks import UNIQUE_KEYS
from tests.dagster.conftest import (
    ORDERS_CSV,
    PARTITIONS,
    dataflow,
    definitions,
    failure_message,
    key,
    land,
    land_csv,
    land_lineage,
    materialize,
    materialized,
    read_table,
)

UTC_US = pl.Datetime("us", "UTC")
ORDERS_SCHEMA = pl.Schema(
    {"order_id": pl.Int64(), "customer_id": pl.Int64(), "amount": pl.Float64(), "updated_at": UTC_US}
)
CSV_SCHEMA = pl.Schema({"order_id": pl.Int64(), "amount": pl.Decimal(12, 2), "order_ts": UTC_US})
RETURNS_CSV = "order_id,order_ts\n1,2024-01-06 09:00:00\n3,2024-02-07 09:00:00\n4,2024-03-08 09:00:00\n"


def delta_tables(root: Path) -> set[str]:
    return {str(p.parent.relative_to(root / "lake")) for p in (root / "lake").rglob("_delta_log")}


def rows_read(result: dg.ExecuteInProcessResult, asset: str) -> int:
    (event,) = [e for e in result.get_asset_materialization_events() if e.asset_key == key(asset)]
    return int(event.materialization.metadata["datacoolie/rows_read"].value)  # type: ignore[arg-type]


def test_incremental_runs_read_only_new_rows(lake: Path, instance: dg.DagsterInstance) -> None:
    defs = definitions(lake)

    # load 1 — initial: both extracts of the fan-in land in the one bronze table
    land_lineage(lake)
    first = materialize(defs, instance, ["bronze/sales/orders"])
    assert first.success
    assert materialized(first) == [("bronze/sales/orders", None)]
    assert rows_read(first, "bronze/sales/orders") == 3
    expected = pl.DataFrame(
        {
            "order_id": [1, 2, 3],
            "customer_id": [1, 2, 1],
            "amount": [10.0, 20.0, 5.0],
            "updated_at": [datetime(2024, 1, 5), datetime(2024, 2, 5), datetime(2024, 1, 7)],
        },
        schema=ORDERS_SCHEMA,
    )
    assert_frame_equal(read_table(lake, "lake/bronze/sales/orders", ["order_id"]), expected)

    # load 2 — a new EU extract: only its row is read and appended
    late = pl.DataFrame({"order_id": [4], "customer_id": [2], "amount": [7.5], "updated_at": [datetime(2024, 3, 1)]})
    land(lake, "sales/orders_eu", late, batch=2)
    second = materialize(defs, instance, ["bronze/sales/orders"])
    assert second.success
    assert rows_read(second, "bronze/sales/orders") == 1
    assert_frame_equal(
        read_table(lake, "lake/bronze/sales/orders", ["order_id"]), pl.concat([expected, late.cast(ORDERS_SCHEMA)])
    )

    # load 3 — nothing new: nothing is written; the materialization shows the table as it stands
    # and says so, with the same data version (the Delta version), so its readers stay in sync
    third = materialize(defs, instance, ["bronze/sales/orders"])
    assert third.success
    assert read_table(lake, "lake/bronze/sales/orders", ["order_id"]).height == 4
    (before,) = [e.materialization for e in second.get_asset_materialization_events()]
    (event,) = [e.materialization for e in third.get_asset_materialization_events()]
    version = DeltaTable(str(lake / "lake/bronze/sales/orders")).version()
    assert event.metadata["datacoolie/outcome"].value == "nothing written: no new source rows"
    assert (
        event.metadata["datacoolie/delta_version"].value == version == before.metadata["datacoolie/delta_version"].value
    )
    assert event.metadata["dagster/row_count"].value == 4
    assert "datacoolie/rows_inserted" not in event.metadata
    assert event.tags is not None
    assert before.tags is not None
    assert event.tags["dagster/data_version"] == before.tags["dagster/data_version"] == str(version)


def test_subset_selection_runs_only_the_selected_tables(lake: Path, instance: dg.DagsterInstance) -> None:
    land_lineage(lake)
    result = materialize(definitions(lake), instance, ["bronze/crm/customers"])
    assert result.success
    assert materialized(result) == [("bronze/crm/customers", None)]
    assert delta_tables(lake) == {"bronze/crm/customers"}


def test_downstream_reads_what_its_upstream_wrote_in_the_same_run(lake: Path, instance: dg.DagsterInstance) -> None:
    land_lineage(lake)
    result = materialize(definitions(lake), instance)  # every table: bronze, silver and gold in one step
    assert result.success
    assert [k for k, _ in materialized(result)] == sorted(
        [
            "bronze/crm/customers",
            "bronze/sales/orders",
            "gold/reporting/revenue_by_city",
            "silver/crm/customers",
            "silver/sales/orders",
        ]
    )
    revenue = pl.DataFrame({"city": ["Lyon", "Porto"], "revenue": [15.0, 20.0], "orders": [2, 1]})
    assert_frame_equal(read_table(lake, "lake/gold/reporting/revenue_by_city", ["city"]), revenue)


def test_one_partition_replays_exactly_its_window(lake: Path, instance: dg.DagsterInstance) -> None:
    land_csv(lake, "sales/orders", ORDERS_CSV)
    result = materialize(definitions(lake, PARTITIONS), instance, ["silver/sales/orders"], partition_key="2024-03")
    assert result.success
    assert materialized(result) == [("silver/sales/orders", "2024-03")]
    assert instance.get_materialized_partitions(key("silver/sales/orders")) == {"2024-03"}
    expected = pl.DataFrame(
        {"order_id": [4], "amount": [Decimal("7.25")], "order_ts": [datetime(2024, 3, 5, 10)]}, schema=CSV_SCHEMA
    )
    assert_frame_equal(read_table(lake, "lake/silver/sales/orders", ["order_id"]), expected)


def test_partition_range_in_one_run_keeps_the_chunks_before_a_failure(lake: Path, instance: dg.DagsterInstance) -> None:
    land_csv(lake, "sales/orders", ORDERS_CSV)  # February's amount breaks the decimal schema hint
    land_csv(lake, "sales/returns", RETURNS_CSV)
    # the tags a single-run backfill puts on its run: the body sees the whole range as partition_keys
    tags = {"dagster/asset_partition_range_start": "2024-01", "dagster/asset_partition_range_end": "2024-03"}
    result = materialize(
        definitions(lake, PARTITIONS), instance, ["silver/sales/orders", "silver/sales/returns"], tags=tags
    )

    assert not result.success
    assert "orders_monthly" in failure_message(result)
    assert "oops" in failure_message(result)
    # the chunk before the failure stays materialized; the failing and later ones do not
    assert instance.get_materialized_partitions(key("silver/sales/orders")) == {"2024-01"}
    # another table of the same run is unaffected
    assert instance.get_materialized_partitions(key("silver/sales/returns")) == {"2024-01", "2024-02", "2024-03"}
    expected = pl.DataFrame(
        {
            "order_id": [1, 2],
            "amount": [Decimal("10.50"), Decimal("4.00")],
            "order_ts": [datetime(2024, 1, 5, 10), datetime(2024, 1, 20, 8, 30)],
        },
        schema=CSV_SCHEMA,
    )
    assert_frame_equal(read_table(lake, "lake/silver/sales/orders", ["order_id"]), expected)


def test_a_failing_dataflow_fails_the_run_but_not_the_other_tables(lake: Path, instance: dg.DagsterInstance) -> None:
    land_lineage(lake)
    (lake / "lake" / "landing" / "crm" / "customers" / "batch_002.parquet").write_bytes(b"not a parquet file")
    selection = ["bronze/sales/orders", "silver/sales/orders", "bronze/crm/customers", "silver/crm/customers"]
    result = materialize(definitions(lake), instance, selection)

    assert not result.success
    assert materialized(result) == [("bronze/sales/orders", None), ("silver/sales/orders", None)]
    message = failure_message(result)
    assert "customers_to_bronze" in message
    assert "not run because an upstream table failed: silver/crm/customers" in message
    assert delta_tables(lake) == {"bronze/sales/orders", "silver/sales/orders"}


def test_unique_merge_keys_check_passes_after_a_merge_and_catches_duplicates(
    lake: Path, instance: dg.DagsterInstance
) -> None:
    defs = definitions(lake)
    land_lineage(lake)
    selection = ["bronze/sales/orders", "silver/sales/orders"]

    # load 1 — a merge_upsert leaves one row per key
    first = materialize(defs, instance, selection)
    checks = {(e.asset_key.to_user_string(), e.check_name): e.passed for e in first.get_asset_check_evaluations()}
    assert checks[("silver/sales/orders", UNIQUE_KEYS)] is True
    assert ("bronze/sales/orders", UNIQUE_KEYS) not in checks  # an append has no merge keys

    # load 2 — a duplicate slipped into the table behind the merge's back: the blocking check fails
    silver = str(lake / "lake" / "silver" / "sales" / "orders")
    write_deltalake(silver, pl.read_delta(silver).head(1).to_arrow(), mode="append")
    late = pl.DataFrame({"order_id": [4], "customer_id": [2], "amount": [7.5], "updated_at": [datetime(2024, 3, 1)]})
    land(lake, "sales/orders_eu", late, batch=2)
    second = materialize(defs, instance, selection)
    checks = {(e.asset_key.to_user_string(), e.check_name): e.passed for e in second.get_asset_check_evaluations()}
    assert checks[("silver/sales/orders", UNIQUE_KEYS)] is False
    assert not second.success
    assert UNIQUE_KEYS in failure_message(second)


def test_unique_merge_keys_check_resolves_merge_keys_spelled_as_raw_names(
    lake: Path, instance: dg.DagsterInstance
) -> None:
    def raw_keys(document: dict[str, Any]) -> None:
        silver = dataflow(document, "orders_to_silver")
        silver["destination"]["merge_keys"] = ["Order ID"]
        silver["transform"]["deduplicate_columns"] = ["Order ID"]

    defs = definitions(lake, edit=raw_keys)
    land_lineage(lake)

    result = materialize(defs, instance, ["bronze/sales/orders", "silver/sales/orders"])

    checks = {(e.asset_key.to_user_string(), e.check_name): e for e in result.get_asset_check_evaluations()}
    evaluation = checks[("silver/sales/orders", UNIQUE_KEYS)]
    assert evaluation.passed is True
    # the declared key, as the table spells it; the partition column the writer adds is reported apart
    assert evaluation.metadata["merge_keys"].value == ["order_id"]
    assert evaluation.metadata["partition_columns"].value == ["order_month"]
