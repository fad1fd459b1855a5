"""Assets: pure spec builders, and one ``multi_asset`` per partitioning whose body runs the driver.

The body runs only ``context.selected_asset_keys``, level by level along the lineage (a table runs
after the tables it reads, when both are selected), and yields one ``MaterializeResult`` per table
that wrote — or, for partitioned tables, one ``AssetMaterialization`` per finished partition, tagged
with the asset's code version, so a failure leaves the finished partitions materialized and "failed
and missing" retries the rest. The checks of every table that did not fail are evaluated, also when
it wrote nothing (they then judge the table as it stands).
"""

# no `from __future__ import annotations`: Dagster reads the context and config annotations at runtime

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import dagster as dg

from datacoolie_core import DataFlow, ReplayConfig
from datacoolie_core.api import DataFlowRuntimeInfo, ExecutionResult
from datacoolie_dagster.constants import (
    DATAFLOWS_RETRIED,
    DELTA_VERSION,
    FAILED_DATAFLOWS,
    FINAL_FAILURE,
    ICEBERG_SEQUENCE_NUMBER,
    NOTHING_WRITTEN,
    OUTCOME,
    WINDOW,
)
from datacoolie_dagster.location.checks import check_results, check_specs
from datacoolie_dagster.location.column_lineage import TableColumns
from datacoolie_dagster.location.dataflow_settings import FreshnessSettings
from datacoolie_dagster.location.freshness import table_freshness
from datacoolie_dagster.location.masked_steps import masked_events, masked_step
from datacoolie_dagster.location.partitions import TablePartitioning, table_partitioning
from datacoolie_dagster.location.provenance import data_version_of, provenance_tags
from datacoolie_dagster.location.resources import DataCoolieResource
from datacoolie_dagster.location.results import delta_table_metadata, materialization_metadata, open_delta_table
from datacoolie_dagster.location.snapshot import MetadataSnapshot, ensure_loaded_snapshot
from datacoolie_dagster.location.table_state import merged_figures, partition_metadata
from datacoolie_dagster.location.tables import (
    DestinationTable,
    destination_tables,
    identifier,
    lineage_levels,
    writer_rounds,
)
from datacoolie_dagster.location.translator import DataCoolieTranslator, DataCoolieTranslatorData

if TYPE_CHECKING:
    from datacoolie_core.api import DataCoolieDriver  # loads Polars and deltalake: run time only

RESOURCE_KEY = "datacoolie"


@dataclass(frozen=True)
class TableAsset:
    """A destination table with its spec and partitioning."""

    table: DestinationTable
    spec: dg.AssetSpec
    partitioning: TablePartitioning | None
    columns: TableColumns | None = None
    """Its declared and derived columns: a write completes their lineage from the Delta schema."""

    @property
    def written_columns(self) -> TableColumns:
        """What a write's column lineage starts from; a plain copy's columns come from its deps."""
        return self.columns or TableColumns.copied([d.asset_key for d in self.spec.deps])


def build_table_assets(
    dataflows: Sequence[DataFlow],
    translator: DataCoolieTranslator,
    *,
    freshness: Mapping[str, FreshnessSettings] | None = None,
) -> tuple[list[TableAsset], list[dg.AssetSpec]]:
    """Specs of every destination table (fan-in grouped) and of every external source. No I/O.

    Specs are built upstream first, so a dependency is the key the upstream's ``get_asset_spec``
    returned: overriding ``get_asset_spec`` (not only ``get_asset_key``) keeps deps consistent.
    ``freshness``: the stage defaults (``{stage or "*": settings}``, see :mod:`.freshness`).
    """
    tables = destination_tables(dataflows)
    keys = {t.key: translator.get_asset_key(t) for t in tables}  # only for members of a lineage cycle
    built: dict[str, TableAsset] = {}
    for level in lineage_levels(tables, lambda t: t):
        for table in level:
            partitioning = table_partitioning(table.dataflows)
            upstream = tuple(built[u].spec.key if u in built else keys[u] for u in table.upstream)
            settings = table_freshness(table.dataflows, freshness or {}, subject=f"table '{table.key}'")
            data = DataCoolieTranslatorData(
                table, upstream, partitioning.partitions_def if partitioning else None, freshness=settings
            )
            data = replace(data, columns=translator.get_table_columns(data))
            built[table.key] = TableAsset(table, translator.get_asset_spec(data), partitioning, data.columns)
    assets = [built[t.key] for t in tables]
    produced = {a.spec.key for a in assets}
    sources: dict[dg.AssetKey, dg.AssetSpec] = {}
    for table in tables:
        for ref in table.sources:
            spec = translator.get_source_spec(ref)
            if spec.key not in sources and spec.key not in produced:
                sources[spec.key] = spec
    return assets, list(sources.values())


def build_multi_assets(
    assets: Sequence[TableAsset],
    *,
    name_prefix: str = "datacoolie",
    pools: Mapping[str, str] | None = None,
    snapshot: MetadataSnapshot | None = None,
) -> list[dg.AssetsDefinition]:
    """One ``multi_asset(can_subset=True)`` per partitioning (mixing partitions fails at execution).

    ``pools`` (``{stage: pool}``): the tables of these stages go to ops of their own,
    ``<prefix>_<stage>_…``, that declare the stage's pool (see :mod:`datacoolie_dagster.automation.limits`).
    ``snapshot``: the parse ``assets`` were built from; a step refuses to run when the run was
    planned with another (see :mod:`.snapshot`).
    """
    pools = pools or {}
    groups: dict[tuple[str | None, object], list[TableAsset]] = {}
    for asset in assets:
        stage = asset.table.first.stage if asset.table.first.stage in pools else None
        groups.setdefault((stage, asset.partitioning.group_key if asset.partitioning else None), []).append(asset)
    built = []
    for index, ((stage, key), members) in enumerate(groups.items()):
        prefix = name_prefix if stage is None else f"{name_prefix}_{identifier(stage)}"
        name = f"{prefix}_{'tables' if key is None else f'partitioned_{index}'}"
        pool = pools[stage] if stage is not None else None
        built.append(_multi_asset(members, name=name, pool=pool, snapshot=snapshot))
    return built


def _multi_asset(
    members: list[TableAsset], *, name: str, pool: str | None, snapshot: MetadataSnapshot | None
) -> dg.AssetsDefinition:
    partitioning = members[0].partitioning
    by_key = {m.spec.key: m for m in members}
    checks = [c for m in members for c in check_specs(m)]
    _check_targets(checks, by_key)

    @dg.multi_asset(
        name=name,
        specs=[m.spec for m in members],
        check_specs=checks,
        allow_arbitrary_check_specs=True,  # checked above in linear time (Dagster's own check is quadratic)
        can_subset=True,
        partitions_def=partitioning.partitions_def if partitioning else None,
        backfill_policy=partitioning.backfill_policy if partitioning else None,
        required_resource_keys={RESOURCE_KEY},
        pool=pool,
        op_tags=snapshot.tags if snapshot is not None else None,
    )
    def _assets(
        context: dg.AssetExecutionContext,
    ) -> Iterator[dg.MaterializeResult | dg.AssetMaterialization | dg.AssetCheckResult]:
        if snapshot is not None:
            ensure_loaded_snapshot(context, snapshot)
        resource: DataCoolieResource = getattr(context.resources, RESOURCE_KEY)
        selected = [by_key[k] for k in sorted(context.selected_asset_keys, key=lambda k: k.to_user_string())]
        with masked_step():  # Dagster stores what leaves this body: errors and metadata without secrets
            if partitioning is None:
                yield from masked_events(_run_tables(context, resource, selected))
            else:
                yield from masked_events(_run_partitions(context, resource, selected, partitioning))

    return _assets


def _check_targets(checks: Sequence[dg.AssetCheckSpec], keys: Mapping[dg.AssetKey, object]) -> None:
    """Every check targets an asset of its multi-asset, as Dagster's ``multi_asset`` verifies.

    Dagster looks each check's key up in a list of the asset keys: checks x assets comparisons,
    about 60 % of the load of a 10,000-table location. The same rule against a mapping is linear,
    so ``allow_arbitrary_check_specs`` turns Dagster's copy off.
    """
    for spec in checks:
        if spec.asset_key not in keys:
            raise dg.DagsterInvalidDefinitionError(
                f"Invalid asset key {spec.asset_key} in check spec {spec.name}: it is not an asset of this multi-asset"
            )


def _levels(selected: Sequence[TableAsset]) -> list[list[TableAsset]]:
    """Selected tables in lineage order: each level only reads tables of earlier levels."""
    return lineage_levels(selected, lambda a: a.table)


@dataclass
class _Progress:
    """What failed so far in one step, and what each table loaded."""

    failures: list[DataFlowRuntimeInfo] = field(default_factory=list)
    failed_keys: set[str] = field(default_factory=set)
    """Tables that failed, or were not run because an upstream failed."""
    loaded: dict[str, list[DataFlowRuntimeInfo]] = field(default_factory=dict)

    def runnable(self, level: Sequence[TableAsset]) -> list[TableAsset]:
        """The tables of ``level`` that neither failed nor read a failed table; the others are blocked."""
        ok = [a for a in level if a.table.key not in self.failed_keys and not set(a.table.upstream) & self.failed_keys]
        self.failed_keys.update(a.table.key for a in level if a not in ok)
        return ok

    def record(self, asset: TableAsset, runtimes: list[DataFlowRuntimeInfo]) -> bool:
        """Note a table's runtimes; ``False`` when one of its dataflows failed."""
        failed = [r for r in runtimes if r.status == "failed"]
        self.failures.extend(failed)
        if failed:
            self.failed_keys.add(asset.table.key)
            return False
        self.loaded.setdefault(asset.table.key, []).extend(runtimes)
        return True


def _run_tables(
    context: dg.AssetExecutionContext, resource: DataCoolieResource, selected: Sequence[TableAsset]
) -> Iterator[dg.MaterializeResult | dg.AssetMaterialization | dg.AssetCheckResult]:
    progress = _Progress()
    with resource.driver() as driver:
        for level in _levels(selected):
            runnable = progress.runnable(level)
            done = _in_rounds(lambda flows: driver.run(dataflows=flows), [a.table for a in runnable])
            for asset in runnable:
                runtimes = _runtimes(done, asset.table)
                if not progress.record(asset, runtimes):
                    continue
                checks = _selected_checks(context, check_results(asset, runtimes, _stored(driver, asset.table)))
                delta = open_delta_table(asset.table)
                if any(r.status == "succeeded" for r in runtimes):
                    metadata = materialization_metadata(asset.table, runtimes, asset.written_columns, delta=delta)
                    yield _result(asset, metadata, checks)
                    continue
                context.log.info(f"{asset.spec.key.to_user_string()}: {NOTHING_WRITTEN}")
                if standing := delta_table_metadata(delta, asset.written_columns):
                    # the table as it stands, with the same data version: its readers stay in sync.
                    # An event, not the step's output: what reads the table in this run is skipped
                    version = standing[DELTA_VERSION]
                    yield dg.AssetMaterialization(
                        asset_key=asset.spec.key,
                        metadata=standing | {OUTCOME: NOTHING_WRITTEN},
                        tags=provenance_tags(context.instance, asset.spec, version),
                    )
                # the checks still judge the table as it stands (a selected check left unevaluated
                # makes Dagster log "did not yield or return expected outputs")
                yield from checks
    _raise_failures(progress, selected)


def _result(
    asset: TableAsset, metadata: dict[str, Any], checks: Sequence[dg.AssetCheckResult] = ()
) -> dg.MaterializeResult:
    """The materialization of a table, its data version the table's version (see :mod:`.provenance`)."""
    version = metadata.get(DELTA_VERSION, metadata.get(ICEBERG_SEQUENCE_NUMBER))
    return dg.MaterializeResult(
        asset_key=asset.spec.key, metadata=metadata, check_results=checks, data_version=data_version_of(version)
    )


def _run_partitions(
    context: dg.AssetExecutionContext,
    resource: DataCoolieResource,
    selected: Sequence[TableAsset],
    partitioning: TablePartitioning,
) -> Iterator[dg.MaterializeResult | dg.AssetMaterialization | dg.AssetCheckResult]:
    progress = _Progress()
    with resource.driver() as driver:
        keys = context.partition_keys
        for partition_key in keys:
            yield from _run_partition(
                driver,
                selected,
                partitioning,
                partition_key,
                progress,
                single=len(keys) == 1,
                instance=context.instance,
            )
        # checks judge each table after the whole range (a check result has no partition), also when
        # no partition wrote a row: an unevaluated selected check is noise in the run's log
        for asset in selected:
            runtimes = progress.loaded.get(asset.table.key, [])
            if asset.table.key not in progress.failed_keys:
                yield from _selected_checks(context, check_results(asset, runtimes, _stored(driver, asset.table)))
    _raise_failures(progress, selected)


def _run_partition(
    driver: "DataCoolieDriver",
    selected: Sequence[TableAsset],
    partitioning: TablePartitioning,
    partition_key: str,
    progress: _Progress,
    *,
    single: bool = False,
    instance: dg.DagsterInstance | None = None,
) -> Iterator[dg.MaterializeResult | dg.AssetMaterialization]:
    """Replay one partition's window, level by level; a table that failed skips its later partitions.

    The partition of a ``single``-partition run is a ``MaterializeResult``, the step's output: an
    asset downstream in the same run then loads the table (Dagster skips the steps downstream of an
    output never yielded, and an ``AssetMaterialization`` is no output). A range yields one
    ``AssetMaterialization`` per finished partition instead, with its own rows; a ``MaterializeResult``
    there would materialize every partition of the range at once. Either carries the partition's own
    figures, read from the committed rows (:func:`.table_state.partition_metadata`).
    """
    start, end = partitioning.window(partition_key)
    config = partitioning.config
    replay = ReplayConfig(start=start, end=end, chunk_column=config.chunk_column, save_watermark=config.save_watermark)
    for level in _levels(selected):
        runnable = progress.runnable(level)
        done = _in_rounds(partial(driver.run_replay, replay=replay), [a.table for a in runnable])
        for asset in runnable:
            runtimes = _runtimes(done, asset.table)
            if not progress.record(asset, runtimes):
                continue
            delta = open_delta_table(asset.table)  # once: the table's and the partition's figures read it
            metadata = materialization_metadata(asset.table, runtimes, asset.written_columns, delta=delta) | {
                WINDOW: f"[{start}, {end})"
            }
            own = partition_metadata(asset, runtimes, [partition_key], delta=delta)[partition_key]
            metadata = merged_figures(metadata, own)
            if single:
                yield _result(asset, metadata)
            else:
                version = metadata.get(DELTA_VERSION, metadata.get(ICEBERG_SEQUENCE_NUMBER))
                yield dg.AssetMaterialization(
                    asset_key=asset.spec.key,
                    partition=partition_key,
                    metadata=metadata,
                    tags=provenance_tags(instance, asset.spec, version),
                )


def _selected_checks(
    context: dg.AssetExecutionContext, results: Sequence[dg.AssetCheckResult]
) -> list[dg.AssetCheckResult]:
    """The results of the checks this step runs (a subset run may select an asset but not its checks)."""
    selected = context.selected_asset_check_keys
    return [
        r for r in results if r.asset_key and r.check_name and dg.AssetCheckKey(r.asset_key, r.check_name) in selected
    ]


def _stored(driver: "DataCoolieDriver", table: DestinationTable) -> dict[str, Any]:
    """The watermarks now stored for every dataflow of ``table`` (also those that did not run)."""
    manager = driver.watermark_manager
    return {i: manager.get_watermark(i) if manager else None for i in table.dataflow_ids}


def _in_rounds(
    run: Callable[[list[DataFlow]], ExecutionResult], tables: Sequence[DestinationTable]
) -> list[DataFlowRuntimeInfo]:
    """Run the dataflows of ``tables`` (``run`` = a driver call), fan-in writers one round at a time."""
    return [r for flows in writer_rounds(tables) for r in run(flows).runtimes]


def _runtimes(runtimes: Sequence[DataFlowRuntimeInfo], table: DestinationTable) -> list[DataFlowRuntimeInfo]:
    by_id: Mapping[str, DataFlowRuntimeInfo] = {r.dataflow_id: r for r in runtimes}
    return [by_id[i] for i in table.dataflow_ids if i in by_id]


def _raise_failures(progress: _Progress, selected: Sequence[TableAsset]) -> None:
    if not progress.failed_keys:
        return
    failures = progress.failures
    details = "\n".join(f"- {r.dataflow_name} [{r.dataflow_id}]: {r.error_message}" for r in failures)
    failed_ids = {r.dataflow_id for r in failures}
    blocked = [
        a.spec.key.to_user_string()
        for a in selected
        if a.table.key in progress.failed_keys and not failed_ids & set(a.table.dataflow_ids)
    ]
    if blocked:
        details += f"\n- not run because an upstream table failed: {', '.join(blocked)}"
    raise dg.Failure(
        description=f"{len(progress.failed_keys)} table(s) failed or were blocked by a failed upstream:\n{details}",
        metadata={
            FINAL_FAILURE: DATAFLOWS_RETRIED,
            FAILED_DATAFLOWS: [f"{r.dataflow_name} [{r.dataflow_id}]" for r in failures],
        },
    )
