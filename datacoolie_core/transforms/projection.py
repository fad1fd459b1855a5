"""Slot 85: select / drop / rename columns (DataCoolie T-13, M-35).

Metadata names columns as the source has them (before renames and before the slot-90 sanitizer), or
by their sanitized names (:func:`~datacoolie_core.transforms.resolve.find_column`).
The columns the write depends on survive every projection: merge keys and partition columns must
be selected and cannot be dropped or renamed, and framework columns are kept automatically.
"""

from __future__ import annotations

import polars as pl

from datacoolie_core.columns import TRAILING_COLUMNS
from datacoolie_core.transforms.base import TransformContext
from datacoolie_core.transforms.resolve import find_column, reserved_match, resolve_columns, transform_error


class ColumnProjector:
    """Apply ``select_columns`` or ``drop_columns``, then ``rename_columns`` atomically.

    Select keeps the listed columns in the listed order, then the framework columns present. Missing
    select/drop/rename columns follow ``missing_column_policy``. Label ``ColumnProjector``.
    """

    name = "ColumnProjector"
    order = 85

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]:
        transform = ctx.dataflow.transform
        if not (transform.select_columns or transform.drop_columns or transform.rename_columns):
            return frame, None
        names = frame.collect_schema().names()
        if transform.select_columns:
            frame = frame.select(_selection(ctx, names))
        elif transform.drop_columns:
            frame = frame.drop(_dropped(ctx, names))
        if transform.rename_columns:
            frame = frame.rename(_renames(ctx, frame.collect_schema().names()))
        return frame, self.name


def _protected(ctx: TransformContext) -> dict[str, list[str]]:
    destination = ctx.dataflow.destination
    return {
        "a merge key": destination.merge_keys,
        "a partition column": [p.column for p in destination.partition_columns],
    }


def _selection(ctx: TransformContext, names: list[str]) -> list[str]:
    wanted = ctx.dataflow.transform.select_columns
    for what, columns in _protected(ctx).items():
        omitted = [c for c in columns if not reserved_match(c, wanted, ctx.column_name_mode)]
        if omitted:
            raise transform_error(
                ctx,
                f"transform.select_columns omits {omitted}, which {'is' if len(omitted) == 1 else 'are'} {what}",
                "add them to select_columns",
            )
    selected = resolve_columns(ctx, names, wanted, key="transform.select_columns")
    trailing = [name for name in names if reserved_match(name, TRAILING_COLUMNS) and name not in selected]
    return list(dict.fromkeys([*selected, *trailing]))


def _dropped(ctx: TransformContext, names: list[str]) -> list[str]:
    wanted = ctx.dataflow.transform.drop_columns
    for column in wanted:
        _refuse_protected(ctx, column, "transform.drop_columns", "cannot be dropped")
    return resolve_columns(ctx, names, wanted, key="transform.drop_columns")


def _renames(ctx: TransformContext, names: list[str]) -> dict[str, str]:
    key = "transform.rename_columns"
    mapping: dict[str, str] = {}
    for old, new in ctx.dataflow.transform.rename_columns.items():
        _refuse_protected(ctx, old, key, "cannot be renamed")
        if reserved_match(new, TRAILING_COLUMNS):
            raise transform_error(ctx, f"{key} renames '{old}' to the framework name '{new}'", "choose another name")
        source = resolve_columns(ctx, names, [old], key=key)
        if not source:
            continue
        clash = find_column(names, new, ctx.column_name_mode)
        if clash is not None and clash != source[0]:
            raise transform_error(
                ctx,
                f"{key} renames '{old}' to '{new}', but column '{clash}' already exists",
                "drop it first or pick another name",
            )
        mapping[source[0]] = new
    return mapping


def _refuse_protected(ctx: TransformContext, column: str, key: str, verb: str) -> None:
    protected = {**_protected(ctx), "a framework column": list(TRAILING_COLUMNS)}
    for what, names in protected.items():
        if reserved_match(column, names, ctx.column_name_mode):
            raise transform_error(ctx, f"{key}: '{column}' is {what} and {verb}", f"remove '{column}' from {key}")
