"""Every load strategy on an S3 Delta table, through the real CLI, against moto in server mode.

Landing parquet files and the Delta destination are both in the bucket; the credentials come from
the connections' ``secrets_ref`` (environment). Load 1 lands orders 1-2, load 2 updates order 2 and
adds order 3; after each load the whole table is read back from S3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from tests.core.object_storage.lake import S3Lake, minutes, orders
from tests.support.s3 import S3Server

pytestmark = [pytest.mark.slow, pytest.mark.s3]

DESTINATIONS: dict[str, dict[str, Any]] = {
    "append": {"load_type": "append"},
    "overwrite": {"load_type": "overwrite"},
    "merge_upsert": {"load_type": "merge_upsert", "merge_keys": ["order_id"]},
    "merge_overwrite": {"load_type": "merge_overwrite", "merge_keys": ["order_id"]},
    "scd2": {"load_type": "scd2", "merge_keys": ["order_id"], "configure": {"scd2_effective_column": "updated_at"}},
    "partitioned": {"load_type": "append", "partition_columns": [{"column": "region"}]},
}
AFTER_LOAD_1 = [(1, 10), (2, 20)]
AFTER_LOAD_2: dict[str, list[tuple[Any, ...]]] = {
    "append": [(1, 10), (2, 20), (2, 25), (3, 30)],
    "overwrite": [(2, 25), (3, 30)],
    "merge_upsert": [(1, 10), (2, 25), (3, 30)],
    "merge_overwrite": [(1, 10), (2, 25), (3, 30)],
    "scd2": [(1, 10, True), (2, 20, False), (2, 25, True), (3, 30, True)],
    "partitioned": [(1, 10), (2, 20), (2, 25), (3, 30)],
}


def orders_lake(s3: S3Server, root: Path, destination: dict[str, Any]) -> S3Lake:
    lake = S3Lake(s3, root)
    lake.write_metadata(
        [
            {
                "name": "orders",
                "stage": "bronze2silver",
                "source": {"connection_name": "landing", "schema_name": "sales", "table": "orders",
                           "watermark_columns": ["updated_at"]},
                "destination": {"connection_name": "lake", "schema_name": "silver", "table": "orders", **destination},
            }
        ]
    )  # fmt: skip
    return lake


@pytest.mark.parametrize("strategy", list(DESTINATIONS))
def test_every_load_strategy_writes_an_s3_delta_table(
    s3: S3Server, tmp_path: Path, capsys: pytest.CaptureFixture[str], strategy: str
) -> None:
    lake = orders_lake(s3, tmp_path, DESTINATIONS[strategy])
    columns = ["__is_current"] if strategy == "scd2" else []  # scd2: which version of a key is current
    after_load_1 = [(1, 10, True), (2, 20, True)] if columns else AFTER_LOAD_1
    # load 1 — initial
    lake.land("sales/orders", "a", orders([1, 2], [10, 20], region=["eu", "us"]))
    code, (row,) = lake.run(capsys)
    assert (code, row["status"]) == (0, "succeeded"), row["error_message"]
    created = row["destination"]  # the new table's metrics: from its history on S3, not a local commit file
    files = 2 if strategy == "partitioned" else 1
    assert (created["table_version"], created["rows_written"], created["files_added"]) == (0, 2, files)
    table = lake.table("silver", "orders")
    assert minutes(table, *columns) == after_load_1
    # load 2 — order 2 updated, order 3 new: only the new file's rows are past the watermark
    lake.land("sales/orders", "b", orders([2, 3], [25, 30], region=["us", "eu"]))
    code, (row,) = lake.run(capsys)
    assert (code, row["status"], row["source"]["rows_read"]) == (0, "succeeded", 2), row["error_message"]
    table = lake.table("silver", "orders")
    assert minutes(table, *columns) == AFTER_LOAD_2[strategy]
    # load 3 — nothing new: skipped, the table unchanged
    code, (row,) = lake.run(capsys)
    assert (code, row["status"]) == (0, "skipped"), row["error_message"]
    assert minutes(lake.table("silver", "orders"), *columns) == AFTER_LOAD_2[strategy]
    if strategy == "partitioned":
        delta = DeltaTable(f"{lake.lake}/silver/orders", storage_options=s3.storage_options)
        assert delta.metadata().partition_columns == ["region"]
        assert {k.split("/")[-2] for k in s3.keys(f"{lake.lake}/silver/orders/region=")} == {"region=eu", "region=us"}


def test_a_delta_source_and_a_query_over_s3_tables(
    s3: S3Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lake = S3Lake(s3, tmp_path)
    lake.write_metadata(
        [
            {"name": "bronze", "stage": "s1",
             "source": {"connection_name": "landing", "schema_name": "sales", "table": "orders"},
             "destination": {"connection_name": "lake", "schema_name": "bronze", "table": "orders", "load_type": "overwrite"}},
            {"name": "silver", "stage": "s2",
             "source": {"connection_name": "lake", "schema_name": "bronze", "table": "orders",
                        "watermark_columns": ["updated_at"]},
             "destination": {"connection_name": "lake", "schema_name": "silver", "table": "orders", "load_type": "append"}},
            {"name": "gold", "stage": "s3",
             "source": {"connection_name": "lake", "query": "SELECT order_id, updated_at FROM silver.orders WHERE amount > 1"},
             "destination": {"connection_name": "lake", "schema_name": "gold", "table": "big_orders", "load_type": "overwrite"}},
        ]
    )  # fmt: skip
    lake.land("sales/orders", "a", orders([1, 2, 3], [10, 20, 30]))
    for stage in ("s1", "s2", "s3"):
        code, (row,) = lake.run(capsys, "--stage", stage)
        assert (code, row["status"]) == (0, "succeeded"), row["error_message"]
    assert minutes(lake.table("silver", "orders")) == [(1, 10), (2, 20), (3, 30)]
    assert minutes(lake.table("gold", "big_orders")) == [(2, 20), (3, 30)]
