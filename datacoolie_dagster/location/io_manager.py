"""Downstream reads: a user's asset takes a DataCoolie table as a Polars frame, in one line.

    @dg.asset(ins={"orders": dg.AssetIn(dg.AssetKey(["silver", "sales", "orders"]))})
    def revenue(orders: pl.LazyFrame) -> pl.DataFrame: ...

    defs = dg.Definitions.merge(build_definitions("metadata.json"), dg.Definitions(assets=[revenue]))

``build_definitions`` registers every table it builds with :class:`DataCoolieIOManager` (the spec's
``dagster/io_manager_key``), so Dagster loads such an input through it. Our multi_assets write Delta
themselves and return a ``MaterializeResult`` without a value, so Dagster never asks the IO manager
to store anything (``_store_output`` in Dagster's ``execute_step``, 1.13).

This module is cheap to import (it runs at every code-location load); the reader itself, built on
dagster-polars' ``PolarsDeltaIOManager``, lives in :mod:`.table_reads` and is imported when a run
first loads an input (dagster-polars pulls in pyarrow: about 0.4 s).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import dagster as dg

from datacoolie_dagster import constants
from datacoolie_dagster.location.assets import TableAsset

IO_MANAGER_KEY = "datacoolie_io_manager"
"""The resource key ``build_definitions`` registers :class:`DataCoolieIOManager` under."""
HISTORY = constants.HISTORY
FORMAT = constants.FORMAT
CONNECTION = constants.CONNECTION
URI = constants.URI


class DataCoolieIOManager(dg.ConfigurableIOManagerFactory):
    """Loads DataCoolie tables into downstream assets as ``pl.LazyFrame`` or ``pl.DataFrame``.

    Built on dagster-polars' ``PolarsDeltaIOManager``: the annotation decides lazy or eager,
    ``Optional[...]`` gives ``None`` for a table not written yet, input metadata ``columns`` selects
    columns and ``version`` reads an older Delta version. Unlike the stock manager, the table is found
    at its spec's ``dagster/uri`` (where DataCoolie writes it), partitions are windows of the
    dataflow's window column, and SCD2 tables give their current rows unless the input's metadata
    says ``{"datacoolie/history": True}``. See ``docs/downstream.md``.

    Nothing is ever stored through it: DataCoolie writes its tables itself.
    """

    storage_options: dict[str, str] | None = None
    """Object-store options for delta-rs (credentials, endpoint) used for every table; not needed for
    local paths. Unset, a table on object storage is read with its connection's options (below)."""
    metadata_path: str | None = None
    """The metadata whose connections give an object-store table its options (``configure.storage_options``
    and credentials from ``secrets_ref``, resolved from the environment as a run resolves them).
    :func:`~datacoolie_dagster.build_definitions` sets it."""

    def create_io_manager(self, context: dg.InitResourceContext) -> dg.IOManager:
        from datacoolie_dagster.location.table_reads import DataCoolieDeltaIOManager

        return DataCoolieDeltaIOManager(storage_options=self.storage_options, metadata_path=self.metadata_path)


def with_reads(assets: Sequence[TableAsset], io_manager_key: str = IO_MANAGER_KEY) -> list[TableAsset]:
    """``assets`` whose specs load through ``io_manager_key`` and carry what the reader needs.

    Adds ``datacoolie/format``, ``datacoolie/connection`` and, for a partitioned table, ``datacoolie/chunk_column`` (the column
    its partitions' windows select on). A spec that already names an IO manager (a translator
    override) keeps it.
    """
    return [dataclasses.replace(a, spec=_reads_spec(a, io_manager_key)) for a in assets]


def _reads_spec(asset: TableAsset, io_manager_key: str) -> dg.AssetSpec:
    connection = asset.table.first.destination.connection
    metadata: dict[str, Any] = {FORMAT: connection.format or "delta", CONNECTION: connection.name}
    column = window_column(asset)
    if column is not None:
        metadata[constants.PARTITION_COLUMN] = column
    spec = asset.spec
    if any(spec.metadata.get(k) != v for k, v in metadata.items()):  # the translator's get_metadata sets the first two
        spec = spec.replace_attributes(metadata={**spec.metadata, **metadata})
    if "dagster/io_manager_key" in spec.metadata:
        return spec
    # Dagster's own copy with the key: a fifth of rebuilding the spec, ~0.03 s of a 1,000-table load
    return spec.with_io_manager_key(io_manager_key)


def window_column(asset: TableAsset) -> str | None:
    """The column a partition of ``asset`` replays on: ``chunk_column``, else each dataflow's first
    watermark column (as the driver's replay picks it); ``None`` when unpartitioned or the table's
    dataflows pick different columns (a read of a partition then fails, naming the fix)."""
    if asset.partitioning is None:
        return None
    chosen = asset.partitioning.config.chunk_column
    columns = {chosen or next(iter(d.source.watermark_columns), None) for d in asset.table.dataflows}
    return columns.pop() if len(columns) == 1 else None


def delta_table_resources(
    defs: dg.Definitions, *, connection: str | None = None, storage_options: Any = None
) -> dict[str, dg.ConfigurableResource]:
    """A dagster-deltalake ``DeltaTableResource`` per DataCoolie Delta table of ``defs``.

    For assets that want the ``deltalake.DeltaTable`` itself (history, version, file statistics)
    rather than rows: name the table's key as a ``dep`` and take the resource, named after the key
    (``silver__sales__orders``). Rows are better read through an input (the IO manager gives
    partition windows and SCD2 current rows; a raw table gives every row).

    Args:
        defs: what :func:`~datacoolie_dagster.build_definitions` returned.
        connection: only the tables of this destination connection.
        storage_options: a dagster-deltalake storage config (``S3Config(...)``); default ``LocalConfig()``.

    Example:
        >>> datacoolie = build_definitions("metadata.json")  # doctest: +SKIP
        >>> defs = dg.Definitions.merge(datacoolie, dg.Definitions(
        ...     assets=[audit], resources=delta_table_resources(datacoolie, connection="silver")))
    """
    from dagster_deltalake import DeltaTableResource, LocalConfig

    resources: dict[str, dg.ConfigurableResource] = {}
    for spec in (s for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition) for s in a.specs):
        metadata = spec.metadata
        if metadata.get(FORMAT) != "delta" or not metadata.get(URI) or CONNECTION not in metadata:
            continue
        if connection is None or metadata[CONNECTION] == connection:
            options = storage_options or LocalConfig()
            resources[spec.key.to_python_identifier()] = DeltaTableResource(
                url=str(metadata[URI]), storage_options=options
            )
    return resources
