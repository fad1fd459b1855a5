"""Slot 84: masking rules (DataCoolie T-12, ``transform.masking_rules``).

Masking runs after partitioning and system columns and before projection and renaming, so rules
name columns as the source has them (or by their sanitized names, :mod:`~datacoolie_core.transforms.resolve`). Keys and partition columns cannot be masked: a merge on a
masked key would match the wrong rows.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from datacoolie_core.columns import TRAILING_COLUMNS
from datacoolie_core.models.transform import MaskingRule
from datacoolie_core.transforms.base import TransformContext
from datacoolie_core.transforms.literals import typed_literal
from datacoolie_core.transforms.resolve import reserved_match, resolve_columns, transform_error

_TRUNCATE = {"year": "1y", "month": "1mo", "day": "1d", "hour": "1h"}


class DataMasker:
    """Apply ``transform.masking_rules``: redact, nullify, partial, numeric_bucket, date_truncate.

    Rules naming merge keys, partition columns or framework columns are rejected; missing columns
    follow ``missing_column_policy``. Label ``DataMasker`` when a rule touched a column.
    """

    name = "DataMasker"
    order = 84

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]:
        rules = ctx.dataflow.transform.masking_rules
        for index, rule in enumerate(rules):
            _reject_protected(ctx, rule, f"transform.masking_rules[{index}].columns")
        touched = False
        for index, rule in enumerate(rules):
            key = f"transform.masking_rules[{index}]"
            schema = frame.collect_schema()
            columns = resolve_columns(ctx, schema.names(), rule.columns, key=f"{key}.columns")
            if columns:
                frame = frame.with_columns(_mask(ctx, rule, key, name, schema[name]).alias(name) for name in columns)
                touched = True
        return frame, self.name if touched else None


def _reject_protected(ctx: TransformContext, rule: MaskingRule, key: str) -> None:
    destination = ctx.dataflow.destination
    protected = {
        "a merge key": destination.merge_keys,
        "a partition column": [p.column for p in destination.partition_columns],
        "a framework column": list(TRAILING_COLUMNS),
    }
    for column in rule.columns:
        for what, names in protected.items():
            if reserved_match(column, names, ctx.column_name_mode):
                raise transform_error(
                    ctx, f"{key} masks '{column}', which is {what}", "remove it from the masking rule"
                )


def _mask(ctx: TransformContext, rule: MaskingRule, key: str, name: str, dtype: pl.DataType) -> pl.Expr:
    column = pl.col(name)
    try:
        return _METHODS[rule.method](column, rule, dtype)
    except ValueError as e:
        raise transform_error(
            ctx, f"{key} ({rule.method}) cannot mask column '{name}' ({dtype}): {e}", "fix the rule"
        ) from e


def _redact(column: pl.Expr, rule: MaskingRule, dtype: pl.DataType) -> pl.Expr:
    return pl.when(column.is_null()).then(None).otherwise(typed_literal(rule.value, dtype))


def _nullify(column: pl.Expr, rule: MaskingRule, dtype: pl.DataType) -> pl.Expr:
    return pl.lit(None, dtype=dtype)


def _partial(column: pl.Expr, rule: MaskingRule, dtype: pl.DataType) -> pl.Expr:
    if dtype != pl.String:
        raise ValueError("partial masking applies to string columns")
    keep = rule.keep_start + rule.keep_end
    mask = pl.lit(rule.mask_char)
    masked = pl.concat_str(column.str.head(rule.keep_start), mask, column.str.tail(rule.keep_end))
    short = column.str.len_chars() <= keep
    return pl.when(column.is_null() | (column == "")).then(column).when(short).then(mask).otherwise(masked)


def _numeric_bucket(column: pl.Expr, rule: MaskingRule, dtype: pl.DataType) -> pl.Expr:
    if not dtype.is_numeric():
        raise ValueError("numeric_bucket applies to numeric columns")
    size = float(rule.bucket_size or 1)
    bucket = (column.cast(pl.Float64) / size).floor() * size
    if isinstance(dtype, pl.Decimal):
        bucket = bucket.round(dtype.scale or 0)
    return bucket.cast(dtype)


def _date_truncate(column: pl.Expr, rule: MaskingRule, dtype: pl.DataType) -> pl.Expr:
    unit = str(rule.unit)
    if dtype == pl.Date and unit == "hour":
        raise ValueError("a date has no hour; truncate to day, month or year")
    if dtype != pl.Date and not isinstance(dtype, pl.Datetime):
        raise ValueError("date_truncate applies to date and timestamp columns")
    return column.dt.truncate(_TRUNCATE[unit])


_METHODS: dict[str, Callable[[pl.Expr, MaskingRule, pl.DataType], pl.Expr]] = {
    "redact": _redact,
    "nullify": _nullify,
    "partial": _partial,
    "numeric_bucket": _numeric_bucket,
    "date_truncate": _date_truncate,
}
