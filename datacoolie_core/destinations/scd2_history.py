"""SCD2 history as a function of the versions delivered, whatever runs they arrived in (docs/scd2.md).

Pure planning, no I/O: the stored history of the batch's keys plus the batch's versions give the new
history of those keys; the plan is the difference, which the scd2 strategy applies in one MERGE.

Per key, over the stored rows and the batch rows together:

1. Versions are ordered by effective time (``__valid_from``). At one effective time the version
   delivered last wins: stored rows count as delivered before the batch, the batch in frame order.
2. A version whose tracked columns (every column but the keys and the framework's trailing columns)
   equal the previous version's is no new version: the previous one continues. Exact re-deliveries
   (same key, effective time and tracked values) are the plainest case.
3. Each version is valid until the next one's effective time; only the last one is current.

A late version (older than the key's current row) is therefore placed where it belongs: the version
it interrupts is closed at its effective time. One run over some rows or several runs over them give
the same history, except when a delivery changes what an instant holds while an unchanged version of
its key was delivered at a later instant: that one left no row, so it cannot be re-chained. Keys whose
versions arrive in effective order (never before the newest instant delivered so far) never meet it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from datacoolie_core import columns as fc
from datacoolie_core.errors import DestinationError

MATCH_FROM = "__datacoolie_match_from"
"""Column of updates and deletes: the stored row's ``__valid_from`` the MERGE matches on."""
_P = "__datacoolie_scd2_"
_SEQ, _STORED, _DUP = f"{_P}seq", f"{_P}stored", f"{_P}dup"
_OLD_TO, _OLD_CURRENT = f"{_P}old_to", f"{_P}old_current"
_CONTENT, _RUN = f"{_P}content", f"{_P}run"
_MEMBER, _IDENTITY = f"{_P}member", f"{_P}identity"
_ROW, _END, _KEY, _INSTANT, _RUN_INSTANT = f"{_P}row", f"{_P}end", f"{_P}key", f"{_P}instant", f"{_P}run_instant"
_KEY_START, _INSTANT_START = f"{_P}key_start", f"{_P}instant_start"
_STAMPED = (fc.UPDATED_AT, fc.UPDATED_BY, fc.DATAFLOW_RUN_ID)
"""System columns a rewritten stored row takes from the batch (``__created_at`` stays)."""


@dataclass(frozen=True)
class Scd2Plan:
    """What one scd2 write changes in the table."""

    inserts: pl.DataFrame
    """New rows, with every column they are written with."""
    updates: pl.DataFrame
    """Stored rows whose end moved: keys, :data:`MATCH_FROM`, the new ``__valid_to/__is_current`` and
    the batch's stamped system columns."""
    deletes: pl.DataFrame
    """Stored rows to remove, by keys and :data:`MATCH_FROM` (every stored row at that instant)."""

    def is_empty(self) -> bool:
        return self.inserts.is_empty() and self.updates.is_empty() and self.deletes.is_empty()


def plan_scd2(batch: pl.DataFrame, stored: pl.DataFrame | None, keys: Sequence[str]) -> Scd2Plan:
    """The plan that turns ``stored`` (every stored row of the batch's keys) into the new history.

    Args:
        batch: the write's rows, with the scd2 columns (``__valid_from`` non-null) and system columns.
        stored: the table's rows for the batch's keys, all versions, all columns; ``None``: no table.
        keys: the merge keys as spelled in ``batch``.

    Returns:
        Rows to insert (batch versions, and stored rows that had a duplicate at their instant),
        stored rows whose chain moved, and stored instants to delete.
    """
    keys = list(keys)
    rows = _runs(_delivered(batch, stored, keys), keys)
    history = _chain(rows, keys)
    stored_row, dup = pl.col(_STORED), pl.col(_DUP)
    # a stored row standing for its version starts it (it was delivered at its first instant): only
    # its end can move
    moved = pl.col(fc.VALID_TO).ne_missing(pl.col(_OLD_TO)) | pl.col(fc.IS_CURRENT).ne_missing(pl.col(_OLD_CURRENT))
    stamped = [c for c in _STAMPED if c in batch.columns]
    stamp = {c: pl.lit(batch[c][0], dtype=batch.schema[c]) for c in stamped} if batch.height else {}
    written = [c for c in rows.columns if not c.startswith(_P) and c != MATCH_FROM]
    inserts = history.filter(~stored_row | dup).with_columns(
        pl.when(stored_row).then(value).otherwise(pl.col(c)).alias(c) for c, value in stamp.items()
    )
    updates = history.filter(stored_row & ~dup & moved).with_columns(value.alias(c) for c, value in stamp.items())
    gone = rows.filter(stored_row & (~pl.col(_IDENTITY) | dup))
    return Scd2Plan(
        inserts=inserts.select(written),
        updates=updates.select(*keys, MATCH_FROM, fc.VALID_TO, fc.IS_CURRENT, *stamped),
        deletes=gone.select(*keys, MATCH_FROM).unique(maintain_order=True),
    )


def check_scd2_batch(frame: pl.DataFrame, target: str) -> None:
    """Refuse an scd2 batch without the columns the scd2 column adder makes, or with a null
    ``__valid_from`` (it would open a version at no time). ``target`` names the table in the message.

    Raises:
        DestinationError: naming the missing columns or the null count, and the fix.
    """
    missing = [c for c in fc.SCD2_COLUMNS if c not in frame.columns]
    if missing:
        raise DestinationError(
            f"scd2 write to {target}: the batch lacks {', '.join(missing)}; "
            "the scd2 column adder (configure.scd2_effective_column) must run before the write"
        )
    nulls = frame[fc.VALID_FROM].null_count()
    if nulls:
        raise DestinationError(
            f"scd2 write to {target}: {nulls} row(s) have a null {fc.VALID_FROM}; "
            "make configure.scd2_effective_column non-null (e.g. coalesce it with a default)"
        )


def tracked_columns(frame: pl.DataFrame, keys: Sequence[str]) -> list[str]:
    """The columns whose change makes a new version: all but the keys and the trailing framework columns."""
    return [
        c
        for c in frame.columns
        if c not in fc.TRAILING_COLUMNS and c not in keys and not c.startswith(_P) and c != MATCH_FROM
    ]


def _delivered(batch: pl.DataFrame, stored: pl.DataFrame | None, keys: list[str]) -> pl.DataFrame:
    """Stored rows (in chain order) then batch rows (in frame order), numbered in that delivery order."""
    valid_from = batch.schema[fc.VALID_FROM]
    batch = batch.with_columns(
        pl.col(fc.VALID_TO).cast(valid_from),
        pl.lit(False).alias(_STORED),
        pl.lit(False).alias(_DUP),
        pl.lit(None, dtype=valid_from).alias(MATCH_FROM),
        pl.lit(None, dtype=valid_from).alias(_OLD_TO),
        pl.lit(None, dtype=pl.Boolean).alias(_OLD_CURRENT),
    )
    if stored is None or stored.is_empty():
        return batch.with_row_index(_SEQ)
    shared = [c for c in stored.columns if c in batch.columns]
    stored = (
        stored.with_columns(pl.col(c).cast(batch.schema[c]) for c in shared)
        .sort([*keys, fc.VALID_FROM, fc.IS_CURRENT], nulls_last=True, maintain_order=True)
        .with_columns(
            pl.lit(True).alias(_STORED),
            pl.struct(*keys, fc.VALID_FROM).is_duplicated().alias(_DUP),
            pl.col(fc.VALID_FROM).alias(MATCH_FROM),
            pl.col(fc.VALID_TO).alias(_OLD_TO),
            pl.col(fc.IS_CURRENT).alias(_OLD_CURRENT),
        )
    )
    return pl.concat([stored, batch], how="diagonal_relaxed").with_row_index(_SEQ)


def _runs(rows: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Every row with its run of equal-content instants, and whether it stands for that run.

    An instant is one key's effective time; its content is its last-delivered row's. Consecutive
    instants of equal content form one run: one version, starting at the run's first instant. The
    row standing for it was delivered at that instant: the first carrying the content after the last
    that did not. So a stored version keeps its identity (``__created_at``, ``__file_*``) through
    re-deliveries, and a version replaced and then restored is the restoring row, in one run as in
    many.

    Computed on the rows sorted by key, instant and delivery, from group boundaries: windows over
    one group per key are far slower at a hundred thousand keys.
    """
    tracked = tracked_columns(rows, keys)
    content = pl.struct(tracked) if tracked else pl.lit(True)
    rows = rows.sort([*keys, fc.VALID_FROM, _SEQ], nulls_last=True).with_columns(
        content.alias(_CONTENT), pl.int_range(pl.len(), dtype=pl.Int64).alias(_ROW)
    )
    first_row = pl.col(_ROW) == 0
    key_start = first_row | pl.any_horizontal(pl.col(k).ne_missing(pl.col(k).shift(1)) for k in keys)
    instant_start = key_start | pl.col(fc.VALID_FROM).ne_missing(pl.col(fc.VALID_FROM).shift(1))
    rows = rows.with_columns(key_start.alias(_KEY_START), instant_start.alias(_INSTANT_START))
    instant_end = pl.col(_INSTANT_START).shift(-1, fill_value=True)
    rows = rows.with_columns(pl.when(instant_end).then(pl.col(_ROW)).backward_fill().alias(_END))
    winner = pl.col(_CONTENT).gather(pl.col(_END))  # the instant's last-delivered content
    previous_winner = pl.col(_CONTENT).gather((pl.col(_ROW) - 1).clip(0))  # at an instant's first row
    starts_run = pl.col(_INSTANT_START) & (pl.col(_KEY_START) | winner.ne_missing(previous_winner))
    instant_id = pl.col(_INSTANT_START).cum_sum()
    rows = rows.with_columns(
        pl.col(_CONTENT).eq_missing(winner).alias(_MEMBER),
        starts_run.cum_sum().alias(_RUN),
        instant_id.alias(_INSTANT),
        pl.when(starts_run).then(instant_id).forward_fill().alias(_RUN_INSTANT),
    )
    # the streak: the instant's trailing members (no row of other content delivered after them)
    overruled = (~pl.col(_MEMBER)).cum_sum()
    streak = pl.col(_MEMBER) & (overruled == overruled.gather(pl.col(_END)))
    streak_start = streak & (pl.col(_INSTANT_START) | ~streak.shift(1, fill_value=False))
    first_instant = pl.col(_INSTANT) == pl.col(_RUN_INSTANT)
    return rows.with_columns((streak_start & first_instant).alias(_IDENTITY))


def _chain(rows: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """One row per run (the row standing for it, delivered at its first instant), valid until the next run."""
    versions = rows.with_columns(pl.col(_KEY_START).cum_sum().alias(_KEY)).filter(pl.col(_IDENTITY))
    same_key_next = pl.col(_KEY) == pl.col(_KEY).shift(-1)
    next_from = pl.when(same_key_next).then(pl.col(fc.VALID_FROM).shift(-1))
    return versions.with_columns(next_from.alias(fc.VALID_TO), next_from.is_null().alias(fc.IS_CURRENT))
