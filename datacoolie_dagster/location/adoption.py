"""Adopting tables the instance has not seen: their current state, read from Delta, recorded once.

Tables built before the Dagster instance existed (by DataCoolie on Spark, by ``datacoolie run``
before ``DAGSTER_HOME`` was set, by ``./make.sh example`` before ``./make.sh ui``) would show
"Never materialized" over data. :func:`adopt_tables` records, for every Delta destination whose
current version the instance has not recorded, one runless materialization of the table as it
stands (Delta version, row count, column schema), and for a partitioned table one per partition
holding rows, with that partition's own row count. Nothing is re-run and no data file is
rewritten; a table already recorded at its current version is left alone, so adopting twice
records nothing the second time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dagster as dg

from datacoolie_dagster import constants
from datacoolie_dagster.location.assets import TableAsset
from datacoolie_dagster.location.provenance import provenance_tags
from datacoolie_dagster.location.results import delta_table_metadata, open_delta_table
from datacoolie_dagster.location.table_state import partition_counts, table_window_spec
from datacoolie_dagster.location.tables import lineage_levels

if TYPE_CHECKING:
    from deltalake import DeltaTable

ADOPTED_BY = "datacoolie-dagster adopt"


@dataclass(frozen=True)
class Adoption:
    """What adopting one table did."""

    key: str
    recorded: int
    """Materializations recorded (0: nothing to adopt)."""
    detail: str

    def line(self) -> str:
        return f"{self.key}: {self.detail}"


def adopt_tables(instance: dg.DagsterInstance, assets: Sequence[TableAsset]) -> list[Adoption]:
    """Record the current state of every table in ``assets`` the instance has not recorded, upstream first.

    A table counts as recorded when its latest materialization names its current Delta version.
    """
    done = []
    for level in lineage_levels(list(assets), lambda a: a.table):
        for asset in level:
            done.append(_adopt(instance, asset))
    return done


def _adopt(instance: dg.DagsterInstance, asset: TableAsset) -> Adoption:
    name = asset.spec.key.to_user_string()
    if asset.table.first.destination.connection.format != "delta" or not asset.table.path:
        return Adoption(name, 0, "not a Delta table: left as recorded")
    delta = open_delta_table(asset.table)
    if delta is None:
        return Adoption(name, 0, "no table yet")
    state = delta_table_metadata(delta, asset.written_columns)
    version = state[constants.DELTA_VERSION]
    latest = instance.get_latest_materialization_event(asset.spec.key)
    materialization = latest.asset_materialization if latest else None
    recorded = materialization.metadata.get(constants.DELTA_VERSION) if materialization else None
    if recorded is not None and recorded.value == version:
        return Adoption(name, 0, f"already recorded at Delta version {version}")
    state[constants.RECORDED_BY] = ADOPTED_BY
    events = _events(instance, asset, state, delta)
    for event in events:
        instance.report_runless_asset_event(event)
    partitions = sum(e.partition is not None for e in events)
    where = f" ({partitions} partition(s) holding rows)" if asset.partitioning is not None else ""
    rows = state.get("dagster/row_count")
    return Adoption(name, len(events), f"recorded Delta version {version}, {rows} rows{where}")


def _events(
    instance: dg.DagsterInstance, asset: TableAsset, state: dict[str, Any], delta: DeltaTable
) -> list[dg.AssetMaterialization]:
    """The table's materialization as it stands, or one per partition holding rows, all of one snapshot."""
    tags = provenance_tags(instance, asset.spec, delta.version()) or None
    partitioning = asset.partitioning
    spec = table_window_spec(asset)
    if partitioning is None or spec is None:
        return [dg.AssetMaterialization(asset_key=asset.spec.key, metadata=state, tags=tags)]
    counts = partition_counts(delta, partitioning, spec)
    events = []
    for key, count in counts.items():
        if count.rows == 0:
            continue
        start, end = partitioning.window(key)
        metadata = state | {"dagster/row_count": count.rows, constants.WINDOW: f"[{start}, {end})"}
        events.append(dg.AssetMaterialization(asset_key=asset.spec.key, partition=key, metadata=metadata, tags=tags))
    return events
