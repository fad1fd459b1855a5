"""Slot 10: schema hints and timestamp normalisation (DataCoolie T-04, D-19).

Hints cast columns to the types metadata declares; then every timezone-naive timestamp is
re-labelled UTC (wall clock kept) unless ``transform.configure.convert_timestamp_ntz`` is false.
"""

from __future__ import annotations

import logging

import polars as pl

from datacoolie_core.models.transform import SchemaHint
from datacoolie_core.transforms.base import TransformContext
from datacoolie_core.transforms.casts import cast_expr
from datacoolie_core.transforms.resolve import find_column, transform_error
from datacoolie_core.types import polars_dtype

logger = logging.getLogger("datacoolie.transforms")


class SchemaConverter:
    """Cast hinted columns, then re-label naive timestamps as UTC.

    Hints apply only when the source connection's ``use_schema_hint`` is true. A hinted column the
    source lacks already failed the read (:mod:`datacoolie_core.sources.shape`) unless
    ``missing_column_policy`` is ``ignore``; then it is skipped with ONE warning listing them all,
    as DataCoolie does. An unknown type name is an error (DataCoolie skipped the cast silently).
    Label ``SchemaConverter(N casts)``.
    """

    name = "SchemaConverter"
    order = 10

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]:
        casts = 0
        if ctx.dataflow.source.connection.use_schema_hint:
            frame, casts = _apply_hints(frame, ctx)
        relabelled = 0
        if ctx.dataflow.transform.configure.convert_timestamp_ntz:
            frame, relabelled = _naive_timestamps_to_utc(frame)
        return frame, f"{self.name}({casts} casts)" if casts or relabelled else None


def _apply_hints(frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, int]:
    hints = [hint for hint in ctx.dataflow.transform.schema_hints if hint.is_active]
    targets = [(hint, _hint_dtype(ctx, hint)) for hint in hints]  # every type checked before any cast
    schema = dict(frame.collect_schema())
    missing: list[str] = []
    casts = 0
    for hint, target in targets:
        column = find_column(list(schema), hint.column_name, ctx.column_name_mode)
        if column is None:
            missing.append(hint.column_name)
            continue
        frame = frame.with_columns(_hint_cast(ctx, hint, column, schema[column], target))
        schema[column] = target
        casts += 1
    if missing:
        logger.warning(
            "SchemaConverter: dataflow '%s': %d active schema-hint column(s) not found and skipped: %s",
            ctx.dataflow.name,
            len(missing),
            missing,
        )
    return frame, casts


def _hint_dtype(ctx: TransformContext, hint: SchemaHint) -> pl.DataType:
    try:
        return polars_dtype(hint.type_string)
    except ValueError as e:
        raise transform_error(
            ctx,
            f"transform.schema_hints: column '{hint.column_name}' has data_type '{hint.type_string}': {e}",
            "use a known type name such as long, decimal(12,2), timestamp or date",
        ) from e


def _hint_cast(
    ctx: TransformContext, hint: SchemaHint, column: str, source: pl.DataType, target: pl.DataType
) -> pl.Expr:
    try:
        return cast_expr(column, source, target, hint.format).alias(column)
    except ValueError as e:
        raise transform_error(
            ctx,
            f"transform.schema_hints: column '{hint.column_name}' has format '{hint.format}': {e}",
            "use Java tokens yyyy yy MM dd HH mm ss SSS (quote literal text: 'T') or a strftime pattern",
        ) from e


def _naive_timestamps_to_utc(frame: pl.LazyFrame) -> tuple[pl.LazyFrame, int]:
    naive = [
        name for name, dtype in frame.collect_schema().items() if isinstance(dtype, pl.Datetime) and not dtype.time_zone
    ]
    if naive:
        frame = frame.with_columns(pl.col(name).dt.replace_time_zone("UTC") for name in naive)
    return frame, len(naive)
