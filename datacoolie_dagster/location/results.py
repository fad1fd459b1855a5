"""Materialization metadata from the driver's runtime records and the table's Delta log (no data file read).

A step opens a written Delta table once (:func:`open_delta_table`) and hands that snapshot to
everything that describes the write: the table's figures here and a partition's own figures
(:mod:`.table_state`), so they read one log, once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import dagster as dg

from datacoolie_core.api import DataFlowRuntimeInfo, delta_storage_options, table_uri
from datacoolie_dagster import constants
from datacoolie_dagster.location.column_lineage import TableColumns, column_description, written_lineage
from datacoolie_dagster.location.tables import DestinationTable

if TYPE_CHECKING:
    from deltalake import DeltaTable


def open_delta_table(table: DestinationTable) -> DeltaTable | None:
    """``table``'s Delta table at its latest version; ``None`` when it is not a Delta destination or
    there is no table at its path yet. Only the log is read."""
    path = table.path
    if not path or table.first.destination.connection.format != "delta":
        return None
    return open_delta_path(path)


def open_delta_path(path: str, version: int | None = None) -> DeltaTable | None:
    """The Delta table at ``path``, at ``version`` (``None``: the latest); ``None`` when there is none."""
    from deltalake import DeltaTable  # in the step that wrote: a code server never loads deltalake for it
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(table_uri(path), version=version, storage_options=delta_storage_options(path))
    except (TableNotFoundError, OSError):
        return None


def materialization_metadata(
    table: DestinationTable,
    runtimes: Sequence[DataFlowRuntimeInfo],
    columns: TableColumns | None = None,
    *,
    delta: DeltaTable | None,
) -> dict[str, Any]:
    """Rows, watermarks, Delta version and duration of the dataflows that wrote ``table``.

    ``delta``: the table as :func:`open_delta_table` opened it after the write (its version, row
    count and schema are the table's figures). With ``columns`` (the table's declared columns), the
    written schema carries their descriptions and ``dagster/column_lineage`` covers every written column.
    """
    destination = [r.destination for r in runtimes]
    metadata: dict[str, Any] = {
        constants.ROWS_READ: sum(r.source.rows_read for r in runtimes),
        constants.ROWS_INSERTED: sum(d.rows_inserted for d in destination),
        constants.ROWS_UPDATED: sum(d.rows_updated for d in destination),
        constants.ROWS_DELETED: sum(d.rows_deleted for d in destination),
        constants.DURATION: round(sum(r.duration_seconds or 0.0 for r in runtimes), 3),
        constants.RUN_IDS: [r.dataflow_run_id for r in runtimes],
        constants.WATERMARK_BEFORE: _json([r.source.watermark_before for r in runtimes]),
        constants.WATERMARK_AFTER: _json([r.source.watermark_after for r in runtimes]),
    }
    versions = [d.table_version for d in destination if d.table_version is not None]
    if versions:
        iceberg = table.first.destination.connection.format == "iceberg"
        metadata[constants.ICEBERG_SEQUENCE_NUMBER if iceberg else constants.DELTA_VERSION] = max(versions)
    metadata.update(delta_table_metadata(delta, columns))
    return metadata


def delta_table_metadata(table: DeltaTable | None, columns: TableColumns | None = None) -> dict[str, Any]:
    """The Delta version, ``dagster/row_count`` and ``dagster/column_schema`` of ``table`` from its
    Delta log (no data file is read); empty without a table.

    With ``columns``: descriptions on the schema, and ``dagster/column_lineage`` of every written column.
    """
    if table is None:
        return {}
    fields = table.schema().fields
    described = written_lineage(columns, [f.name for f in fields]) if columns else {}
    metadata: dict[str, Any] = {
        constants.DELTA_VERSION: table.version(),
        "dagster/column_schema": dg.TableSchema(
            columns=[
                dg.TableColumn(
                    f.name,
                    str(getattr(f.type, "type", f.type)),
                    description=column_description(described[f.name]) if f.name in described else None,
                )
                for f in fields
            ]
        ),
    }
    if described:
        metadata["dagster/column_lineage"] = dg.TableColumnLineage(
            deps_by_column={
                name: [dg.TableColumnDep(asset_key=k, column_name=c) for k, c in col.deps]
                for name, col in described.items()
            }
        )
    counts = table.get_add_actions(flatten=True).column("num_records").to_pylist()
    if all(c is not None for c in counts):
        metadata["dagster/row_count"] = int(sum(counts))
    return metadata


def _json(values: list[Any]) -> dg.MetadataValue:
    present = [v for v in values if v]
    return dg.MetadataValue.json(json.loads(json.dumps(present[0] if len(present) == 1 else present, default=str)))
