"""What a partitioned Delta table holds per Dagster partition, read from its committed rows.

The catalog's per-partition figures come from here, not from the write's totals: a commit that
put 101 rows into January and 40 into June says so partition by partition.

- ``rows``: the rows the partition's window holds at the table version (``dagster/row_count``);
- ``inserted`` / ``updated``: the rows of that version the write's dataflow runs left, by
  DataCoolie's system columns: ``__dataflow_run_id`` names the run that last wrote a row, and a
  merge keeps ``__created_at`` on update while ``__updated_at`` moves, so a row is new when the two
  are equal. A table without those columns gets ``rows`` only.

One scan of at most four columns, pruned by the Delta file statistics to the windows asked about,
of the table the step already opened (:func:`.results.open_delta_table`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from datacoolie_core.api import DataFlowRuntimeInfo, WindowSpec
from datacoolie_dagster import constants
from datacoolie_dagster.location.partitions import TablePartitioning
from datacoolie_dagster.location.results import open_delta_path
from datacoolie_dagster.location.touched_partitions import partition_rows, window_spec

if TYPE_CHECKING:
    import polars as pl
    from deltalake import DeltaTable

    from datacoolie_dagster.location.assets import TableAsset

RUN_ID, CREATED_AT, UPDATED_AT = "__dataflow_run_id", "__created_at", "__updated_at"


@dataclass(frozen=True)
class PartitionCounts:
    """One partition at one table version."""

    rows: int
    """Rows the partition's window holds."""
    inserted: int | None = None
    """Rows the write added to the partition (``None``: the table has no system columns)."""
    updated: int | None = None
    """Rows the write changed in the partition."""


def table_window_spec(asset: TableAsset) -> WindowSpec | None:
    """The window column of a partitioned table: the first of its dataflows that names one."""
    partitioning = asset.partitioning
    if partitioning is None:
        return None
    return next((s for d in asset.table.dataflows if (s := window_spec(partitioning, d)) is not None), None)


def merged_figures(metadata: Mapping[str, Any], own: Mapping[str, int | None]) -> dict[str, Any]:
    """One partition's metadata: the whole write's ``metadata`` with the partition's ``own`` figures.

    A figure in ``own`` is the partition's number, or ``None`` when it cannot be told per partition:

    - a number, zero included (the write left nothing there), replaces the write's total;
    - ``None`` drops the key: the write's total is not the partition's, and no figure beats a wrong one;
    - a key ``own`` does not name keeps the write's value.
    """
    unknown = {key for key, figure in own.items() if figure is None}
    return {key: value for key, value in {**metadata, **own}.items() if key not in unknown}


def partition_metadata(
    asset: TableAsset, runtimes: Sequence[DataFlowRuntimeInfo], keys: Sequence[str], *, delta: DeltaTable | None
) -> dict[str, dict[str, int | None]]:
    """Per partition key, its own figures after the write of ``runtimes``: the rows it holds
    (``dagster/row_count``) and the rows the write inserted and updated in it, read from the
    committed rows of ``delta`` (the table the step opened; read as of the write's last version when
    a later one has landed since). A figure that cannot be told per partition is ``None``, for
    :func:`merged_figures` to leave out: never the whole write's. A table whose rows cannot be read
    per partition (not Delta, no window column) gets no figure at all.
    """
    figures: dict[str, dict[str, int | None]] = {k: {} for k in keys}
    partitioning, path = asset.partitioning, asset.table.path
    spec = table_window_spec(asset)
    if partitioning is None or spec is None or not path or asset.table.first.destination.connection.format != "delta":
        return figures
    writes = [c for r in runtimes for c in (r.chunks or [r])]  # a replay's rows carry its chunks' run ids
    versions = [r.destination.table_version for r in writes if r.destination.table_version is not None]
    run_ids = [r.dataflow_run_id for r in writes if r.transform.rows_out]
    written = _as_of(delta, path, max(versions) if versions else None)
    counts = {} if written is None else partition_counts(written, partitioning, spec, run_ids=run_ids, keys=keys)
    deleted = sum(r.destination.rows_deleted for r in writes)
    for key, count in counts.items():
        own: dict[str, int | None] = {"dagster/row_count": count.rows}
        if count.inserted is not None and count.updated is not None:
            own |= {constants.ROWS_INSERTED: count.inserted, constants.ROWS_UPDATED: count.updated}
        if deleted == 0:
            own[constants.ROWS_DELETED] = 0
        figures[key] = own
    for key in keys:
        if constants.ROWS_INSERTED not in figures[key]:
            figures[key] |= dict.fromkeys((constants.ROWS_INSERTED, constants.ROWS_UPDATED), None)
        if constants.ROWS_DELETED not in figures[key]:
            figures[key][constants.ROWS_DELETED] = None
    return figures


def _as_of(table: DeltaTable | None, path: str, version: int | None) -> DeltaTable | None:
    """``table`` at ``version`` (``None``: as opened): the opened snapshot itself when it is that
    version, else that version opened (a later write landed after the one described)."""
    if table is None or version is None or table.version() == version:
        return table
    return open_delta_path(path, version)


def partition_counts(
    table: DeltaTable,
    partitioning: TablePartitioning,
    spec: WindowSpec,
    *,
    run_ids: Collection[str] = (),
    keys: Collection[str] | None = None,
) -> dict[str, PartitionCounts]:
    """Per partition key (``keys``, default every partition holding rows), what ``table`` holds at its
    loaded version.

    ``run_ids``: the dataflow runs of the write whose inserted and updated rows are counted.
    """
    import polars as pl

    frame = _scan(table, spec, partitioning, keys)
    if frame is None:
        return {}
    column = frame.columns[0]
    everything = _per_partition(partitioning, spec, frame, column)
    inserted = updated = None
    if run_ids and {RUN_ID, CREATED_AT, UPDATED_AT} <= set(frame.columns):
        written = frame.filter(pl.col(RUN_ID).is_in(list(run_ids)))
        new = pl.col(CREATED_AT) == pl.col(UPDATED_AT)
        inserted = _per_partition(partitioning, spec, written.filter(new), column)
        updated = _per_partition(partitioning, spec, written.filter(~new), column)
    wanted = everything.keys() if keys is None else keys
    return {
        key: PartitionCounts(
            rows=everything.get(key, 0),
            inserted=None if inserted is None else inserted.get(key, 0),
            updated=None if updated is None else updated.get(key, 0),
        )
        for key in wanted
    }


def _scan(
    table: DeltaTable, spec: WindowSpec, partitioning: TablePartitioning, keys: Collection[str] | None
) -> pl.DataFrame | None:
    """The window column (first) and the system columns of the rows in ``keys``' windows."""
    import polars as pl

    from datacoolie_core.api import find_column

    names = [f.name for f in table.schema().fields]
    column = find_column(names, spec.column)
    if column is None:
        return None
    columns = [column, *(c for c in (RUN_ID, CREATED_AT, UPDATED_AT) if c in names)]
    scan = pl.scan_delta(table).select(columns)
    if keys:
        windows = [partitioning.window(k) for k in keys]
        scan = scan.filter(_within(pl.col(column), min(w[0] for w in windows), max(w[1] for w in windows), scan))
    return scan.collect()


def _within(column: pl.Expr, start: Any, end: Any, scan: pl.LazyFrame) -> pl.Expr:
    """``start <= column < end``, the bounds cast to the column's own type (a naive datetime is UTC)."""
    import polars as pl

    dtype = scan.collect_schema()[column.meta.output_name()]
    return (column >= pl.lit(start).cast(dtype)) & (column < pl.lit(end).cast(dtype))


def _per_partition(
    partitioning: TablePartitioning, spec: WindowSpec, frame: pl.DataFrame, column: str
) -> Mapping[str, int]:
    from datacoolie_core.api import touched_windows

    touched = touched_windows(frame.select(column), WindowSpec(column=column, every=spec.every, origin=spec.origin))
    return partition_rows(partitioning, touched).rows if touched is not None else {}
