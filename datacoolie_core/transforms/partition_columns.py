"""Slot 80: derive destination partition columns (DataCoolie T-11, M-27)."""

from __future__ import annotations

import logging

import polars as pl

from datacoolie_core.transforms.base import TransformContext
from datacoolie_core.transforms.resolve import compile_sql, find_column

logger = logging.getLogger("datacoolie.transforms")


class PartitionHandler:
    """Add or replace each partition column that has an ``expression``; check the others exist.

    Runs after the system columns, so an expression may use ``__updated_at``
    (``DATE_FORMAT(__updated_at, 'yyyy-MM')``). A partition column without expression that the
    data lacks is only a warning here (the writer decides). Label ``PartitionHandler`` when at
    least one column was derived.
    """

    name = "PartitionHandler"
    order = 80

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]:
        derived = False
        for index, partition in enumerate(ctx.dataflow.destination.partition_columns):
            schema = frame.collect_schema()
            existing = find_column(schema.names(), partition.column, ctx.column_name_mode)
            if partition.expression:
                key = f"destination.partition_columns[{index}].expression"
                expr = compile_sql(ctx, partition.expression, schema, key=key)
                frame = frame.with_columns(expr.alias(existing or partition.column))
                derived = True
            elif existing is None:
                logger.warning(
                    "PartitionHandler: dataflow '%s': partition column '%s' has no expression and is not in the data",
                    ctx.dataflow.name,
                    partition.column,
                )
        return frame, self.name if derived else None
