"""Load strategies on Delta Lake: append, overwrite, merge_upsert, merge_overwrite, scd2.

Each strategy makes exactly ONE commit carrying the write's marker (DataCoolie makes two for
merge_overwrite and scd2, D-09/D-11; a crash between them lost or duplicated rows). The first write of
a merge-style strategy to a missing table creates it from the batch (D-05).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import polars as pl
from deltalake import DeltaTable

from datacoolie_core import columns as fc
from datacoolie_core.destinations import delta
from datacoolie_core.destinations.base import CommitMarker, ReplaceWindow
from datacoolie_core.errors import DestinationError
from datacoolie_core.models.coerce import did_you_mean
from datacoolie_core.models.runtime import DestinationRuntimeInfo

ACTION = "__datacoolie_action"
"""Helper column of MERGE sources: which clause a source row is for. Never written to the table."""
_CURRENT = "__datacoolie_current_"


@dataclass(frozen=True)
class DeltaTarget:
    """Where one write lands and how it is identified."""

    path: str
    table: DeltaTable | None
    """The snapshot the write reads and commits against; ``None`` when no table exists yet."""
    marker: CommitMarker
    merge_keys: tuple[str, ...] = ()
    """``merge_keys_extended``, as spelled in the frame."""
    partition_by: tuple[str, ...] = ()
    window: ReplaceWindow | None = None


class Strategy(Protocol):
    """Writes ``frame`` to ``target`` in one commit carrying ``target.marker``; returns the commit's metrics."""

    def __call__(self, frame: pl.DataFrame, target: DeltaTarget) -> DestinationRuntimeInfo: ...


def append(frame: pl.DataFrame, target: DeltaTarget) -> DestinationRuntimeInfo:
    """D-06: add the rows; new columns join the schema, missing ones read as null."""
    return _write(frame, target, "append")


def overwrite(frame: pl.DataFrame, target: DeltaTarget) -> DestinationRuntimeInfo:
    """D-07: replace rows and schema (dropped columns disappear); earlier versions stay in the log."""
    return _write(frame, target, "overwrite")


def _write(frame: pl.DataFrame, target: DeltaTarget, mode: Literal["append", "overwrite"]) -> DestinationRuntimeInfo:
    """One plain write commit (a new table is created instead)."""
    if target.table is None:
        return _create(frame, target)
    table = delta.write_table(target.table, frame, mode=mode, partition_by=target.partition_by, marker=target.marker)
    return delta.write_metrics(table)


def merge_upsert(frame: pl.DataFrame, target: DeltaTarget) -> DestinationRuntimeInfo:
    """D-08: update matching keys (all columns but the keys and ``__created_at``), insert new keys.

    The batch is first reduced to the last row per key in frame order, so duplicate batch keys can
    never duplicate a target row (F-11). New batch columns evolve the table schema.
    """
    keys = target.merge_keys
    batch = frame.unique(subset=list(keys), keep="last", maintain_order=True)
    if target.table is None:
        return _create(batch, target)
    merger = delta.start_merge(target.table, batch, delta.sql(delta.keys_match(keys)), target.marker)
    updates = [c for c in batch.columns if c not in keys and c != fc.CREATED_AT]
    if updates:
        merger = merger.when_matched_update(delta.assignments(updates))
    merger = merger.when_not_matched_insert(delta.assignments(batch.columns))
    return delta.execute_merge(target.table, merger, target.marker)


def merge_overwrite(frame: pl.DataFrame, target: DeltaTarget) -> DestinationRuntimeInfo:
    """D-09/D-10: replace every target row whose key tuple is in the batch by the batch rows.

    One MERGE: the source is the batch (inserted) plus its distinct key tuples (deleting the matching
    target rows). With a replace window, target rows inside the window are deleted too (rows deleted
    at the source within the window disappear); deleting by key as well means a batch row can never
    sit beside an older copy of its key outside the window. Duplicate batch keys are all kept: the
    key group is replaced by the batch's group.
    """
    if target.table is None:
        return _create(frame, target)
    keys = list(target.merge_keys)
    source = pl.concat(
        [
            frame.with_columns(pl.lit("insert").alias(ACTION)),
            frame.select(keys).unique(maintain_order=True).with_columns(pl.lit("delete").alias(ACTION)),
        ],
        how="diagonal_relaxed",
    )
    on = delta.keys_match(keys).and_(delta.equals(ACTION, delta.SOURCE, "delete"))
    merger = (
        delta.start_merge(target.table, source, delta.sql(on), target.marker)
        .when_matched_delete()
        .when_not_matched_insert(
            delta.assignments(frame.columns), predicate=delta.sql(delta.equals(ACTION, delta.SOURCE, "insert"))
        )
    )
    window = delta.window_predicate(target.window.bounds, schema=frame.schema) if target.window else None
    if window is not None:
        merger = merger.when_not_matched_by_source_delete(predicate=delta.sql(window))
    return delta.execute_merge(target.table, merger, target.marker)


def scd2(frame: pl.DataFrame, target: DeltaTarget) -> DestinationRuntimeInfo:
    """D-11, with change detection, in one MERGE.

    Per key, against the target's current row: a batch version with a later ``__valid_from`` and
    different business content closes the current row (``__valid_to`` = the new ``__valid_from``,
    ``__is_current`` = false) and is inserted as current. Several versions of one key in a batch are
    chained (each closed by the next). An unchanged re-delivery, and a version whose ``__valid_from``
    is equal to or older than the current row's, change nothing: history is never rewritten, so late
    versions are dropped rather than inserted into the past.
    """
    keys = list(target.merge_keys)
    _check_scd2_batch(frame, target.path)
    if target.table is None:
        inserts, _ = plan_scd2(frame, None, keys)
        return _create(inserts, target)
    inserts, closes = plan_scd2(frame, read_current(target.table, frame, keys), keys)
    if inserts.is_empty():
        return delta.commit_marker_only(target.table, target.marker)
    source = pl.concat(
        [inserts.with_columns(pl.lit("insert").alias(ACTION)), closes.with_columns(pl.lit("close").alias(ACTION))],
        how="diagonal_relaxed",
    )
    on = (
        delta.keys_match(keys)
        .and_(delta.equals(fc.IS_CURRENT, delta.TARGET, True))
        .and_(delta.equals(ACTION, delta.SOURCE, "close"))
    )
    close_set = {
        fc.VALID_TO: delta.sql(delta.column(fc.VALID_FROM, delta.SOURCE)),
        fc.IS_CURRENT: "FALSE",
    } | delta.assignments([c for c in fc.SYSTEM_COLUMNS if c in frame.columns and c != fc.CREATED_AT])
    later = delta.column(fc.VALID_FROM, delta.SOURCE) > delta.column(fc.VALID_FROM, delta.TARGET)
    merger = (
        delta.start_merge(target.table, source, delta.sql(on), target.marker)
        .when_matched_update(close_set, predicate=delta.sql(later))
        .when_not_matched_insert(
            delta.assignments(inserts.columns), predicate=delta.sql(delta.equals(ACTION, delta.SOURCE, "insert"))
        )
    )
    return delta.execute_merge(target.table, merger, target.marker)


def read_current(table: DeltaTable, batch: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    """The target's current rows for the batch's keys: keys, ``__valid_from`` and shared business columns."""
    scan = pl.scan_delta(table)
    schema = scan.collect_schema()
    missing = [c for c in (*keys, fc.VALID_FROM, fc.IS_CURRENT) if c not in schema]
    if missing:
        raise DestinationError(
            f"Delta table at {table.table_uri} is not an scd2 table: it has no column(s) {', '.join(missing)}; "
            "write scd2 to a new table or overwrite this one first"
        )
    wanted = [c for c in (*keys, fc.VALID_FROM, *_business_columns(batch, keys)) if c in schema]
    batch_keys = batch.lazy().select([pl.col(k).cast(schema[k]) for k in keys]).unique()
    return (
        scan.filter(pl.col(fc.IS_CURRENT))
        .select(wanted)
        .join(batch_keys, on=list(keys), how="semi", nulls_equal=True)
        .collect()
    )


def plan_scd2(
    batch: pl.DataFrame, current: pl.DataFrame | None, keys: Sequence[str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Pure scd2 planning: ``(rows to insert, current rows to close)``.

    ``current`` holds the target's current rows (keys, ``__valid_from``, business columns); when a
    key has several, the latest counts. Inserts have the batch's columns with ``__valid_to`` and
    ``__is_current`` set; closes hold the keys, the closing ``__valid_from`` and the system columns.
    """
    keys = list(keys)
    business = _business_columns(batch, keys)
    versions = batch.unique(subset=[*keys, fc.VALID_FROM], keep="last", maintain_order=True).sort(
        [*keys, fc.VALID_FROM], maintain_order=True
    )
    joined = versions.join(_current_by_key(batch, current, keys, business), on=keys, how="left", nulls_equal=True)
    later = pl.col(f"{_CURRENT}has").is_null() | (pl.col(fc.VALID_FROM) > pl.col(f"{_CURRENT}{fc.VALID_FROM}"))
    joined = joined.filter(later)
    first = pl.int_range(pl.len()).over(keys) == 0
    previous = [
        pl.when(first).then(pl.col(f"{_CURRENT}{c}")).otherwise(pl.col(c).shift(1).over(keys)) for c in business
    ]
    changed = [pl.col(c).ne_missing(prev) for c, prev in zip(business, previous, strict=True)]
    new_key = first & pl.col(f"{_CURRENT}has").is_null()
    kept = joined.filter(pl.any_horizontal(new_key, *changed) if changed else new_key)
    next_from = pl.col(fc.VALID_FROM).shift(-1).over(keys)
    valid_to_type = batch.schema[fc.VALID_TO] if batch.schema[fc.VALID_TO] != pl.Null else batch.schema[fc.VALID_FROM]
    inserts = kept.with_columns(
        next_from.cast(valid_to_type).alias(fc.VALID_TO), next_from.is_null().alias(fc.IS_CURRENT)
    ).select(batch.columns)
    closing = [*keys, fc.VALID_FROM, *(c for c in fc.SYSTEM_COLUMNS if c in batch.columns)]
    closes = kept.filter(first & pl.col(f"{_CURRENT}has").is_not_null()).select(closing)
    return inserts, closes


def _current_by_key(
    batch: pl.DataFrame, current: pl.DataFrame | None, keys: list[str], business: list[str]
) -> pl.DataFrame:
    """The latest current row per key, columns renamed with a prefix and cast to the batch's types."""
    if current is None:
        current = batch.clear().select(*keys, fc.VALID_FROM)
    current = current.sort(fc.VALID_FROM, maintain_order=True).unique(subset=keys, keep="last", maintain_order=True)
    compared = [fc.VALID_FROM, *business]
    return current.select(
        *(pl.col(k).cast(batch.schema[k]) for k in keys),
        *(
            (pl.col(c) if c in current.columns else pl.lit(None)).cast(batch.schema[c]).alias(f"{_CURRENT}{c}")
            for c in compared
        ),
        pl.lit(True).alias(f"{_CURRENT}has"),
    )


def _business_columns(batch: pl.DataFrame, keys: Sequence[str]) -> list[str]:
    return [c for c in batch.columns if c not in fc.TRAILING_COLUMNS and c not in keys]


def _check_scd2_batch(frame: pl.DataFrame, path: str) -> None:
    missing = [c for c in fc.SCD2_COLUMNS if c not in frame.columns]
    if missing:
        raise DestinationError(
            f"scd2 write to {path}: the batch lacks {', '.join(missing)}; "
            "the scd2 column adder (configure.scd2_effective_column) must run before the write"
        )
    nulls = frame[fc.VALID_FROM].null_count()
    if nulls:
        raise DestinationError(
            f"scd2 write to {path}: {nulls} row(s) have a null {fc.VALID_FROM}; "
            "make configure.scd2_effective_column non-null (e.g. coalesce it with a default)"
        )


def _create(frame: pl.DataFrame, target: DeltaTarget) -> DestinationRuntimeInfo:
    """D-05: the first write creates the table from the batch (partitioned), as version 0."""
    table = delta.create_table(target.path, frame, partition_by=target.partition_by, marker=target.marker)
    return delta.write_metrics(table)


LOAD_STRATEGIES: dict[str, Strategy] = {
    "append": append,
    "overwrite": overwrite,
    "merge_upsert": merge_upsert,
    "merge_overwrite": merge_overwrite,
    "scd2": scd2,
}
KEYED_STRATEGIES = frozenset({"merge_upsert", "merge_overwrite", "scd2"})


def get_strategy(load_type: str) -> Strategy:
    """The strategy for ``load_type``; an unknown name raises, listing the known ones."""
    try:
        return LOAD_STRATEGIES[load_type]
    except KeyError:
        raise DestinationError(
            f"unknown load_type '{load_type}'{did_you_mean(load_type, LOAD_STRATEGIES)} "
            f"(known: {', '.join(LOAD_STRATEGIES)})"
        ) from None
