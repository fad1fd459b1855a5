"""Slot 30: computed columns (DataCoolie T-07, ``transform.additional_columns``)."""

from __future__ import annotations

import polars as pl

from datacoolie_core.columns import SYSTEM_COLUMNS
from datacoolie_core.transforms.base import TransformContext
from datacoolie_core.transforms.resolve import compile_sql, find_column, reserved_match


class ColumnAdder:
    """Drop stale system columns, then add each ``additional_columns`` entry from its SQL expression.

    A source written by DataCoolie carries ``__created_at`` & co. from its own load; they are
    dropped here so expressions cannot read them by mistake (slot 70 adds this run's values).
    Entries apply in order, each against the schema the previous ones produced, so a later entry
    may use an earlier one; an entry naming an existing column (ignoring case) replaces it in place.
    Label ``ColumnAdder``.
    """

    name = "ColumnAdder"
    order = 30

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]:
        stale = [name for name in frame.collect_schema().names() if reserved_match(name, SYSTEM_COLUMNS)]
        frame = frame.drop(stale)
        entries = ctx.dataflow.transform.additional_columns
        for index, entry in enumerate(entries):
            schema = frame.collect_schema()
            expr = compile_sql(ctx, entry.expression, schema, key=f"transform.additional_columns[{index}].expression")
            target = find_column(schema.names(), entry.column, ctx.column_name_mode) or entry.column
            frame = frame.with_columns(expr.alias(target))
        return frame, self.name if stale or entries else None
