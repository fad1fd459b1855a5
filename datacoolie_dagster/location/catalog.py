"""What a write materialized, as Dagster records it; and the run observer that records CLI runs.

:func:`build_materializations` turns the driver's runtime records into the events a Dagster run of
the same tables records: one per unpartitioned table written, and for a partitioned table one per
partition whose window received rows (from the touched windows the core reports, see
:mod:`.touched_partitions`) or, for a replay chunk that is exactly a partition, that partition. The stage jobs
yield these events; :class:`DagsterCatalog` reports them as runless events after a
``datacoolie run`` / ``replay``, so the catalog is true whichever way a table was loaded.

The observer is the ``dagster`` entry of the ``datacoolie.run_observers`` group
(``datacoolie_dagster_hook.run_observer``, which imports this module only when a Dagster instance is
configured: ``--observer dagster=<home>`` or ``DAGSTER_HOME``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg

from datacoolie_core import DataCoolieError, FileProvider
from datacoolie_core.api import (
    DataFlowRuntimeInfo,
    ExecutionResult,
    ReplayConfig,
    RunContext,
    WindowSpec,
    is_metadata_url,
    metadata_file_in,
    url_provider,
)
from datacoolie_dagster import constants
from datacoolie_dagster.location.assets import TableAsset, build_table_assets
from datacoolie_dagster.location.partitions import TablePartitioning
from datacoolie_dagster.location.provenance import provenance_tags
from datacoolie_dagster.location.results import materialization_metadata, open_delta_table
from datacoolie_dagster.location.table_state import merged_figures, partition_metadata
from datacoolie_dagster.location.touched_partitions import PartitionRows, partition_rows, window_spec, window_specs
from datacoolie_dagster.location.translator import DataCoolieTranslator

if TYPE_CHECKING:
    from deltalake import DeltaTable


def build_materializations(
    assets: Sequence[TableAsset],
    runtimes: Sequence[DataFlowRuntimeInfo],
    *,
    replay: ReplayConfig | None = None,
    recorded_by: str | None = None,
    instance: dg.DagsterInstance | None = None,
) -> list[dg.AssetMaterialization]:
    """The materializations of the tables ``runtimes`` wrote, in table order.

    ETL runtimes that succeeded are writes; a replay's record (``replay``: its config) contributes
    each chunk that did not fail. A chunk whose window and column are a partition's is that
    partition, replayed (even empty, as in a partition run); any other chunk is a write. A
    partition's event carries that partition's own counts, read from the committed rows (see
    :mod:`.table_state`). With the ``instance``, each event carries the data versions of the
    table's upstreams as they are now (see :mod:`.provenance`).
    """
    by_dataflow = {i: a for a in assets for i in a.table.dataflow_ids}
    writes: dict[str, list[DataFlowRuntimeInfo]] = {}
    chunks: dict[str, list[DataFlowRuntimeInfo]] = {}
    for runtime in runtimes:
        asset = by_dataflow.get(runtime.dataflow_id)
        if asset is None:
            continue
        if runtime.chunks:
            chunks.setdefault(asset.table.key, []).extend(c for c in runtime.chunks if c.status != "failed")
        elif runtime.status == "succeeded":
            writes.setdefault(asset.table.key, []).append(runtime)
    events: list[dg.AssetMaterialization] = []
    for asset in assets:
        if asset.table.key not in writes and asset.table.key not in chunks:
            continue
        delta = open_delta_table(asset.table)  # once per table: every event of it reads this snapshot
        found: list[_Event] = []
        if asset.table.key in writes:
            found += _write_events(asset, writes[asset.table.key], delta)
        if asset.table.key in chunks:
            aligned = replay is not None and _replays_partition_column(asset, replay)
            found += _replay_events(asset, chunks[asset.table.key], delta, aligned=aligned)
        extra = {constants.RECORDED_BY: recorded_by} if recorded_by else {}
        events += [e.build(asset, instance, extra) for e in found]
    return events


@dataclass(frozen=True)
class _Event:
    """A materialization before its tags: the tags read the instance, once the whole table is known."""

    metadata: dict[str, Any]
    partition: str | None = None

    def build(
        self,
        asset: TableAsset,
        instance: dg.DagsterInstance | None,
        extra: Mapping[str, Any],
    ) -> dg.AssetMaterialization:
        version = self.metadata.get(constants.DELTA_VERSION, self.metadata.get(constants.ICEBERG_SEQUENCE_NUMBER))
        return dg.AssetMaterialization(
            asset_key=asset.spec.key,
            partition=self.partition,
            metadata={**self.metadata, **extra},
            tags=provenance_tags(instance, asset.spec, version) or None,
        )


def _write_events(asset: TableAsset, runtimes: list[DataFlowRuntimeInfo], delta: DeltaTable | None) -> list[_Event]:
    """One write of a table: one event, or one per touched partition (``delta``: the table as opened after it)."""
    metadata = materialization_metadata(asset.table, runtimes, asset.written_columns, delta=delta)
    if asset.partitioning is None:
        return [_Event(metadata)]
    touched = _touched_partitions(asset.partitioning, runtimes)
    if touched is None:  # a write whose window column could not be read: say it was written, unpartitioned
        return [_Event(metadata)]
    own = partition_metadata(asset, runtimes, touched.keys, delta=delta)
    return [
        _Event(
            merged_figures(metadata | _partition_metadata(asset.partitioning, key, rows), own.get(key, {})),
            partition=key,
        )
        for key, rows in touched.rows.items()
    ]


def _replay_events(
    asset: TableAsset, chunks: list[DataFlowRuntimeInfo], delta: DeltaTable | None, *, aligned: bool
) -> list[_Event]:
    """Replay chunks: a chunk that is exactly a partition records it; any other chunk is a write.

    ``aligned``: the replay selected on the partitions' column (else no chunk is a partition).
    """
    if asset.partitioning is None:
        written = [c for c in chunks if c.status == "succeeded"]
        return _write_events(asset, written, delta) if written else []
    by_chunk: dict[str, list[DataFlowRuntimeInfo]] = {}
    for chunk in chunks:
        by_chunk.setdefault(str((chunk.replay_chunk or {}).get("key")), []).append(chunk)
    events = []
    for members in by_chunk.values():
        key = _chunk_partition(asset.partitioning, members[0].replay_chunk or {}) if aligned else None
        if key is not None:
            touched = _touched_partitions(asset.partitioning, members)
            rows = touched.rows.get(key, 0) if touched is not None else None
            metadata = materialization_metadata(asset.table, members, asset.written_columns, delta=delta)
            own = partition_metadata(asset, members, [key], delta=delta).get(key, {})
            events.append(
                _Event(
                    merged_figures(metadata | _partition_metadata(asset.partitioning, key, rows), own), partition=key
                )
            )
        elif written := [c for c in members if c.status == "succeeded"]:
            events += _write_events(asset, written, delta)
    return events


def _replays_partition_column(asset: TableAsset, replay: ReplayConfig) -> bool:
    """Whether every dataflow of the table replays on the column its partitions select on."""
    for dataflow in asset.table.dataflows:
        replayed = replay.chunk_column or next(iter(dataflow.source.watermark_columns), None)
        spec = window_spec(asset.partitioning, dataflow) if asset.partitioning is not None else None
        if spec is None or replayed is None or replayed.lower() != spec.column.lower():
            return False
    return True


def _touched_partitions(partitioning: TablePartitioning, runtimes: list[DataFlowRuntimeInfo]) -> PartitionRows | None:
    """Rows per partition over every write of ``runtimes``; ``None`` when a write's windows are unknown."""
    rows: dict[str, int] = {}
    outside = 0
    for runtime in runtimes:
        if runtime.transform.rows_out == 0:
            continue  # nothing was written
        touched = runtime.destination.touched
        if touched is None:
            return None
        found = partition_rows(partitioning, touched)
        outside += found.outside
        for key, count in found.rows.items():
            rows[key] = rows.get(key, 0) + count
    return PartitionRows(dict(sorted(rows.items(), key=lambda item: _order(partitioning, item[0]))), outside)


def _chunk_partition(partitioning: TablePartitioning, chunk: Mapping[str, Any]) -> str | None:
    """The partition whose window is exactly the chunk's ``[start, end)``, if there is one."""
    start, end = chunk.get("start"), chunk.get("end")
    if start is None or end is None:
        return None
    for key in _candidates(partitioning, start):
        if tuple(map(_utc, partitioning.window(key))) == (_utc(start), _utc(end)):
            return key
    return None


def _candidates(partitioning: TablePartitioning, start: Any) -> list[str]:
    """The partition a chunk starting at ``start`` could be (at most one)."""
    definition = partitioning.partitions_def
    if isinstance(definition, dg.TimeWindowPartitionsDefinition):
        moment = _utc(start)
        if not isinstance(moment, datetime) or moment < definition.start:
            return []
        if definition.end is not None and moment >= definition.end:
            return []
        return [definition.get_partition_key_for_timestamp(moment.timestamp())]
    return [k for k in definition.get_partition_keys() if partitioning.window(k)[0] == start]


def _partition_metadata(partitioning: TablePartitioning, key: str, rows: int | None = None) -> dict[str, Any]:
    start, end = partitioning.window(key)
    metadata: dict[str, Any] = {constants.WINDOW: f"[{start}, {end})"}
    if rows is not None:
        metadata[constants.PARTITION_ROWS] = rows
    return metadata


def _order(partitioning: TablePartitioning, key: str) -> Any:
    return _utc(partitioning.window(key)[0])


def _utc(value: Any) -> Any:
    """Datetimes (naive = UTC, as replay reads them) and dates as aware UTC datetimes."""
    if isinstance(value, datetime):
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    return value


class DagsterCatalog:
    """A run observer recording ``datacoolie run`` / ``replay`` in a Dagster instance.

    Asset keys, partitions and code versions are those of a code location built from the same
    metadata with the default :class:`DataCoolieTranslator`.
    """

    def __init__(self, home: Path, assets: Sequence[TableAsset], context: RunContext) -> None:
        self.home = home
        self.assets = list(assets)
        self.context = context

    @classmethod
    def open(cls, home: str, context: RunContext) -> DagsterCatalog:
        """The catalog of the instance at ``home`` for the tables of the run's metadata.

        Raises:
            DataCoolieError: ``home`` is not an existing folder.
        """
        path = Path(home).expanduser().absolute()
        if not path.is_dir():
            raise DataCoolieError(
                f"Dagster home '{home}' is not a folder; create it, or fix DAGSTER_HOME / --observer dagster=<home>"
            )
        provider = _provider(str(context.metadata_path))
        try:
            assets, _ = build_table_assets(provider.get_dataflows(), DataCoolieTranslator())
        finally:
            provider.close()
        return cls(path, assets, context)

    def windows(self) -> Mapping[str, WindowSpec]:
        return window_specs(self.assets)

    def record(self, result: ExecutionResult) -> str:
        context = self.context
        with dg.DagsterInstance.from_config(str(self.home)) as instance:
            events = build_materializations(
                self.assets,
                result.runtimes,
                replay=context.replay,
                recorded_by=f"datacoolie {context.command}",
                instance=instance,
            )
            for event in events:
                instance.report_runless_asset_event(event)
        tables = len({e.asset_key for e in events})
        partitions = sum(e.partition is not None for e in events)
        if not events:
            return f"dagster: recorded nothing in the instance at {self.home} (no table was written)"
        return (
            f"dagster: recorded {len(events)} materialization(s) of {tables} table(s)"
            f"{f' ({partitions} partition(s))' if partitions else ''} in the instance at {self.home}"
        )


def _provider(location: str) -> FileProvider:
    """The run's metadata, read only: an API or database URL reads no state, so any state root does."""
    if is_metadata_url(location):
        return url_provider(location, Path(tempfile.gettempdir()) / "datacoolie-catalog")
    return FileProvider(metadata_file_in(location))
