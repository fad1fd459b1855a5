"""Load strategies on Iceberg tables (D-16): append, overwrite, merge_upsert, merge_overwrite, scd2.

Each strategy stages its changes on ONE pyiceberg transaction, which the writer commits once with
the write's marker: a merge is a delete of the matched rows plus an append (copy-on-write), two
snapshots made visible by one catalog commit, so no reader ever sees one without the other.
Semantics follow the Delta strategies (:mod:`~datacoolie_core.destinations.load_strategies`):
upserts keep ``__created_at``, duplicate batch keys never duplicate a row, scd2 is planned by
:mod:`~datacoolie_core.destinations.scd2_history`.

Schema evolution: new batch columns are added to the table (``union_by_name``) by every strategy;
``overwrite`` also drops the columns the batch no longer has (the Delta ``overwrite`` replaces the
schema too). Types the Iceberg spec lacks are converted first (:func:`iceberg_frame`).
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import polars as pl
import pyarrow as pa

from datacoolie_core import columns as fc
from datacoolie_core.destinations.base import ReplaceWindow
from datacoolie_core.destinations.scd2_history import MATCH_FROM, Scd2Plan, check_scd2_batch, plan_scd2
from datacoolie_core.errors import DestinationError
from datacoolie_core.models.runtime import DestinationRuntimeInfo

if TYPE_CHECKING:
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table, Transaction


@dataclass(frozen=True)
class IcebergTarget:
    """One write: the table as loaded (``None``: created by this write) and its open transaction."""

    name: str
    table: Table | None
    tx: Transaction
    properties: dict[str, str]
    """The snapshot summary properties every snapshot of the write carries (the marker)."""
    merge_keys: tuple[str, ...] = ()
    window: ReplaceWindow | None = None


class IcebergStrategy(Protocol):
    """Stages ``frame`` on ``target.tx`` (committed by the writer); returns the row counts."""

    def __call__(self, frame: pl.DataFrame, target: IcebergTarget) -> DestinationRuntimeInfo: ...


def iceberg_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` in types Iceberg has: microsecond UTC timestamps, signed integers, plain strings."""
    casts: dict[str, pl.DataType] = {}
    for name, dtype in frame.schema.items():
        if isinstance(dtype, pl.Datetime) and (dtype.time_unit == "ns" or dtype.time_zone not in (None, "UTC")):
            casts[name] = pl.Datetime("us", "UTC" if dtype.time_zone else None)
        elif isinstance(dtype, pl.Categorical | pl.Enum):
            casts[name] = pl.String()
        elif dtype in (pl.UInt8, pl.UInt16, pl.Int8, pl.Int16):
            casts[name] = pl.Int32()
        elif dtype in (pl.UInt32, pl.UInt64):
            casts[name] = pl.Int64()
    if not casts:
        return frame
    return frame.with_columns(
        pl.col(n).dt.convert_time_zone("UTC").dt.cast_time_unit("us")
        if isinstance(t, pl.Datetime) and t.time_zone
        else pl.col(n).cast(t, strict=True)
        for n, t in casts.items()
    )


def arrow_rows(frame: pl.DataFrame, tx: Transaction) -> pa.Table:
    """``frame`` as Arrow, its columns non-nullable where the table requires them (Polars exports all nullable).

    Raises:
        DestinationError: a column the table requires (``NOT NULL``) has nulls in the batch.
    """
    rows = frame.to_arrow()
    required = {f.name for f in tx.table_metadata.schema().fields if f.required} & set(rows.column_names)
    if not required:
        return rows
    nulls = sorted(name for name in required if rows.column(name).null_count)
    if nulls:
        raise DestinationError(
            f"the Iceberg table requires {', '.join(nulls)} (NOT NULL) but the batch has nulls there; "
            "filter or fill them upstream (transform.value_rules fill_null)"
        )
    fields = [f.with_nullable(False) if f.name in required else f for f in rows.schema]
    return rows.cast(pa.schema(fields, metadata=rows.schema.metadata))


def evolve_schema(tx: Transaction, frame: pl.DataFrame, *, drop_missing: bool = False) -> None:
    """Add the batch's new columns (and, ``drop_missing``, drop the columns it lacks) in ``tx``.

    Iceberg adds a column last; a new business column is moved before the framework's trailing
    columns (D-18), and with ``drop_missing`` the schema takes the batch's order, as Delta's would.
    """
    current = [f.name for f in tx.table_metadata.schema().fields]
    new = [c for c in frame.columns if c not in current]
    gone = [c for c in current if c not in frame.columns] if drop_missing else []
    if not new and not gone and (not drop_missing or current == frame.columns):
        return
    with tx.update_schema() as update:
        update.union_by_name(arrow_rows(frame, tx).schema)
        for name in gone:
            update.delete_column(name)
        if drop_missing:
            update.move_first(frame.columns[0])
            for before, name in itertools.pairwise(frame.columns):
                update.move_after(name, before)
            return
        anchor = next((c for c in current if c in fc.TRAILING_COLUMNS), None)
        for name in new:
            if anchor is not None and name not in fc.TRAILING_COLUMNS:
                update.move_before(name, anchor)


def append(frame: pl.DataFrame, target: IcebergTarget) -> DestinationRuntimeInfo:
    """D-06: add the rows; new columns join the schema, missing ones read as null."""
    evolve_schema(target.tx, frame)
    target.tx.append(arrow_rows(frame, target.tx), snapshot_properties=target.properties)
    return DestinationRuntimeInfo(rows_written=frame.height, rows_inserted=frame.height)


def overwrite(frame: pl.DataFrame, target: IcebergTarget) -> DestinationRuntimeInfo:
    """D-07: replace rows and schema; earlier snapshots stay readable until they are expired."""
    evolve_schema(target.tx, frame, drop_missing=target.table is not None)
    if target.table is None:
        target.tx.append(arrow_rows(frame, target.tx), snapshot_properties=target.properties)
    else:
        target.tx.overwrite(arrow_rows(frame, target.tx), snapshot_properties=target.properties)
    return DestinationRuntimeInfo(rows_written=frame.height, rows_inserted=frame.height)


def merge_upsert(frame: pl.DataFrame, target: IcebergTarget) -> DestinationRuntimeInfo:
    """D-08: replace the rows of the batch's keys by the batch (``__created_at`` kept), insert new keys."""
    keys = list(target.merge_keys)
    batch = frame.unique(subset=keys, keep="last", maintain_order=True)
    evolve_schema(target.tx, batch)
    updated = 0
    if target.table is not None:
        match = key_filter(batch.select(keys))
        kept = [*keys, fc.CREATED_AT] if fc.CREATED_AT in batch.columns else keys
        stored = read_rows(target.table, match, kept)
        updated = batch.join(stored.select(keys), on=keys, how="semi", nulls_equal=True).height
        if fc.CREATED_AT in kept and stored.height:
            batch = _keep_created_at(batch, stored, keys)
        if stored.height:
            target.tx.delete(match, snapshot_properties=target.properties)
    target.tx.append(arrow_rows(batch, target.tx), snapshot_properties=target.properties)
    return DestinationRuntimeInfo(rows_written=batch.height, rows_inserted=batch.height - updated, rows_updated=updated)


def _keep_created_at(batch: pl.DataFrame, stored: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    first = stored.group_by(keys).agg(pl.col(fc.CREATED_AT).min().alias("__datacoolie_stored_created"))
    joined = batch.join(first, on=keys, how="left", nulls_equal=True, maintain_order="left")
    stored_created = pl.col("__datacoolie_stored_created").cast(batch.schema[fc.CREATED_AT])
    return joined.with_columns(pl.coalesce(stored_created, pl.col(fc.CREATED_AT)).alias(fc.CREATED_AT)).select(
        batch.columns
    )


def merge_overwrite(frame: pl.DataFrame, target: IcebergTarget) -> DestinationRuntimeInfo:
    """D-09/D-10: delete every row whose key tuple is in the batch (and, with a window, inside it); append."""
    evolve_schema(target.tx, frame)
    deleted = 0
    if target.table is not None:
        condition = key_filter(frame.select(list(target.merge_keys)).unique())
        if target.window is not None:
            condition = condition | window_filter(target.window)
        deleted = count_rows(target.table, condition)
        if deleted:
            target.tx.delete(condition, snapshot_properties=target.properties)
    target.tx.append(arrow_rows(frame, target.tx), snapshot_properties=target.properties)
    return DestinationRuntimeInfo(rows_written=frame.height, rows_inserted=frame.height, rows_deleted=deleted)


def scd2(frame: pl.DataFrame, target: IcebergTarget) -> DestinationRuntimeInfo:
    """D-11 as the Delta scd2 (docs/scd2.md): the plan's stored rows rewritten, new versions appended."""
    keys = list(target.merge_keys)
    check_scd2_batch(frame, f"Iceberg table '{target.name}'")
    history = None if target.table is None else read_history(target.table, frame, keys, target.name)
    plan = plan_scd2(frame, history, keys)
    evolve_schema(target.tx, plan.inserts)
    rows = plan.inserts
    if history is not None and not (plan.updates.is_empty() and plan.deletes.is_empty()):
        rewritten = _rewritten(plan, history, keys)
        target.tx.delete(_instants(plan, keys), snapshot_properties=target.properties)
        rows = pl.concat([rows, rewritten], how="diagonal_relaxed")
    if rows.height:
        target.tx.append(arrow_rows(rows, target.tx), snapshot_properties=target.properties)
    return DestinationRuntimeInfo(
        rows_written=rows.height,
        rows_inserted=plan.inserts.height,
        rows_updated=plan.updates.height,
        rows_deleted=plan.deletes.height,
    )


def _rewritten(plan: Scd2Plan, history: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The stored rows the plan moves, whole (Iceberg rewrites rows, it does not update columns)."""
    moved = [c for c in plan.updates.columns if c not in keys and c != MATCH_FROM]
    matched = history.drop(moved).join(
        plan.updates, left_on=[*keys, fc.VALID_FROM], right_on=[*keys, MATCH_FROM], how="inner", nulls_equal=True
    )
    return matched.select(history.columns)


def _instants(plan: Scd2Plan, keys: list[str]) -> BooleanExpression:
    rows = pl.concat([plan.updates.select(*keys, MATCH_FROM), plan.deletes.select(*keys, MATCH_FROM)]).unique()
    return key_filter(rows.rename({MATCH_FROM: fc.VALID_FROM}))


def read_history(table: Table, batch: pl.DataFrame, keys: Sequence[str], name: str) -> pl.DataFrame:
    """Every stored row (all versions, all columns) of the batch's keys."""
    columns = {f.name for f in table.schema().fields}
    missing = [c for c in (*keys, fc.VALID_FROM, fc.VALID_TO, fc.IS_CURRENT) if c not in columns]
    if missing:
        raise DestinationError(
            f"Iceberg table '{name}' is not an scd2 table: it has no column(s) {', '.join(missing)}; "
            "write scd2 to a new table or overwrite this one first"
        )
    return read_rows(table, key_filter(batch.select(list(keys)).unique()), None)


# Reads and predicates ---------------------------------------------------------------------------


def read_rows(table: Table, condition: BooleanExpression, columns: Sequence[str] | None) -> pl.DataFrame:
    """The table's rows matching ``condition`` (only ``columns``, when given), at its loaded snapshot."""
    fields = tuple(columns) if columns else ("*",)
    frame = pl.from_arrow(table.scan(row_filter=condition, selected_fields=fields).to_arrow())
    assert isinstance(frame, pl.DataFrame)
    return frame


def count_rows(table: Table, condition: BooleanExpression) -> int:
    return int(table.scan(row_filter=condition).count()) if table.current_snapshot() is not None else 0


def key_filter(keys: pl.DataFrame) -> BooleanExpression:
    """Rows whose columns equal one row of ``keys`` (null equals null), as a pyiceberg expression."""
    from pyiceberg.expressions import AlwaysFalse, In, Or

    names = keys.columns
    if len(names) == 1:
        values = keys[names[0]].drop_nulls().unique().to_list()
        parts: list[BooleanExpression] = [In(term=names[0], literals=values)] if values else []
        if keys[names[0]].null_count():
            parts.append(_equals(names[0], None))
        return functools.reduce(operator.or_, parts) if parts else AlwaysFalse()
    rows = [
        functools.reduce(operator.and_, (_equals(k, v) for k, v in row.items()))
        for row in keys.unique().iter_rows(named=True)
    ]
    if not rows:
        return AlwaysFalse()
    return rows[0] if len(rows) == 1 else Or(*rows)


def _equals(name: str, value: Any) -> BooleanExpression:
    from pyiceberg.expressions import EqualTo, IsNull

    return IsNull(term=name) if value is None else EqualTo(term=name, value=value)


def window_filter(window: ReplaceWindow) -> BooleanExpression:
    """``lower < col AND col <= upper`` for every column of a replace window."""
    from pyiceberg.expressions import AlwaysTrue, GreaterThan, LessThanOrEqual

    parts: list[BooleanExpression] = []
    for name, (lower, upper) in window.bounds.items():
        if lower is not None:
            parts.append(GreaterThan(term=name, value=lower))
        if upper is not None:
            parts.append(LessThanOrEqual(term=name, value=upper))
    return functools.reduce(operator.and_, parts) if parts else AlwaysTrue()


ICEBERG_STRATEGIES: dict[str, IcebergStrategy] = {
    "append": append,
    "overwrite": overwrite,
    "merge_upsert": merge_upsert,
    "merge_overwrite": merge_overwrite,
    "scd2": scd2,
}
KEYED = frozenset({"merge_upsert", "merge_overwrite", "scd2"})
