"""Assets: pure spec builders, and one ``multi_asset`` per partitioning whose body runs the driver.

The body runs only ``context.selected_asset_keys``, level by level along the lineage (a table runs
after the tables it reads, when both are selected), and yields one ``MaterializeResult`` per table
that wrote — or, for partitioned tables, one ``AssetMaterialization`` per finished partition, so a
failure leaves the finished partitions materialized and "failed and missing" retries the rest.
"""

# no `from __future__ import annotations`: Dagster reads the context and config annotations at runtime

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from datacoolie_core import DataFlow, ReplayConfig
from datacoolie_core.models.runtime import DataFlowRuntimeInfo, ExecutionResult
from datacoolie_core.orchestration.driver import DataCoolieDriver
from datacoolie_dagster.checks import check_results, check_specs
from datacoolie_dagster.partitions import TablePartitioning, table_partitioning
from datacoolie_dagster.resources import DataCoolieResource
from datacoolie_dagster.results import materialization_metadata
from datacoolie_dagster.tables import DestinationTable, destination_tables
from datacoolie_dagster.translator import DataCoolieTranslator, DataCoolieTranslatorData

RESOURCE_KEY = "datacoolie"


@dataclass(frozen=True)
class TableAsset:
    """A destination table with its spec and partitioning."""

    table: DestinationTable
    spec: dg.AssetSpec
    partitioning: TablePartitioning | None


def build_table_assets(
    dataflows: Sequence[DataFlow], translator: DataCoolieTranslator
) -> tuple[list[TableAsset], list[dg.AssetSpec]]:
    """Specs of every destination table (fan-in grouped) and of every external source. No I/O."""
    tables = destination_tables(dataflows)
    keys = {t.key: translator.get_asset_key(t) for t in tables}
    assets = []
    for table in tables:
        partitioning = table_partitioning(table.dataflows)
        data = DataCoolieTranslatorData(
            table, tuple(keys[u] for u in table.upstream), partitioning.partitions_def if partitioning else None
        )
        assets.append(TableAsset(table, translator.get_asset_spec(data), partitioning))
    sources: dict[dg.AssetKey, dg.AssetSpec] = {}
    for table in tables:
        for ref in table.sources:
            spec = translator.get_source_spec(ref)
            if spec.key not in sources and spec.key not in keys.values():
                sources[spec.key] = spec
    return assets, list(sources.values())


def build_multi_assets(assets: Sequence[TableAsset], *, name_prefix: str = "datacoolie") -> list[dg.AssetsDefinition]:
    """One ``multi_asset(can_subset=True)`` per partitioning (mixing partitions fails at execution)."""
    groups: dict[object, list[TableAsset]] = {}
    for asset in assets:
        groups.setdefault(asset.partitioning.group_key if asset.partitioning else None, []).append(asset)
    return [
        _multi_asset(members, name=f"{name_prefix}_{'tables' if key is None else f'partitioned_{index}'}")
        for index, (key, members) in enumerate(groups.items())
    ]


def _multi_asset(members: list[TableAsset], *, name: str) -> dg.AssetsDefinition:
    partitioning = members[0].partitioning
    by_key = {m.spec.key: m for m in members}

    @dg.multi_asset(
        name=name,
        specs=[m.spec for m in members],
        check_specs=[c for m in members for c in check_specs(m)],
        can_subset=True,
        partitions_def=partitioning.partitions_def if partitioning else None,
        backfill_policy=partitioning.backfill_policy if partitioning else None,
        required_resource_keys={RESOURCE_KEY},
    )
    def _assets(
        context: dg.AssetExecutionContext,
    ) -> Iterator[dg.MaterializeResult | dg.AssetMaterialization | dg.AssetCheckResult]:
        resource: DataCoolieResource = getattr(context.resources, RESOURCE_KEY)
        selected = [by_key[k] for k in sorted(context.selected_asset_keys, key=lambda k: k.to_user_string())]
        if partitioning is None:
            yield from _run_tables(context, resource, selected)
        else:
            yield from _run_partitions(context, resource, selected, partitioning)

    return _assets


def _levels(selected: Sequence[TableAsset]) -> list[list[TableAsset]]:
    """Selected tables in lineage order: each level only reads tables of earlier levels."""
    remaining = {a.table.key: a for a in selected}
    levels: list[list[TableAsset]] = []
    while remaining:
        ready = [a for a in remaining.values() if not set(a.table.upstream) & remaining.keys()]
        ready = ready or list(remaining.values())  # a cycle: run the rest together
        levels.append(ready)
        for asset in ready:
            del remaining[asset.table.key]
    return levels


def _run_tables(
    context: dg.AssetExecutionContext, resource: DataCoolieResource, selected: Sequence[TableAsset]
) -> Iterator[dg.MaterializeResult]:
    failures: list[DataFlowRuntimeInfo] = []
    failed_keys: set[str] = set()
    with resource.driver() as driver:
        for level in _levels(selected):
            runnable = [a for a in level if not set(a.table.upstream) & failed_keys]
            failed_keys.update(a.table.key for a in level if a not in runnable)
            result = driver.run(dataflows=[d for a in runnable for d in a.table.dataflows])
            for asset in runnable:
                runtimes = _runtimes(result, asset.table)
                failed = [r for r in runtimes if r.status == "failed"]
                if failed:
                    failures.extend(failed)
                    failed_keys.add(asset.table.key)
                elif any(r.status == "succeeded" for r in runtimes):
                    yield dg.MaterializeResult(
                        asset_key=asset.spec.key,
                        metadata=materialization_metadata(asset.table, runtimes),
                        check_results=check_results(asset, runtimes, _stored(driver, runtimes)),
                    )
                else:
                    context.log.info(f"{asset.spec.key.to_user_string()}: no new source rows, nothing written")
    _raise_failures(failures, failed_keys)


def _run_partitions(
    context: dg.AssetExecutionContext,
    resource: DataCoolieResource,
    selected: Sequence[TableAsset],
    partitioning: TablePartitioning,
) -> Iterator[dg.AssetMaterialization]:
    failures: list[DataFlowRuntimeInfo] = []
    failed_keys: set[str] = set()
    config = partitioning.config
    with resource.driver() as driver:
        for partition_key in context.partition_keys:
            start, end = partitioning.window(partition_key)
            replay = ReplayConfig(
                start=start, end=end, chunk_column=config.chunk_column, save_watermark=config.save_watermark
            )
            for level in _levels(selected):
                runnable = [
                    a for a in level if a.table.key not in failed_keys and not set(a.table.upstream) & failed_keys
                ]
                failed_keys.update(a.table.key for a in level if a not in runnable)
                if not runnable:
                    continue
                result = driver.run_replay([d for a in runnable for d in a.table.dataflows], replay)
                for asset in runnable:
                    runtimes = _runtimes(result, asset.table)
                    failed = [r for r in runtimes if r.status == "failed"]
                    if failed:  # this partition and the later ones of this table stay unmaterialized
                        failures.extend(failed)
                        failed_keys.add(asset.table.key)
                        continue
                    yield dg.AssetMaterialization(
                        asset_key=asset.spec.key,
                        partition=partition_key,
                        metadata=materialization_metadata(asset.table, runtimes)
                        | {"datacoolie/window": f"[{start}, {end})"},
                    )
    _raise_failures(failures, failed_keys)


def _stored(driver: DataCoolieDriver, runtimes: Sequence[DataFlowRuntimeInfo]) -> dict[str, Any]:
    manager = driver.watermark_manager
    return {r.dataflow_id: manager.get_watermark(r.dataflow_id) if manager else None for r in runtimes}


def _runtimes(result: ExecutionResult, table: DestinationTable) -> list[DataFlowRuntimeInfo]:
    by_id: Mapping[str, DataFlowRuntimeInfo] = {r.dataflow_id: r for r in result.runtimes}
    return [by_id[i] for i in table.dataflow_ids if i in by_id]


def _raise_failures(failures: list[DataFlowRuntimeInfo], failed_keys: set[str]) -> None:
    if not failed_keys:
        return
    details = "\n".join(f"- {r.dataflow_name} [{r.dataflow_id}]: {r.error_message}" for r in failures)
    raise dg.Failure(
        description=f"{len(failed_keys)} table(s) failed or were blocked by a failed upstream:\n{details}",
        metadata={"datacoolie/failed_dataflows": [f"{r.dataflow_name} [{r.dataflow_id}]" for r in failures]},
    )
