"""Slot 35: keep the rows matching ``transform.filter_expression`` (DataCoolie T-08, M-33)."""

from __future__ import annotations

import polars as pl

from datacoolie_core.transforms.base import TransformContext
from datacoolie_core.transforms.resolve import compile_sql, dtype_of, transform_error

KEY = "transform.filter_expression"


class RowFilter:
    """Filter with ``transform.filter_expression`` (SQL over the columns after slot 30); label ``RowFilter``.

    Unlike ``source.filter_expression`` this runs after schema hints and computed columns, so it sees
    typed values and may use computed columns. A row where the predicate is NULL is dropped (SQL WHERE).
    """

    name = "RowFilter"
    order = 35

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]:
        sql = ctx.dataflow.transform.filter_expression
        if not sql:
            return frame, None
        predicate = compile_sql(ctx, sql, frame.collect_schema(), key=KEY)
        dtype = dtype_of(frame, predicate)
        if dtype != pl.Boolean:
            raise transform_error(
                ctx, f"{KEY} {sql!r} gives {dtype} values, not true/false", "write a predicate such as amount > 0"
            )
        return frame.filter(predicate), self.name
