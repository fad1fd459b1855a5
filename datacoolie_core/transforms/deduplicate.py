"""Slot 20: keep the latest row per key (DataCoolie T-05, fixing F-18).

DataCoolie's Polars dedup let a null order value win (descending sorts put nulls first), broke ties
arbitrarily and, in RANK mode, dropped groups whose order values were all null. Here the result is
a function of the data: order columns descending with NULLS LAST, ties broken by input row order
(first occurrence wins), and an all-null group keeps its rows. Surviving rows keep their input order.
An scd2 destination keeps every version by default (the scd2 load is where its versions meet).
"""

from __future__ import annotations

import polars as pl

from datacoolie_core.transforms.base import TransformContext
from datacoolie_core.transforms.resolve import resolve_columns

_ROW = "__dc_dedup_row__"
"""Temporary input-row index; the double underscores keep it out of any business column's way."""


class Deduplicator:
    """Keep the latest row per ``dataflow.deduplicate_columns`` ordered by ``dataflow.order_columns``.

    No-op when keys or order columns are empty, and for an ``scd2`` destination whose keys default
    to the merge keys: there every version of a key is history, which the scd2 load chains (only exact
    re-deliveries collapse, docs/scd2.md). DataCoolie (T-05, D-11) kept the latest version per key, so
    the versions that reached the history depended on how many landed between two runs. An explicit
    ``transform.deduplicate_columns`` still deduplicates for scd2.

    Key and order columns must exist whatever the ``missing_column_policy``. ROW_NUMBER semantics
    (one row per key, label ``Deduplicator``) unless ``transform.configure.deduplicate_by_rank`` or a
    ``merge_overwrite`` destination without explicit ``deduplicate_columns`` asks for RANK semantics
    (every row tied on the best order values,
    label ``Deduplicator(RANK)``).
    """

    name = "Deduplicator"
    order = 20

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]:
        dataflow = ctx.dataflow
        if not dataflow.deduplicate_columns or not dataflow.order_columns or keeps_every_version(ctx):
            return frame, None
        names = frame.collect_schema().names()
        key_source = (
            "transform.deduplicate_columns" if dataflow.transform.deduplicate_columns else "destination.merge_keys"
        )
        order_source = (
            "transform.latest_data_columns" if dataflow.transform.latest_data_columns else "source.watermark_columns"
        )
        keys = resolve_columns(ctx, names, dataflow.deduplicate_columns, key=key_source, strict=True)
        order = resolve_columns(ctx, names, dataflow.order_columns, key=order_source, strict=True)
        if uses_rank(ctx):
            return keep_best_ranked(frame, keys, order), f"{self.name}(RANK)"
        return keep_latest(frame, keys, order), self.name


def keeps_every_version(ctx: TransformContext) -> bool:
    """``scd2`` with the default keys: versions are history, the scd2 load chains them (no dedup here)."""
    dataflow = ctx.dataflow
    return dataflow.destination.load_type == "scd2" and not dataflow.transform.deduplicate_columns


def uses_rank(ctx: TransformContext) -> bool:
    """RANK when asked for, or for ``merge_overwrite`` whose keys default to the merge keys."""
    dataflow = ctx.dataflow
    if dataflow.transform.configure.deduplicate_by_rank:
        return True
    return dataflow.destination.load_type == "merge_overwrite" and not dataflow.transform.deduplicate_columns


def _latest_first(frame: pl.LazyFrame, order: list[str]) -> pl.LazyFrame:
    """Rows numbered in input order, then sorted latest first (stable: ties keep input order)."""
    return frame.with_row_index(_ROW).sort(order, descending=True, nulls_last=True, maintain_order=True)


def keep_latest(frame: pl.LazyFrame, keys: list[str], order: list[str]) -> pl.LazyFrame:
    """ROW_NUMBER = 1 per key: the row with the greatest order values, the earliest on ties."""
    latest = _latest_first(frame, order).unique(subset=keys, keep="first", maintain_order=True)
    return latest.sort(_ROW).drop(_ROW)


def keep_best_ranked(frame: pl.LazyFrame, keys: list[str], order: list[str]) -> pl.LazyFrame:
    """RANK = 1 per key: every row whose order values equal the key's best (nulls equal nulls)."""
    ranked = _latest_first(frame, order)
    best = [pl.col(name).eq_missing(pl.col(name).first().over(keys)) for name in order]
    return ranked.filter(pl.all_horizontal(best)).sort(_ROW).drop(_ROW)
