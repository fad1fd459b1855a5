"""Downstream reads: user-written Polars assets read DataCoolie tables through ``DataCoolieIOManager``.

Real runs on a real instance; every frame a user asset receives is compared row for row with the
Delta table read by deltalake itself (not by polars' Delta scan, which the IO manager uses).
"""

# no `from __future__ import annotations`: Dagster reads the assets' context and input annotations at runtime

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest
from dagster_deltalake import DeltaTableResource
from deltalake import DeltaTable, write_deltalake
from polars.testing import assert_frame_equal

from datacoolie_dagster import build_definitions
from datacoolie_dagster.location.io_manager import IO_MANAGER_KEY, delta_table_resources
from datacoolie_dagster.location.table_reads import merge_windows
from tests.dagster.conftest import key, land, materialized

pytestmark = pytest.mark.slow

BRONZE_ORDERS, SILVER_ORDERS = key("bronze/sales/orders"), key("silver/sales/orders")
EVENTS, EVENTS_BY_ID, CUSTOMERS = (
    key("silver/sales/events"),
    key("silver/sales/events_by_id"),
    key("silver/crm/customers"),
)
MONTHS = dg.MonthlyPartitionsDefinition(start_date="2024-01", end_date="2024-05", fmt="%Y-%m")
"""The user's own monthly partitions: the same months as the events table's replay partitions."""

METADATA: dict[str, Any] = {
    "connections": [
        {"name": "landing", "connection_type": "file", "format": "parquet", "configure": {"base_path": "./lake/landing"}},
        {"name": "bronze", "connection_type": "lakehouse", "format": "delta", "configure": {"base_path": "./lake/bronze"}},
        {"name": "silver", "connection_type": "lakehouse", "format": "delta", "configure": {"base_path": "./lake/silver"}},
    ],
    "dataflows": [
        {
            "name": "orders_to_bronze",
            "source": {"connection_name": "landing", "schema_name": "sales", "table": "orders", "watermark_columns": ["updated_at"]},
            "destination": {"connection_name": "bronze", "schema_name": "sales", "table": "orders", "load_type": "append"},
        },
        {
            "name": "orders_to_silver",
            "source": {"connection_name": "bronze", "schema_name": "sales", "table": "orders", "watermark_columns": ["updated_at"]},
            "destination": {"connection_name": "silver", "schema_name": "sales", "table": "orders",
                            "load_type": "merge_upsert", "merge_keys": ["order_id"]},
        },
        {
            "name": "events_monthly",
            "source": {"connection_name": "landing", "schema_name": "sales", "table": "events", "watermark_columns": ["event_ts"]},
            # Delta-partitioned by region: a partition's rows are found by event_ts, not by the file layout
            "destination": {"connection_name": "silver", "schema_name": "sales", "table": "events", "load_type": "append",
                            "partition_columns": [{"column": "region"}]},
            "configure": {"dagster": {"partitions": {"start": "2024-01-01", "end": "2024-05-01",
                                                     "chunk_interval": {"months": 1}, "chunk_column": "event_ts"}}},
        },
        {
            "name": "events_by_id",
            "source": {"connection_name": "landing", "schema_name": "sales", "table": "events", "watermark_columns": ["id"]},
            "destination": {"connection_name": "silver", "schema_name": "sales", "table": "events_by_id", "load_type": "append"},
            "configure": {"dagster": {"partitions": {"start": 0, "end": 400, "chunk_interval": {"step": 100}}}},
        },
        {
            "name": "customers_history",
            "source": {"connection_name": "landing", "schema_name": "crm", "table": "customers"},
            "destination": {"connection_name": "silver", "schema_name": "crm", "table": "customers", "load_type": "scd2",
                            "merge_keys": ["customer_id"], "configure": {"scd2_effective_column": "changed_at"}},
        },
    ],
}  # fmt: skip

EVENTS_DATA = pl.DataFrame(
    {
        "id": [5, 99, 100, 150, 199, 200, 250, 399],
        "region": ["eu", "us", "eu", "eu", "us", "us", "eu", "us"],
        "event_ts": [
            datetime(2024, 1, 1),  # the first instant of January
            datetime(2024, 1, 31, 23, 59, 59, 999999),  # the last of January
            datetime(2024, 2, 1),  # the first of February
            datetime(2024, 2, 29, 12),
            datetime(2024, 3, 1),
            datetime(2024, 3, 31, 23, 59, 59),
            datetime(2024, 4, 15),
            datetime(2024, 4, 30, 23),
        ],
    }
)


@pytest.fixture
def metadata(lake: Path) -> Path:
    target = lake / "metadata.json"
    target.write_text(json.dumps(METADATA), encoding="utf-8")
    return target


def delta(root: Path, path: str) -> pl.DataFrame:
    """The whole Delta table as deltalake reads it (the independent reference)."""
    return pl.from_arrow(DeltaTable(str(root / path)).to_pyarrow_table())  # type: ignore[return-value]


def same_rows(got: pl.DataFrame, expected: pl.DataFrame, by: str | list[str]) -> None:
    assert_frame_equal(got.sort(by), expected.select(got.columns).sort(by))


def with_user_assets(metadata: Path, *assets: dg.AssetsDefinition) -> dg.Definitions:
    """The documented one-liner: DataCoolie's definitions merged with the user's."""
    return dg.Definitions.merge(
        build_definitions(metadata, state_base_path=metadata.parent / "state"), dg.Definitions(assets=list(assets))
    )


def run(
    defs: dg.Definitions, instance: dg.DagsterInstance, selection: Sequence[dg.AssetKey | str], **kwargs: Any
) -> dg.ExecuteInProcessResult:
    result = dg.materialize(
        list(defs.assets or []),  # type: ignore[arg-type]
        resources=defs.resources,
        instance=instance,
        selection=[s if isinstance(s, dg.AssetKey) else dg.AssetKey(s) for s in selection],
        raise_on_error=False,
        **kwargs,
    )
    assert result.success, failure_text(result)
    return result


def failure_text(result: dg.ExecuteInProcessResult) -> str:
    """Every step failure's message with its causes (a load error is wrapped by Dagster's own)."""
    texts = []
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data.error is not None:
            error: Any = event.step_failure_data.error
            while error is not None:
                texts.append(error.message)
                error = error.cause
    return "\n".join(texts)


def land_events(root: Path) -> None:
    land(root, "sales/events", EVENTS_DATA)


# --- append and merge -----------------------------------------------------------------------------


def test_downstream_of_an_append_and_a_merge_reads_the_tables_row_for_row(
    metadata: Path, instance: dg.DagsterInstance
) -> None:
    seen: dict[str, Any] = {}

    @dg.asset(ins={"orders": dg.AssetIn(BRONZE_ORDERS)})
    def bronze_copy(orders: pl.LazyFrame) -> pl.DataFrame:
        seen["count"] = orders.select(pl.len()).collect().item()  # the stock manager's lazy count gave 0
        return orders.collect()

    @dg.asset(ins={"orders": dg.AssetIn(SILVER_ORDERS)})
    def silver_copy(orders: pl.DataFrame) -> pl.DataFrame:
        return orders

    @dg.asset(ins={"orders": dg.AssetIn(BRONZE_ORDERS, metadata={"version": 0, "columns": ["order_id", "amount"]})})
    def first_load(orders: pl.DataFrame) -> pl.DataFrame:
        return orders

    defs = with_user_assets(metadata, bronze_copy, silver_copy, first_load)
    root = metadata.parent
    # load 1 — two orders; DataCoolie's tables and the user's assets in one run
    land(root, "sales/orders", pl.DataFrame({"order_id": [1, 2], "amount": [10.0, 20.0],
                                             "updated_at": [datetime(2024, 1, 1), datetime(2024, 1, 2)]}), batch=1)  # fmt: skip
    result = run(defs, instance, [BRONZE_ORDERS, SILVER_ORDERS, "bronze_copy", "silver_copy"])
    same_rows(result.output_for_node("bronze_copy"), delta(root, "lake/bronze/sales/orders"), "order_id")
    same_rows(result.output_for_node("silver_copy"), delta(root, "lake/silver/sales/orders"), "order_id")
    assert seen["count"] == 2
    # load 2 — order 1 updated, order 3 new: bronze appends (4 rows), silver merges (3 rows)
    land(root, "sales/orders", pl.DataFrame({"order_id": [1, 3], "amount": [15.0, 30.0],
                                             "updated_at": [datetime(2024, 1, 3), datetime(2024, 1, 3)]}), batch=2)  # fmt: skip
    run(defs, instance, [BRONZE_ORDERS, SILVER_ORDERS])
    # the user's assets alone, in a run of their own: read from storage, not from the run
    result = run(defs, instance, ["bronze_copy", "silver_copy"])
    bronze, silver = result.output_for_node("bronze_copy"), result.output_for_node("silver_copy")
    same_rows(bronze, delta(root, "lake/bronze/sales/orders"), ["order_id", "updated_at"])
    same_rows(silver, delta(root, "lake/silver/sales/orders"), "order_id")
    assert seen["count"] == bronze.height == 4
    assert silver.sort("order_id")["amount"].to_list() == [15.0, 20.0, 30.0]
    # dagster-polars' input metadata: an older Delta version, some columns
    first = run(defs, instance, ["first_load"]).output_for_node("first_load")
    version_0 = pl.from_arrow(DeltaTable(str(root / "lake/bronze/sales/orders"), version=0).to_pyarrow_table())
    same_rows(first, version_0, "order_id")  # type: ignore[arg-type]
    assert first.columns == ["order_id", "amount"]
    assert first.height == 2


def test_our_tables_load_through_the_io_manager_and_are_never_stored_by_it(
    metadata: Path, instance: dg.DagsterInstance
) -> None:
    @dg.asset(ins={"orders": dg.AssetIn(BRONZE_ORDERS)})
    def order_count(orders: pl.LazyFrame) -> int:
        return int(orders.select(pl.len()).collect().item())

    defs = with_user_assets(metadata, order_count)
    assert defs.resolve_assets_def(BRONZE_ORDERS).get_io_manager_key_for_asset_key(BRONZE_ORDERS) == IO_MANAGER_KEY
    land(metadata.parent, "sales/orders", pl.DataFrame({"order_id": [1], "amount": [1.0], "updated_at": [datetime(2024, 1, 1)]}))  # fmt: skip
    result = run(defs, instance, [BRONZE_ORDERS, "order_count"])
    handled = {e.step_key for e in result.all_events if e.event_type == dg.DagsterEventType.HANDLED_OUTPUT}
    loaded = [e for e in result.all_events if e.event_type == dg.DagsterEventType.LOADED_INPUT]
    assert handled == {"order_count"}  # only the user's own output; DataCoolie wrote its table itself
    assert [e.event_specific_data.manager_key for e in loaded] == [IO_MANAGER_KEY]  # type: ignore[union-attr]
    assert result.output_for_node("order_count") == 1


def test_a_run_that_wrote_nothing_to_the_table_skips_the_downstream_asset(
    metadata: Path, instance: dg.DagsterInstance
) -> None:
    @dg.asset(ins={"orders": dg.AssetIn(BRONZE_ORDERS)})
    def order_count(orders: pl.LazyFrame) -> int:
        return int(orders.select(pl.len()).collect().item())

    defs = with_user_assets(metadata, order_count)
    land(metadata.parent, "sales/orders", pl.DataFrame({"order_id": [1], "amount": [1.0], "updated_at": [datetime(2024, 1, 1)]}))  # fmt: skip
    assert run(defs, instance, [BRONZE_ORDERS, "order_count"]).output_for_node("order_count") == 1
    # no new source rows: DataCoolie writes nothing, and Dagster skips what reads the table
    result = run(defs, instance, [BRONZE_ORDERS, "order_count"])
    assert [e.step_key for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_SKIPPED] == [
        "order_count"
    ]
    # the table is recorded as it stands (nothing written), the reader not at all
    assert materialized(result) == [("bronze/sales/orders", None)]
    (event,) = [e.materialization for e in result.get_asset_materialization_events()]
    assert event.metadata["datacoolie/outcome"].value == "nothing written: no new source rows"


# --- partitions -----------------------------------------------------------------------------------


def materialize_partitions(defs: dg.Definitions, instance: dg.DagsterInstance, table: dg.AssetKey) -> list[str]:
    keys = defs.resolve_assets_def(table).partitions_def.get_partition_keys()  # type: ignore[union-attr]
    for partition in keys:
        run(defs, instance, [table], partition_key=partition)
    return keys


def in_window(frame: pl.DataFrame, column: str, start: Any, end: Any) -> pl.DataFrame:
    return frame.filter((pl.col(column) >= start) & (pl.col(column) < end))


def add_row_outside_every_partition(root: Path) -> None:
    """A December row written outside DataCoolie: no month partition holds it, the table does."""
    table = delta(root, "lake/silver/sales/events").head(1)
    row = table.with_columns(pl.lit(1).alias("id"), pl.lit(datetime(2023, 12, 15, tzinfo=UTC)).alias("event_ts"))
    write_deltalake(str(root / "lake/silver/sales/events"), row.to_arrow(), mode="append", partition_by=["region"])


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def test_a_partition_reads_its_replay_window_on_the_window_column(metadata: Path, instance: dg.DagsterInstance) -> None:
    counts: dict[str, int] = {}

    @dg.asset(ins={"events": dg.AssetIn(EVENTS)}, partitions_def=MONTHS)
    def monthly_events(context: dg.AssetExecutionContext, events: pl.LazyFrame) -> pl.DataFrame:
        counts[context.partition_key] = events.select(pl.len()).collect().item()
        return events.collect()

    @dg.asset(ins={"events": dg.AssetIn(EVENTS)})
    def all_events(events: pl.DataFrame) -> pl.DataFrame:
        return events

    defs = with_user_assets(metadata, monthly_events, all_events)
    root = metadata.parent
    land_events(root)
    months = materialize_partitions(defs, instance, EVENTS)
    add_row_outside_every_partition(root)
    table = delta(root, "lake/silver/sales/events")
    assert table.height == 9
    bounds = {"2024-01": (utc(2024, 1, 1), utc(2024, 2, 1)), "2024-02": (utc(2024, 2, 1), utc(2024, 3, 1)),
              "2024-03": (utc(2024, 3, 1), utc(2024, 4, 1)), "2024-04": (utc(2024, 4, 1), utc(2024, 5, 1))}  # fmt: skip
    assert months == list(bounds)
    for month, (start, end) in bounds.items():
        got = run(defs, instance, ["monthly_events"], partition_key=month).output_for_node("monthly_events")
        expected = in_window(table, "event_ts", start, end)
        same_rows(got, expected, "id")
        assert counts[month] == expected.height == 2  # the boundary instants fall in exactly one month
    # an unpartitioned downstream reads the whole table, the row outside every partition included
    same_rows(run(defs, instance, ["all_events"]).output_for_node("all_events"), table, "id")


def test_a_downstream_partition_in_the_same_run_reads_the_partition_the_run_wrote(
    metadata: Path, instance: dg.DagsterInstance
) -> None:
    @dg.asset(ins={"events": dg.AssetIn(EVENTS)}, partitions_def=MONTHS)
    def monthly_events(events: pl.DataFrame) -> pl.DataFrame:
        return events

    defs = with_user_assets(metadata, monthly_events)
    land_events(metadata.parent)
    result = run(defs, instance, [EVENTS, "monthly_events"], partition_key="2024-02")
    skipped = [e.step_key for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_SKIPPED]
    assert skipped == []  # an AssetMaterialization alone is no step output: Dagster skipped the downstream step
    assert materialized(result) == [("monthly_events", "2024-02"), ("silver/sales/events", "2024-02")]
    table = delta(metadata.parent, "lake/silver/sales/events")
    assert table.height == 2  # the run wrote February only
    same_rows(result.output_for_node("monthly_events"), table, "id")


def test_a_range_of_partitions_and_a_coarser_partition_read_their_windows(
    metadata: Path, instance: dg.DagsterInstance
) -> None:
    seen: dict[str, pl.DataFrame] = {}

    # a range run stores no output with the default IO manager: the test keeps what the asset got
    @dg.asset(ins={"events": dg.AssetIn(EVENTS)}, partitions_def=MONTHS, backfill_policy=dg.BackfillPolicy.single_run())
    def months_range(events: pl.DataFrame) -> None:
        seen["range"] = events

    quarters = dg.TimeWindowPartitionsDefinition(
        start="2024-01-01", end="2024-07-01", cron_schedule="0 0 1 */3 *", fmt="%Y-%m-%d"
    )

    @dg.asset(ins={"events": dg.AssetIn(EVENTS)}, partitions_def=quarters)
    def quarterly_events(events: pl.DataFrame) -> pl.DataFrame:
        return events

    defs = with_user_assets(metadata, months_range, quarterly_events)
    root = metadata.parent
    land_events(root)
    materialize_partitions(defs, instance, EVENTS)
    add_row_outside_every_partition(root)
    table = delta(root, "lake/silver/sales/events")
    # a single run over February..March: one frame, both months' rows
    tags = {"dagster/asset_partition_range_start": "2024-02", "dagster/asset_partition_range_end": "2024-03"}
    run(defs, instance, ["months_range"], tags=tags)
    got = seen["range"]
    same_rows(got, in_window(table, "event_ts", utc(2024, 2, 1), utc(2024, 4, 1)), "id")
    assert got.height == 4
    # a quarter maps to three monthly partitions
    got = run(defs, instance, ["quarterly_events"], partition_key="2024-01-01").output_for_node("quarterly_events")
    same_rows(got, in_window(table, "event_ts", utc(2024, 1, 1), utc(2024, 4, 1)), "id")
    assert got.height == 6


def test_an_integer_step_partition_reads_its_id_range(metadata: Path, instance: dg.DagsterInstance) -> None:
    @dg.asset(ins={"events": dg.AssetIn(EVENTS_BY_ID)}, partitions_def=dg.StaticPartitionsDefinition(["0-100", "100-200", "200-300", "300-400"]))  # fmt: skip
    def events_in_step(events: pl.DataFrame) -> pl.DataFrame:
        return events

    defs = with_user_assets(metadata, events_in_step)
    root = metadata.parent
    land_events(root)
    steps = materialize_partitions(defs, instance, EVENTS_BY_ID)
    table = delta(root, "lake/silver/sales/events_by_id")
    assert steps == ["0-100", "100-200", "200-300", "300-400"]
    assert table.height == EVENTS_DATA.height
    for step, ids in {"0-100": [5, 99], "100-200": [100, 150, 199], "200-300": [200, 250], "300-400": [399]}.items():
        start, end = (int(b) for b in step.split("-"))
        got = run(defs, instance, ["events_in_step"], partition_key=step).output_for_node("events_in_step")
        same_rows(got, in_window(table, "id", start, end), "id")
        assert sorted(got["id"]) == ids


def test_a_partition_mapped_to_no_partition_of_the_table_reads_no_rows(
    metadata: Path, instance: dg.DagsterInstance
) -> None:
    later = dg.MonthlyPartitionsDefinition(start_date="2024-06", end_date="2024-08", fmt="%Y-%m")

    @dg.asset(
        ins={"events": dg.AssetIn(EVENTS, partition_mapping=dg.TimeWindowPartitionMapping(allow_nonexistent_upstream_partitions=True))},
        partitions_def=later,
    )  # fmt: skip
    def june(events: pl.DataFrame) -> int:
        return events.height

    defs = with_user_assets(metadata, june)
    land_events(metadata.parent)
    materialize_partitions(defs, instance, EVENTS)
    assert run(defs, instance, ["june"], partition_key="2024-06").output_for_node("june") == 0


# --- SCD2 -----------------------------------------------------------------------------------------


def test_scd2_reads_current_rows_by_default_and_the_history_on_request(
    metadata: Path, instance: dg.DagsterInstance
) -> None:
    @dg.asset(ins={"customers": dg.AssetIn(CUSTOMERS)})
    def current_customers(customers: pl.DataFrame) -> pl.DataFrame:
        return customers

    @dg.asset(ins={"customers": dg.AssetIn(CUSTOMERS, metadata={"datacoolie/history": True})})
    def customer_history(customers: pl.LazyFrame) -> pl.DataFrame:
        return customers.collect()

    defs = with_user_assets(metadata, current_customers, customer_history)
    root = metadata.parent
    # load 1 — two customers; load 2 — customer 1 moves
    land(root, "crm/customers", pl.DataFrame({"customer_id": [1, 2], "city": ["Lyon", "Porto"],
                                              "changed_at": [datetime(2024, 1, 1), datetime(2024, 1, 1)]}), batch=1)  # fmt: skip
    run(defs, instance, [CUSTOMERS])
    land(root, "crm/customers", pl.DataFrame({"customer_id": [1], "city": ["Paris"], "changed_at": [datetime(2024, 2, 1)]}), batch=2)  # fmt: skip
    result = run(defs, instance, [CUSTOMERS, "current_customers", "customer_history"])
    table = delta(root, "lake/silver/crm/customers")
    assert table.height == 3
    current = result.output_for_node("current_customers")
    same_rows(current, table.filter(pl.col("__is_current")), "customer_id")
    assert current.sort("customer_id")["city"].to_list() == ["Paris", "Porto"]
    same_rows(result.output_for_node("customer_history"), table, ["customer_id", "__valid_from"])


# --- errors ---------------------------------------------------------------------------------------


def test_a_table_not_materialized_yet_fails_naming_the_asset_and_the_fix(
    metadata: Path, instance: dg.DagsterInstance
) -> None:
    @dg.asset(ins={"orders": dg.AssetIn(SILVER_ORDERS)})
    def revenue(orders: pl.LazyFrame) -> float:
        return float(orders.select(pl.col("amount").sum()).collect().item())

    @dg.asset(ins={"orders": dg.AssetIn(SILVER_ORDERS)})
    def maybe_revenue(orders: pl.LazyFrame | None) -> bool:
        return orders is None

    defs = with_user_assets(metadata, revenue, maybe_revenue)
    result = dg.materialize(
        list(defs.assets or []),  # type: ignore[arg-type]
        resources=defs.resources,
        instance=instance,
        selection=["revenue"],
        raise_on_error=False,
    )
    assert not result.success
    uri = re.escape(str(metadata.parent / "lake/silver/sales/orders"))
    assert re.search(
        rf"DataCoolie table silver/sales/orders: there is no Delta table at {uri} yet; materialize it first",
        failure_text(result),
    )
    # an Optional input gets None instead (dagster-polars' convention)
    assert run(defs, instance, ["maybe_revenue"]).output_for_node("maybe_revenue") is True


def test_a_dict_of_partitions_annotation_is_refused_with_the_annotation_to_use(
    metadata: Path, instance: dg.DagsterInstance
) -> None:
    @dg.asset(ins={"events": dg.AssetIn(EVENTS)}, partitions_def=MONTHS)
    def by_partition(events: dict[str, pl.DataFrame]) -> None:
        pass

    defs = with_user_assets(metadata, by_partition)
    result = dg.materialize(
        list(defs.assets or []),  # type: ignore[arg-type]
        resources=defs.resources,
        instance=instance,
        selection=["by_partition"],
        partition_key="2024-01",
        raise_on_error=False,
    )
    assert re.search(
        r"DataCoolie table silver/sales/events: an input annotated as a dict of partitions is not supported; "
        r"annotate pl.LazyFrame or pl.DataFrame",
        failure_text(result),
    )


# --- dagster-deltalake resources ------------------------------------------------------------------


def test_a_dep_with_a_delta_table_resource_sees_the_delta_table(metadata: Path, instance: dg.DagsterInstance) -> None:
    seen: dict[str, Any] = {}

    @dg.asset(deps=[SILVER_ORDERS])
    def audit(silver__sales__orders: DeltaTableResource) -> None:
        table = silver__sales__orders.load()
        seen["version"], seen["rows"] = table.version(), pl.from_arrow(table.to_pyarrow_table()).height

    datacoolie = build_definitions(metadata, state_base_path=metadata.parent / "state")
    resources = delta_table_resources(datacoolie, connection="silver")
    assert sorted(resources) == ["silver__crm__customers", "silver__sales__events", "silver__sales__events_by_id",
                                 "silver__sales__orders"]  # fmt: skip
    defs = dg.Definitions.merge(datacoolie, dg.Definitions(assets=[audit], resources=resources))
    land(metadata.parent, "sales/orders", pl.DataFrame({"order_id": [1, 2], "amount": [1.0, 2.0], "updated_at": [datetime(2024, 1, 1)] * 2}))  # fmt: skip
    run(defs, instance, [BRONZE_ORDERS, SILVER_ORDERS, "audit"])
    reference = DeltaTable(str(metadata.parent / "lake/silver/sales/orders"))
    assert seen == {"version": reference.version(), "rows": 2}


# --- pure -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("windows", "merged"),
    [
        ([], []),
        ([(0, 100)], [(0, 100)]),
        ([(100, 200), (0, 100)], [(0, 200)]),
        ([(0, 100), (200, 300)], [(0, 100), (200, 300)]),
        (
            [(utc(2024, 2, 1), utc(2024, 3, 1)), (utc(2024, 1, 1), utc(2024, 2, 1))],
            [(utc(2024, 1, 1), utc(2024, 3, 1))],
        ),
    ],
    ids=["none", "one", "touching-unsorted", "gap", "months"],
)
def test_merge_windows(windows: list[tuple[Any, Any]], merged: list[tuple[Any, Any]]) -> None:
    assert merge_windows(windows) == merged


def test_specs_name_the_io_manager_and_the_window_column(metadata: Path) -> None:
    defs = build_definitions(metadata)
    specs = {s.key: s for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition) for s in a.specs}
    assert specs[EVENTS].metadata["datacoolie/chunk_column"] == "event_ts"
    assert specs[EVENTS_BY_ID].metadata["datacoolie/chunk_column"] == "id"  # no chunk_column: the watermark column
    assert "datacoolie/chunk_column" not in specs[SILVER_ORDERS].metadata
    assert {
        s.metadata["dagster/io_manager_key"] for k, s in specs.items() if k in (EVENTS, SILVER_ORDERS, CUSTOMERS)
    } == {IO_MANAGER_KEY}
