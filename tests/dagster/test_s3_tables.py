"""DataCoolie tables on S3 as Dagster assets: ``dagster/uri``, materializations, checks and downstream reads.

Against moto in server mode. The code location is built from metadata whose connections name an
``s3://`` base path (credentials from ``secrets_ref``); a user asset reads the silver table through
``DataCoolieIOManager`` in a run of its own, with every storage binding of this process cleared
first, so the manager must find the table's options from its connection, as a separate process would.
"""

# no `from __future__ import annotations`: Dagster reads the assets' input annotations at runtime

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.platform.storage import clear_storage_bindings
from datacoolie_dagster import build_definitions
from tests.core.object_storage.lake import S3Lake, s3_connection
from tests.dagster.conftest import key, materialize
from tests.support.s3 import S3Server

pytestmark = [pytest.mark.slow, pytest.mark.s3]
BRONZE, SILVER = key("bronze/sales/orders"), key("silver/sales/orders")


def s3_metadata(lake: S3Lake) -> Path:
    document: dict[str, Any] = {
        "connections": [
            s3_connection("landing", "parquet", lake.landing, lake.server),
            s3_connection("bronze", "delta", f"{lake.lake}/bronze", lake.server),
            s3_connection("silver", "delta", f"{lake.lake}/silver", lake.server),
        ],
        "dataflows": [
            {"name": "orders_to_bronze",
             "source": {"connection_name": "landing", "schema_name": "sales", "table": "orders",
                        "watermark_columns": ["updated_at"]},
             "destination": {"connection_name": "bronze", "schema_name": "sales", "table": "orders", "load_type": "append"}},
            {"name": "orders_to_silver",
             "source": {"connection_name": "bronze", "schema_name": "sales", "table": "orders",
                        "watermark_columns": ["updated_at"]},
             "destination": {"connection_name": "silver", "schema_name": "sales", "table": "orders",
                             "load_type": "merge_upsert", "merge_keys": ["order_id"]}},
        ],
    }  # fmt: skip
    lake.metadata.parent.mkdir(parents=True, exist_ok=True)
    lake.metadata.write_text(json.dumps(document))
    return lake.metadata


def test_s3_tables_materialize_are_checked_and_read_downstream(s3: S3Server, tmp_path: Path) -> None:
    lake = S3Lake(s3, tmp_path)
    metadata = s3_metadata(lake)

    @dg.asset(ins={"orders": dg.AssetIn(SILVER)})
    def big_orders(orders: pl.LazyFrame) -> pl.DataFrame:
        return orders.filter(pl.col("amount") > 15).collect()

    defs = dg.Definitions.merge(
        build_definitions(metadata, state_base_path=tmp_path / "state"), dg.Definitions(assets=[big_orders])
    )
    specs = {s.key: s for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition) for s in a.specs}
    assert specs[BRONZE].metadata["dagster/uri"] == f"{lake.lake}/bronze/sales/orders"
    assert specs[SILVER].metadata["dagster/uri"] == f"{lake.lake}/silver/sales/orders"
    # load 1 — DataCoolie's tables: materialized with the row count from the S3 Delta log, keys checked
    lake.land("sales/orders", "a", pl.DataFrame({"order_id": [1, 2, 3], "amount": [10.0, 20.0, 30.0],
                                                 "updated_at": [datetime(2024, 1, d) for d in (1, 2, 3)]}))  # fmt: skip
    with dg.DagsterInstance.ephemeral() as instance:
        result = materialize(defs, instance, [BRONZE.to_user_string(), SILVER.to_user_string()])
        assert result.success
        counts = {
            e.materialization.asset_key: e.materialization.metadata["dagster/row_count"].value
            for e in result.get_asset_materialization_events()
        }
        assert counts == {BRONZE: 3, SILVER: 3}
        checks = {(e.asset_key, e.check_name): e.passed for e in result.get_asset_check_evaluations()}
        assert checks[(SILVER, "unique_merge_keys")] is True
        # the user's asset in a run of its own, nothing bound in this process: options from the connection
        clear_storage_bindings()
        downstream = materialize(defs, instance, ["big_orders"])
        assert downstream.success
    expected = lake.table("silver/sales", "orders").filter(pl.col("amount") > 15)
    got = downstream.output_for_node("big_orders")
    assert_frame_equal(got.sort("order_id"), expected.select(got.columns).sort("order_id"))
    assert got["order_id"].sort().to_list() == [2, 3]
