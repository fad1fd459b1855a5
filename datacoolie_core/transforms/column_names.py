"""Slot 90: sanitize column names and put framework columns last (DataCoolie X-11 … X-13, D-18).

This runs last, so the slots before it see the names as the source has them while the written table
has sanitized names. Metadata may spell a column either way: :func:`datacoolie_core.transforms.resolve.find_column`
matches a name through :func:`sanitize_name` too (``Order ID`` and ``order_id`` are one column).
"""

from __future__ import annotations

import re
from functools import lru_cache

import polars as pl

from datacoolie_core.columns import TRAILING_COLUMNS
from datacoolie_core.errors import TransformError
from datacoolie_core.suggestions import did_you_mean
from datacoolie_core.transforms.base import TransformContext

_UNSAFE = re.compile(r"[^a-z0-9]+")
_ACRONYM = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


def _lower(name: str) -> str:
    cleaned = _UNSAFE.sub("_", name.lower()).strip("_")
    return f"_{cleaned}" if cleaned[:1].isdigit() else cleaned


def _snake(name: str) -> str:
    return _lower(_CAMEL.sub(r"\1_\2", _ACRONYM.sub(r"\1_\2", name)))


NAME_MODES = {"lower": _lower, "snake": _snake}
"""``column_name_mode`` -> the function it applies to one name."""


def sanitize_name(name: str, mode: str = "lower") -> str:
    """The sanitized form of one column name.

    ``lower``: lower-case, every run of characters outside ``[a-z0-9]`` becomes ``_``, leading and
    trailing ``_`` are stripped, a leading digit gets a ``_`` prefix (``order-date`` -> ``order_date``,
    ``123`` -> ``_123``). ``snake`` first splits camel case (``HTTPStatus`` -> ``http_status``). A name
    starting with ``_`` is left alone; one that would become empty keeps its original spelling.

    Raises:
        ValueError: ``mode`` is not ``lower`` or ``snake``.
    """
    if mode not in NAME_MODES:
        raise ValueError(f"unknown column_name_mode '{mode}'{did_you_mean(mode, NAME_MODES)} (known: lower, snake)")
    if name.startswith("_"):
        return name
    return _sanitized(name, mode)


@lru_cache(maxsize=8192)
def _sanitized(name: str, mode: str) -> str:
    # cached: every slot resolving names sanitizes every column again; a run sees few distinct names
    return NAME_MODES[mode](name) or name


def trailing_order(names: list[str]) -> list[str]:
    """Business columns in their order, then the framework columns present in D-18 order."""
    business = [name for name in names if name not in TRAILING_COLUMNS]
    return [*business, *(name for name in TRAILING_COLUMNS if name in names)]


class ColumnNameSanitizer:
    """Rename every column per ``ctx.column_name_mode`` and move framework columns to the end.

    Two columns ending with the same name (ignoring case) is an error listing them. Always
    applies; label ``ColumnNameSanitizer(<mode>)``.
    """

    name = "ColumnNameSanitizer"
    order = 90

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]:
        mode = ctx.column_name_mode
        try:
            renames = {name: sanitize_name(name, mode) for name in frame.collect_schema().names()}
        except ValueError as e:
            raise TransformError(
                f"dataflow '{ctx.dataflow.name}': {e}; set column_name_mode to 'lower' or 'snake'"
            ) from e
        _refuse_collisions(ctx, renames)
        frame = frame.rename({old: new for old, new in renames.items() if old != new})
        return frame.select(trailing_order(list(renames.values()))), f"{self.name}({mode})"


def _refuse_collisions(ctx: TransformContext, renames: dict[str, str]) -> None:
    by_final: dict[str, list[str]] = {}
    for old, new in renames.items():
        by_final.setdefault(new.lower(), []).append(old)
    collisions = {final: olds for final, olds in by_final.items() if len(olds) > 1}
    if collisions:
        listed = "; ".join(f"{olds} -> '{final}'" for final, olds in collisions.items())
        raise TransformError(
            f"dataflow '{ctx.dataflow.name}': column sanitization would create duplicate column names: {listed}; "
            "rename or drop one of each group with transform.rename_columns / drop_columns"
        )
