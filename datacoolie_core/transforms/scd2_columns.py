"""Slot 60: the version columns of an SCD2 destination (DataCoolie T-09, D-11)."""

from __future__ import annotations

import polars as pl

from datacoolie_core.columns import IS_CURRENT, SCD2_COLUMNS, VALID_FROM, VALID_TO
from datacoolie_core.transforms.base import TransformContext
from datacoolie_core.transforms.resolve import compile_sql, dtype_of, find_column, reserved_match

KEY = "destination.configure.scd2_effective_column"


class SCD2ColumnAdder:
    """For ``load_type == scd2``: ``__valid_from`` = the effective-column SQL, ``__valid_to`` = typed null,
    ``__is_current`` = true. Existing columns of those names (a source written by an SCD2 load) are
    replaced. Label ``SCD2ColumnAdder``.
    """

    name = "SCD2ColumnAdder"
    order = 60

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]:
        destination = ctx.dataflow.destination
        sql = destination.configure.scd2_effective_column
        if destination.load_type != "scd2" or not sql:
            return frame, None
        frame = frame.drop([name for name in frame.collect_schema().names() if reserved_match(name, SCD2_COLUMNS)])
        schema = frame.collect_schema()
        named = find_column(schema.names(), sql, ctx.column_name_mode)  # a column name in any spelling, or SQL
        valid_from = pl.col(named) if named is not None else compile_sql(ctx, sql, schema, key=KEY)
        dtype = dtype_of(frame, valid_from)
        frame = frame.with_columns(
            valid_from.alias(VALID_FROM),
            pl.lit(None, dtype=dtype).alias(VALID_TO),
            pl.lit(True).alias(IS_CURRENT),
        )
        return frame, self.name
