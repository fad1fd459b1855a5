"""``unique_merge_keys`` checks the keys the user declared, on real Delta tables.

The writer merges on the declared keys extended with the partition columns (as DataCoolie does): an
order whose partition value changes is inserted into its new partition beside its old row. The
extended keys stay unique; the declared key does not, and the check must say so.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest
from deltalake import write_deltalake

from datacoolie_dagster.location.checks import UNIQUE_KEYS
from tests.dagster.conftest import dataflow, definitions, failure_message, land, land_lineage, materialize

SILVER = "silver/sales/orders"
SELECTION = ["bronze/sales/orders", SILVER]


def unique_keys(result: dg.ExecuteInProcessResult) -> Any:
    (evaluation,) = [
        e
        for e in result.get_asset_check_evaluations()
        if e.asset_key.to_user_string() == SILVER and e.check_name == UNIQUE_KEYS
    ]
    return evaluation


def load_type(name: str) -> Any:
    def edit(document: dict[str, Any]) -> None:
        dataflow(document, "orders_to_silver")["destination"]["load_type"] = name

    return edit


@pytest.mark.parametrize("load", ["merge_upsert", "merge_overwrite"])
def test_a_key_whose_partition_changed_fails_naming_the_key_and_both_partitions(
    lake: Path, instance: dg.DagsterInstance, load: str
) -> None:
    defs = definitions(lake, edit=load_type(load))  # silver orders: merge on order_id, partitioned by order_month
    land_lineage(lake)

    # load 1 — orders 1 and 3 in 2024-01, order 2 in 2024-02: one row per order
    first = materialize(defs, instance, SELECTION)
    assert unique_keys(first).passed is True

    # load 2 — order 1 updated in March: its order_month moves from 2024-01 to 2024-03
    moved = pl.DataFrame({"order_id": [1], "customer_id": [1], "amount": [12.0], "updated_at": [datetime(2024, 3, 2)]})
    land(lake, "sales/orders_eu", moved, batch=2)
    second = materialize(defs, instance, SELECTION)

    # the table (the reference): order 1 lives in two partitions
    table = pl.read_delta(str(lake / "lake" / "silver" / "sales" / "orders"))
    assert sorted(table.filter(pl.col("order_id") == 1)["order_month"].to_list()) == ["2024-01", "2024-03"]
    evaluation = unique_keys(second)
    assert evaluation.passed is False
    assert not second.success
    assert UNIQUE_KEYS in failure_message(second)
    assert evaluation.metadata["merge_keys"].value == ["order_id"]
    assert evaluation.metadata["rows"].value == 4
    assert evaluation.metadata["distinct_keys"].value == 3
    assert evaluation.metadata["duplicate_keys"].value == 1
    assert evaluation.metadata["examples"].value == [{"order_id": 1, "rows": 2, "order_month": ["2024-01", "2024-03"]}]
    description = evaluation.description or ""
    assert "order_id=1: 2 rows (order_month in 2024-01, 2024-03)" in description
    assert "the partition column (order_month) changed for these keys" in description


def test_a_duplicate_within_one_partition_fails_without_blaming_the_partition_column(
    lake: Path, instance: dg.DagsterInstance
) -> None:
    defs = definitions(lake)
    land_lineage(lake)
    assert materialize(defs, instance, SELECTION).success
    # a copy of order 2 written behind the merge's back, in its own partition
    silver = str(lake / "lake" / "silver" / "sales" / "orders")
    write_deltalake(silver, pl.read_delta(silver).filter(pl.col("order_id") == 2).to_arrow(), mode="append")

    idle = materialize(defs, instance, SELECTION)  # nothing new: the check judges the table as it stands

    evaluation = unique_keys(idle)
    assert evaluation.passed is False
    description = evaluation.description or ""
    assert "order_id=2: 2 rows (order_month in 2024-02)" in description
    assert "changed" not in description


def test_a_check_on_an_asset_outside_its_multi_asset_is_refused() -> None:
    # the multi-asset turns Dagster's own (quadratic) target check off and makes this one instead
    from datacoolie_dagster.location.assets import _check_targets

    key, stray = dg.AssetKey(["lake", "t"]), dg.AssetKey(["lake", "elsewhere"])
    _check_targets([dg.AssetCheckSpec("load_consistent", asset=key)], {key: object()})
    with pytest.raises(dg.DagsterInvalidDefinitionError, match=r"lake.*elsewhere.*not an asset of this multi-asset"):
        _check_targets([dg.AssetCheckSpec("load_consistent", asset=stray)], {key: object()})
