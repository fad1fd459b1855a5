"""``DataCoolieTranslator``: metadata -> ``AssetSpec``; subclass it to change keys, groups, metadata.

``get_asset_spec`` is the one override point (as in dagster-dbt / -sling / -dlt); the smaller
``get_*`` hooks it calls are there for the common overrides.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import dagster as dg

from datacoolie_dagster import constants
from datacoolie_dagster.location.column_lineage import TableColumns, copies, table_columns
from datacoolie_dagster.location.dataflow_settings import FreshnessSettings
from datacoolie_dagster.location.freshness import build_freshness_policy
from datacoolie_dagster.location.tables import DestinationTable, SourceRef


@dataclass(frozen=True)
class DataCoolieTranslatorData:
    """What the translator sees for one destination table."""

    table: DestinationTable
    upstream_keys: tuple[dg.AssetKey, ...]
    """Keys of this metadata's tables it reads (already translated)."""
    partitions_def: dg.PartitionsDefinition | None = None
    freshness: FreshnessSettings | None = None
    """The table's freshness settings (its own, or its stage's default)."""
    columns: TableColumns | None = None
    """Its declared and derived columns (:meth:`DataCoolieTranslator.get_table_columns`)."""


class DataCoolieTranslator:
    """Builds one ``AssetSpec`` per destination table and one per external source."""

    def get_asset_spec(self, data: DataCoolieTranslatorData) -> dg.AssetSpec:
        table = data.table
        return dg.AssetSpec(
            key=self.get_asset_key(table),
            deps=[*data.upstream_keys, *(self.get_source_key(s) for s in table.sources)],
            description=self.get_description(table),
            metadata={**self.get_metadata(table), **self.get_column_metadata(data), **_lag_metadata(data.freshness)},
            group_name=self.get_group_name(table),
            code_version=table.code_version(),
            kinds=self.get_kinds(table),
            tags={constants.STAGE: _tag_value(table.first.stage)} if table.first.stage else None,
            partitions_def=data.partitions_def,
            freshness_policy=self.get_freshness_policy(data),
            skippable=True,  # a subset run or a source without new rows materializes nothing
        )

    def get_asset_key(self, table: DestinationTable) -> dg.AssetKey:
        """Default ``[destination connection, schema (if any), table]``."""
        destination = table.first.destination
        parts = [destination.connection.name, destination.schema_name, destination.table]
        return dg.AssetKey([p for p in parts if p])

    def get_source_key(self, source: SourceRef) -> dg.AssetKey:
        """Key of an external source: ``[connection, schema (if any), table or function]``."""
        name = source.table or _short(source.detail)
        return dg.AssetKey([p for p in (source.connection, source.schema_name, name) if p])

    def get_group_name(self, table: DestinationTable) -> str:
        return _identifier(table.first.stage or "default")

    def get_description(self, table: DestinationTable) -> str:
        lines = [d.description or f"Dataflow {d.name}" for d in table.dataflows]
        return "\n\n".join(lines)

    def get_kinds(self, table: DestinationTable) -> set[str]:
        return {"polars", table.first.destination.connection.format or "delta"}

    def get_metadata(self, table: DestinationTable) -> dict[str, Any]:
        destination = table.first.destination
        metadata: dict[str, Any] = {
            "dagster/table_name": ".".join(p for p in (destination.schema_name, destination.table) if p),
            constants.DATAFLOW_IDS: table.dataflow_ids,
            constants.DATAFLOW_NAMES: [str(d.name) for d in table.dataflows],
            constants.LOAD_TYPE: destination.load_type,
            constants.DESTINATION_KEY: table.key,
        }
        if table.first.stage:
            metadata[constants.STAGE] = table.first.stage
        if table.path:
            metadata["dagster/uri"] = _absolute(table.path)
        elif destination.connection.format == "iceberg":  # located by its catalog (docs/iceberg.md)
            metadata["dagster/uri"] = _iceberg_uri(destination.connection, destination.schema_name, destination.table)
        if destination.merge_keys:
            metadata[constants.MERGE_KEYS] = destination.merge_keys_extended
        watermarks = sorted({c for d in table.dataflows for c in d.source.watermark_columns})
        if watermarks:
            metadata[constants.WATERMARK_COLUMNS] = watermarks
        # what the IO manager reads the table with (``io_manager.with_reads`` adds them when an override drops them)
        metadata[constants.FORMAT] = destination.connection.format or "delta"
        metadata[constants.CONNECTION] = destination.connection.name
        return metadata

    def get_table_columns(self, data: DataCoolieTranslatorData) -> TableColumns | None:
        """The table's columns from its metadata; a column read from a source points at that source's key.

        ``None`` for a plain copy (no transform, no query): nothing to declare, and a code location
        of thousands of them loads as fast as without lineage (its writes record every column).
        """
        table = data.table
        if all(copies(d) for d in table.dataflows):
            return None
        ours = dict(zip(table.upstream, data.upstream_keys, strict=True))
        own = self.get_asset_key(table)

        def key_of(ref: SourceRef) -> tuple[dg.AssetKey, bool]:
            upstream = table.upstream_refs.get(ref)
            if upstream is None:
                return self.get_source_key(ref), False
            return ours.get(upstream, own), True  # not among the upstream keys: the table reads itself

        return table_columns(table.dataflows, key_of)

    def get_column_metadata(self, data: DataCoolieTranslatorData) -> dict[str, Any]:
        """``dagster/column_lineage`` and ``dagster/column_schema`` of the declared and derived columns.

        The framework's audit and file columns are left to the materializations (see
        :meth:`TableColumns.declared`): every write records all written columns.
        """
        columns = data.columns.declared() if data.columns is not None else None
        if columns is None or not columns.columns:
            return {}
        return {"dagster/column_lineage": columns.lineage(), "dagster/column_schema": columns.schema()}

    def get_freshness_policy(self, data: DataCoolieTranslatorData) -> dg.FreshnessPolicy | None:
        """Dagster's freshness policy from the table's ``freshness`` settings (``None``: no policy)."""
        subject = f"table '{data.table.key}'"
        return build_freshness_policy(data.freshness, subject=subject)

    def get_partition_mapping(
        self, upstream: dg.PartitionsDefinition | None, downstream: dg.PartitionsDefinition | None
    ) -> dg.PartitionMapping | None:
        """Which partitions of an upstream table a partition of ``downstream`` reads; ``None``: Dagster's default.

        Between two time-window partitionings (same grain, or a daily upstream into a monthly
        downstream and back) it is ``TimeWindowPartitionMapping``, which Dagster also infers, made
        explicit so that a month reads exactly its days. Days outside the upstream's ``start``/``end``
        do not hold a month back: the automation only waits for upstream partitions that exist.
        """
        if isinstance(upstream, dg.TimeWindowPartitionsDefinition) and isinstance(
            downstream, dg.TimeWindowPartitionsDefinition
        ):
            return dg.TimeWindowPartitionMapping()
        return None

    def get_source_spec(self, source: SourceRef) -> dg.AssetSpec:
        """The external asset of a source nothing in this metadata produces."""
        metadata: dict[str, Any] = {constants.FORMAT: source.format}
        if source.path:
            metadata["dagster/uri"] = _absolute(source.path)
        if source.detail:
            metadata[constants.SOURCE] = source.detail
        return dg.AssetSpec(
            key=self.get_source_key(source),
            description=f"External source read by DataCoolie ({source.format}).",
            metadata=metadata,
            group_name=constants.SOURCES_GROUP,
            kinds={source.format} if source.format else None,
        )


def with_partition_mappings(
    spec: dg.AssetSpec,
    upstream_partitions: Mapping[dg.AssetKey, dg.PartitionsDefinition | None],
    translator: DataCoolieTranslator,
) -> dg.AssetSpec:
    """``spec`` whose deps on the tables of ``upstream_partitions`` carry the translator's mapping.

    A mapping already on a dep (set by a ``get_asset_spec`` override) is kept; ``spec`` itself is
    returned when no dep gets one (rebuilding an ``AssetSpec`` costs about as much as building it).
    """
    deps = []
    for dep in spec.deps:
        mapping = None
        if dep.partition_mapping is None and dep.asset_key in upstream_partitions:
            mapping = translator.get_partition_mapping(upstream_partitions[dep.asset_key], spec.partitions_def)
        deps.append(dep if mapping is None else dg.AssetDep(dep.asset_key, partition_mapping=mapping))
    if all(new is old for new, old in zip(deps, spec.deps, strict=True)):
        return spec
    return spec.replace_attributes(deps=deps)


def _lag_metadata(settings: FreshnessSettings | None) -> dict[str, Any]:
    lag = settings.max_watermark_lag if settings else None
    return {constants.MAX_WATERMARK_LAG: int(lag.total_seconds())} if lag else {}


def _absolute(path: str) -> str:
    return path if "://" in path else os.path.abspath(path)


def _identifier(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"_{cleaned}"


def _tag_value(text: str) -> str:
    """A Dagster tag value: ``[A-Za-z0-9_.-]``, at most 63 characters (a stage is free text)."""
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "_.-") else "_" for ch in text)[:63]


def _short(detail: str | None) -> str | None:
    """``fn`` for a function path ``pkg.mod.fn``; ``query_<hash>`` for SQL text."""
    if not detail:
        return None
    text = detail.strip()
    if any(ch.isspace() for ch in text):
        return f"query_{hashlib.sha1(text.encode()).hexdigest()[:8]}"
    return _identifier(text.rsplit(".", 1)[-1])


def metadata_dict(values: Mapping[str, Any]) -> dict[str, Any]:
    """Drop ``None`` values (Dagster metadata has no null)."""
    return {k: v for k, v in values.items() if v is not None}


def _iceberg_uri(connection: Any, schema_name: str | None, table: str) -> str:
    """``iceberg://<catalog>/<namespace>.<table>`` of a table whose location only its catalog knows."""
    namespace = ".".join(p for p in (connection.database, schema_name) if p)
    return f"iceberg://{connection.catalog or connection.name}/{namespace}.{table}"
