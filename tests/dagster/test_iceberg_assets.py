"""Iceberg tables as Dagster assets: the ``iceberg`` kind, ``dagster/uri``, lineage, a real materialization.

Parquet extracts -> an Iceberg table (merge_upsert) -> a second Iceberg table read from the first
(incremental); the Definitions are built from the metadata, materialized on an ephemeral instance,
and the tables read back with pyiceberg.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest

from tests.dagster.conftest import ORDERS_EU, definitions, key, land, materialize, materialized
from tests.support.iceberg import iceberg_connection, load_table, read_back


def write_document(root: Path, *, base_path: bool = True, catalog: str | None = None) -> Path:
    lake = iceberg_connection(root)
    if not base_path:
        lake["configure"].pop("base_path")
        lake["configure"]["catalog_properties"]["warehouse"] = f"file://{root / 'warehouse'}"
    if catalog:
        lake["catalog"] = catalog
    document: dict[str, Any] = {
        "connections": [
            {"name": "landing", "format": "parquet", "configure": {"base_path": str(root / "lake" / "landing")}},
            lake,
        ],
        "dataflows": [
            {
                "name": "orders_to_bronze",
                "stage": "landing2bronze",
                "source": {"connection_name": "landing", "schema_name": "sales", "table": "orders_eu",
                           "watermark_columns": ["updated_at"]},
                "destination": {"connection_name": "lake", "schema_name": "bronze", "table": "orders",
                                "load_type": "merge_upsert", "merge_keys": ["order_id"]},
            },
            {
                "name": "orders_to_silver",
                "stage": "bronze2silver",
                "source": {"connection_name": "lake", "schema_name": "bronze", "table": "orders",
                           "watermark_columns": ["updated_at"]},
                "destination": {"connection_name": "lake", "schema_name": "silver", "table": "orders",
                                "load_type": "append"},
            },
        ],
    }  # fmt: skip
    path = root / "iceberg.json"
    path.write_text(json.dumps(document))
    return path


def specs(defs: dg.Definitions) -> dict[str, dg.AssetSpec]:
    graph = defs.resolve_asset_graph()
    return {k.to_user_string(): graph.get(k).to_asset_spec() for k in graph.get_all_asset_keys()}


def test_iceberg_tables_are_assets_with_the_iceberg_kind_and_their_uri(tmp_path: Path) -> None:
    defs = definitions(tmp_path, write_document(tmp_path))
    built = specs(defs)
    bronze, silver = built["lake/bronze/orders"], built["lake/silver/orders"]
    assert bronze.kinds == silver.kinds == {"polars", "iceberg"}
    assert bronze.metadata["dagster/uri"] == str(tmp_path / "lake" / "bronze" / "orders")
    assert silver.metadata["dagster/uri"] == str(tmp_path / "lake" / "silver" / "orders")
    # lineage: silver reads bronze, bronze reads the landing extracts
    assert {d.asset_key for d in silver.deps} == {key("lake/bronze/orders")}
    assert {d.asset_key for d in bronze.deps} == {key("landing/sales/orders_eu")}


@pytest.mark.parametrize(
    ("catalog", "uri"), [(None, "iceberg://lake/bronze.orders"), ("prod", "iceberg://prod/bronze.orders")]
)
def test_without_base_path_the_uri_names_the_catalog_table(tmp_path: Path, catalog: str | None, uri: str) -> None:
    built = specs(definitions(tmp_path, write_document(tmp_path, base_path=False, catalog=catalog)))
    assert built["lake/bronze/orders"].metadata["dagster/uri"] == uri
    assert built["lake/bronze/orders"].kinds == {"polars", "iceberg"}


def test_materializing_writes_the_iceberg_tables(tmp_path: Path) -> None:
    defs = definitions(tmp_path, write_document(tmp_path))
    land(tmp_path, "sales/orders_eu", ORDERS_EU)
    with dg.DagsterInstance.ephemeral() as instance:
        result = materialize(defs, instance)
        assert result.success
        assert materialized(result) == [("lake/bronze/orders", None), ("lake/silver/orders", None)]
        event = instance.get_latest_materialization_event(key("lake/silver/orders"))
        assert event is not None
        assert event.asset_materialization is not None
        recorded = event.asset_materialization.metadata
        assert recorded["datacoolie/rows_inserted"].value == 2
        silver = load_table(tmp_path, "silver", "orders").current_snapshot()
        assert silver is not None
        assert recorded["datacoolie/iceberg_sequence_number"].value == silver.sequence_number
        assert "datacoolie/delta_version" not in recorded
    for table in ("bronze", "silver"):
        rows = read_back(tmp_path, table, "orders", by=("order_id",)).select(ORDERS_EU.columns)
        expected = ORDERS_EU.with_columns(pl.col("updated_at").dt.replace_time_zone("UTC"))
        assert rows.to_dicts() == expected.to_dicts()
