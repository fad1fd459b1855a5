"""Column lineage and column schema in the catalog: declared at load from the metadata, completed by a write.

The reference for the load-time lineage is the metadata itself (what each transform names); for the
written lineage it is the Delta table's own schema, read back with polars.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl

from datacoolie_dagster import build_definitions
from datacoolie_dagster.example import METADATA_PATH as EXAMPLE
from tests.dagster.conftest import dataflow, definitions, key, land_lineage, materialize

Lineage = dict[str, list[tuple[str, str]]]


def specs(defs: dg.Definitions) -> dict[str, dg.AssetSpec]:
    return {s.key.to_user_string(): s for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition) for s in a.specs}


def lineage_of(value: Any) -> Lineage:
    """``dagster/column_lineage`` as ``{column: [(asset, column)]}``, deps sorted (Dagster keeps no order)."""
    lineage = value.value if isinstance(value, dg.TableColumnLineageMetadataValue) else value
    return {
        column: sorted((d.asset_key.to_user_string(), d.column_name) for d in deps)
        for column, deps in lineage.deps_by_column.items()
    }


def schema_of(value: Any) -> dict[str, tuple[str, str | None]]:
    schema = value.schema if isinstance(value, dg.TableSchemaMetadataValue) else value
    return {c.name: (c.type, c.description) for c in schema.columns}


AUDIT = ["__created_at", "__updated_at", "__updated_by", "__dataflow_run_id"]
FILES = ["__file_name", "__file_path", "__file_modification_time"]
"""The framework's columns, the same on every table: each write records them, the specs leave them out."""


def test_the_example_declares_computed_hinted_masked_and_framework_columns(lake: Path) -> None:
    defs = build_definitions(EXAMPLE, state_base_path=lake / "state")
    by_key = specs(defs)

    # the columns the metadata transforms; the plain copies it only names (order_id, updated_at) and
    # the framework's columns come with the first write
    silver = by_key["silver/sales/orders"].metadata
    assert lineage_of(silver["dagster/column_lineage"]) == {
        "status": [("bronze/sales/orders", "status")],  # trimmed, lower-cased
        "amount_with_tax": [("bronze/sales/orders", "amount")],  # ROUND(amount * 1.2, 2)
        "order_month": [("bronze/sales/orders", "created_at")],  # DATE_FORMAT(created_at, 'yyyy-MM')
    }
    described = schema_of(silver["dagster/column_schema"])
    # no type the metadata does not state (the first write's Delta schema tells it); lineage in words
    assert described["amount_with_tax"] == ("", "computed: ROUND(amount * 1.2, 2) · from bronze/sales/orders.amount")
    assert described["status"][1] == "value rule: trim; value rule: case · from bronze/sales/orders.status"

    # the CSV source's schema hints type the bronze columns
    bronze = by_key["bronze/sales/orders"].metadata
    hinted = ["order_id", "customer_id", "amount", "quantity", "created_at", "updated_at"]
    assert lineage_of(bronze["dagster/column_lineage"]) == {c: [("landing_csv/sales/orders", c)] for c in hinted}
    assert schema_of(bronze["dagster/column_schema"])["amount"] == (
        "decimal(12,2)",
        "schema hint: decimal(12,2) · from landing_csv/sales/orders.amount",
    )

    customers = by_key["silver/crm/customers"].metadata
    customer_lineage = lineage_of(customers["dagster/column_lineage"])
    assert customer_lineage["email"] == [("bronze/crm/customers", "email")]
    assert customer_lineage["__valid_from"] == [("bronze/crm/customers", "updated_at")]  # scd2_effective_column
    assert customer_lineage["__is_current"] == []
    assert (
        schema_of(customers["dagster/column_schema"])["email"][1] == "masked: partial · from bronze/crm/customers.email"
    )

    # bronze customers reads a parquet folder whole: nothing declared, so no column metadata until a write
    assert "dagster/column_lineage" not in by_key["bronze/crm/customers"].metadata


def test_a_query_joining_two_tables_traces_each_column_to_its_table(lake: Path) -> None:
    gold = specs(definitions(lake))["gold/reporting/revenue_by_city"].metadata
    # SELECT c.city, SUM(o.amount) AS revenue, COUNT(*) AS orders FROM sales.orders o JOIN crm.customers c ...
    assert lineage_of(gold["dagster/column_lineage"]) == {
        "city": [("silver/crm/customers", "city")],
        "revenue": [("silver/sales/orders", "amount")],
        "orders": [],  # COUNT(*) reads no column
    }


def rename_hash_mask(document: dict[str, Any]) -> None:
    transform = dataflow(document, "orders_to_silver")["transform"]
    transform["rename_columns"] = {"customer_id": "client_id"}
    transform["hash_columns"] = [{"target_column": "row_hash", "columns": ["order_id", "customer_id"]}]
    transform["additional_columns"] = [{"column": "amount_cents", "expression": "CAST(amount * 100 AS BIGINT)"}]
    transform["masking_rules"] = [{"method": "nullify", "columns": ["amount"]}]
    transform["select_columns"] = ["order_id", "customer_id", "amount", "amount_cents", "row_hash", "order_month"]


def test_renames_hashes_casts_masking_and_a_projection(lake: Path) -> None:
    silver = specs(definitions(lake, edit=rename_hash_mask))["silver/sales/orders"].metadata
    source = "bronze/sales/orders"
    assert lineage_of(silver["dagster/column_lineage"]) == {
        "order_id": [(source, "order_id")],
        "client_id": [(source, "customer_id")],
        "amount": [(source, "amount")],
        "amount_cents": [(source, "amount")],
        "row_hash": [(source, "customer_id"), (source, "order_id")],
        "order_month": [(source, "updated_at")],
    }
    described = schema_of(silver["dagster/column_schema"])
    origin = source
    assert described["client_id"] == ("", f"renamed from customer_id · from {origin}.customer_id")
    assert described["row_hash"] == (
        "string",
        f"sha256 hash (dc_hash_v1) of order_id, customer_id · from {origin}.order_id, {origin}.customer_id",
    )
    assert described["amount_cents"] == ("bigint", f"computed: CAST(amount * 100 AS BIGINT) · from {origin}.amount")
    assert described["amount"][1] == f"masked: nullify · from {origin}.amount"


def written(result: dg.ExecuteInProcessResult, path: str) -> dict[str, Any]:
    (event,) = [e for e in result.get_asset_materialization_events() if e.asset_key == key(path)]
    return event.materialization.metadata


def test_a_write_completes_the_lineage_from_the_delta_schema(lake: Path, instance: dg.DagsterInstance) -> None:
    defs = definitions(lake)
    land_lineage(lake)
    result = materialize(defs, instance)
    assert result.success

    # bronze orders: nothing declared but the framework columns; the write names every column, and a
    # column of the fan-in table comes from both landing folders
    bronze = written(result, "bronze/sales/orders")
    table = pl.read_delta(str(lake / "lake" / "bronze" / "sales" / "orders"))
    both = ["landing/sales/orders_eu", "landing/sales/orders_us"]
    assert list(lineage_of(bronze["dagster/column_lineage"])) == table.columns
    assert lineage_of(bronze["dagster/column_lineage"])["customer_id"] == [(k, "customer_id") for k in both]
    for framework in [*AUDIT, *FILES]:  # no upstream column; typed and described
        assert lineage_of(bronze["dagster/column_lineage"])[framework] == []
    described = schema_of(bronze["dagster/column_schema"])
    assert described["__created_at"] == ("timestamp", "framework: when the row was first written")
    assert described["__file_name"] == ("string", "framework: the source file's name")
    assert [c for c, _ in schema_of(bronze["dagster/column_schema"]).items()] == table.columns

    # gold: the query's lineage, now with the written types
    gold = written(result, "gold/reporting/revenue_by_city")
    gold_table = pl.read_delta(str(lake / "lake" / "gold" / "reporting" / "revenue_by_city"))
    assert list(lineage_of(gold["dagster/column_lineage"])) == gold_table.columns
    assert lineage_of(gold["dagster/column_lineage"])["revenue"] == [("silver/sales/orders", "amount")]
    types = {c: t for c, (t, _) in schema_of(gold["dagster/column_schema"]).items()}
    assert types["city"] == "string"
    assert types["revenue"] == "double"

    # the instance holds the same (what the UI reads)
    stored = instance.get_latest_materialization_event(key("gold/reporting/revenue_by_city"))
    assert stored is not None
    assert stored.asset_materialization is not None
    assert lineage_of(stored.asset_materialization.metadata["dagster/column_lineage"])["city"] == [
        ("silver/crm/customers", "city")
    ]
