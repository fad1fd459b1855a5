"""A partition's own figures, and the one snapshot of the table they and the write's figures read.

The reference for every count is the Delta table itself, read back at the version in question.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from deltalake import DeltaTable

from datacoolie_core.api import DataCoolieDriver, DataFlowRuntimeInfo, ReplayConfig
from datacoolie_dagster import constants
from datacoolie_dagster.location.assets import TableAsset
from datacoolie_dagster.location.results import materialization_metadata, open_delta_table
from datacoolie_dagster.location.table_state import merged_figures, partition_metadata
from tests.dagster.conftest import PARTITIONS, key, table_assets, write_metadata
from tests.dagster.test_partition_counts import BATCH_1, ORDERS, land_orders

JANUARY = "2024-01"
TABLE = Path("lake") / "silver" / "sales" / "orders"

WRITE = {constants.ROWS_INSERTED: 5, constants.ROWS_UPDATED: 2, constants.WINDOW: "[a, b)"}
MERGES = {
    "a number replaces the write's total": ({constants.ROWS_INSERTED: 3}, WRITE | {constants.ROWS_INSERTED: 3}),
    "zero is a figure, not a missing one": ({constants.ROWS_UPDATED: 0}, WRITE | {constants.ROWS_UPDATED: 0}),
    "None drops the write's total": (
        {constants.ROWS_INSERTED: None, constants.ROWS_UPDATED: None},
        {constants.WINDOW: "[a, b)"},
    ),
    "None for a figure the write lacks adds nothing": ({constants.ROWS_DELETED: None}, WRITE),
    "a figure not named keeps the write's": ({}, WRITE),
    "a new figure is added": ({"dagster/row_count": 4}, WRITE | {"dagster/row_count": 4}),
}


@pytest.mark.parametrize(("own", "merged"), MERGES.values(), ids=MERGES.keys())
def test_merged_figures(own: dict[str, int | None], merged: dict[str, Any]) -> None:
    assert merged_figures(WRITE, own) == merged


def replay_january(lake: Path) -> tuple[TableAsset, list[DataFlowRuntimeInfo]]:
    """The monthly orders table, January replayed into it (two orders): its asset and the write's runtimes."""
    write_metadata(lake, PARTITIONS)
    land_orders(lake, 1, BATCH_1)
    asset = next(a for a in table_assets(lake) if a.spec.key == key(ORDERS))
    assert asset.partitioning is not None
    start, end = asset.partitioning.window(JANUARY)
    with DataCoolieDriver(metadata_base_path=lake / "metadata.json", state_base_path=lake / "state") as driver:
        done = driver.run_replay(asset.table.dataflows, ReplayConfig(start=start, end=end, chunk_column="order_ts"))
    assert [r.status for r in done.runtimes] == ["succeeded"]
    return asset, list(done.runtimes)


def append_a_january_row(table: Path) -> None:
    """A later commit, as another writer would land it after the step's write."""
    pl.read_delta(str(table)).head(1).write_delta(str(table), mode="append")


def january_rows(table: Path, version: int) -> int:
    frame = pl.read_delta(str(table), version=version)
    return frame.filter(pl.col("order_ts").dt.strftime("%Y-%m") == JANUARY).height


def test_the_write_and_its_partition_are_described_from_the_one_snapshot_opened(lake: Path) -> None:
    asset, runtimes = replay_january(lake)
    delta = open_delta_table(asset.table)
    assert delta is not None
    opened = delta.version()
    append_a_january_row(lake / TABLE)  # after the step opened the table: in neither figure

    metadata = materialization_metadata(asset.table, runtimes, asset.written_columns, delta=delta)
    own = partition_metadata(asset, runtimes, [JANUARY], delta=delta)[JANUARY]

    assert DeltaTable(str(lake / TABLE)).version() == opened + 1
    assert metadata[constants.DELTA_VERSION] == opened
    assert metadata["dagster/row_count"] == pl.read_delta(str(lake / TABLE), version=opened).height == 2
    assert own["dagster/row_count"] == january_rows(lake / TABLE, opened) == 2
    assert (own[constants.ROWS_INSERTED], own[constants.ROWS_UPDATED]) == (2, 0)


def test_a_partition_is_counted_at_the_version_its_write_committed(lake: Path) -> None:
    asset, runtimes = replay_january(lake)
    (written,) = {r.destination.table_version for r in runtimes}
    assert written is not None
    append_a_january_row(lake / TABLE)
    delta = open_delta_table(asset.table)  # opened after the later commit
    assert delta is not None

    metadata = materialization_metadata(asset.table, runtimes, asset.written_columns, delta=delta)
    own = partition_metadata(asset, runtimes, [JANUARY], delta=delta)[JANUARY]

    # the table's figures are the table as opened; the partition's are its rows as the write left them
    assert metadata[constants.DELTA_VERSION] == delta.version() == written + 1
    assert own["dagster/row_count"] == january_rows(lake / TABLE, written) == 2
    assert january_rows(lake / TABLE, written + 1) == 3
