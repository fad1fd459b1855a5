"""Merge a stored watermark with a new candidate so it never moves backward.

A run computes a candidate (the max of each watermark column in what it read). Runs can finish out
of order and a retried run can see older data, so the stored value is combined per column with the
candidate instead of being overwritten: ordered values keep the max, and values that cannot be
ordered against each other raise instead of guessing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

from datacoolie_core.errors import WatermarkError

# Kinds whose values are ordered among themselves. Exact numbers (int, Decimal) compare with each
# other; float is kept apart because float vs Decimal equality/ordering is lossy.
_ORDERED = frozenset(
    {
        "naive datetime",
        "aware datetime",
        "date",
        "naive time",
        "aware time",
        "exact number",
        "float",
        "str",
    }
)

_DATE_VS_DATETIME_FIX = (
    "cast the watermark column to one type (date or timestamp) in every run, or repair/delete the stored watermark"
)
_TZ_FIX = (
    "make the watermark column consistently timezone-aware (e.g. convert to UTC) or consistently "
    "naive, or repair/delete the stored watermark"
)
_NUMERIC_FIX = (
    "cast the watermark column to one numeric type (integer/decimal or float) in every run, or "
    "repair/delete the stored watermark"
)

# Kind pairs that are both ordered yet cannot be compared safely. Any other kind change means the
# column's type changed deliberately (e.g. a schema hint turned a str column into a datetime), and
# the candidate replaces the stored value.
_MISMATCH_FIXES: dict[frozenset[str], str] = {
    frozenset({"date", "naive datetime"}): _DATE_VS_DATETIME_FIX,
    frozenset({"date", "aware datetime"}): _DATE_VS_DATETIME_FIX,
    frozenset({"naive datetime", "aware datetime"}): _TZ_FIX,
    frozenset({"naive time", "aware time"}): _TZ_FIX,
    frozenset({"float", "exact number"}): _NUMERIC_FIX,
}


def merge_watermarks(stored: Mapping[str, Any] | None, candidate: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return a new watermark combining ``stored`` and ``candidate`` per column.

    * Columns missing from the candidate, or ``None`` in it, keep their stored value.
    * Temporal values (datetime, date, time), exact numbers (int/Decimal), floats and strings keep
      the max; aware datetimes are compared in UTC and the winner is kept as given. Strings compare
      lexically, which is how the readers filter a string watermark column.
    * date vs datetime, naive vs aware, and float vs int/Decimal raise :class:`WatermarkError`
      naming the column, both types and a fix.
    * Any other kind change, or opaque values (bool, dict, list, bytes, ...): the candidate wins.

    Pure: neither argument is modified.
    """
    merged = dict(stored or {})
    for column, new in (candidate or {}).items():
        if new is None:
            continue
        old = merged.get(column)
        merged[column] = new if old is None else _merge_value(column, old, new)
    return merged


def _merge_value(column: str, old: Any, new: Any) -> Any:
    old_kind, new_kind = _kind(old), _kind(new)
    if old_kind != new_kind:
        fix = _MISMATCH_FIXES.get(frozenset({old_kind, new_kind}))
        if fix is not None:
            raise WatermarkError(
                f"Watermark column {column!r} cannot be merged: stored {_describe(old)} {old!r} and "
                f"new {_describe(new)} {new!r} cannot be ordered. Fix: {fix}"
            )
        return new
    if old_kind not in _ORDERED:
        return new
    _require_orderable(column, old, "stored")
    _require_orderable(column, new, "new")
    # Ties keep the stored value, so equal instants in another zone do not cause a rewrite.
    return new if _order_key(new) > _order_key(old) else old


def _kind(value: Any) -> str:
    """Classify ``value`` for merging; ``"opaque"`` values are never ordered."""
    if isinstance(value, bool):  # bool is an int subclass but not a meaningful watermark order
        return "opaque"
    if isinstance(value, datetime):  # before date: datetime subclasses date
        return "aware datetime" if value.utcoffset() is not None else "naive datetime"
    if isinstance(value, date):
        return "date"
    if isinstance(value, time):
        return "aware time" if value.utcoffset() is not None else "naive time"
    if isinstance(value, (int, Decimal)):
        return "exact number"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "opaque"


def _describe(value: Any) -> str:
    kind = _kind(value)
    return type(value).__name__ if kind in ("exact number", "float", "date", "str", "opaque") else kind


def _order_key(value: Any) -> Any:
    if isinstance(value, datetime) and value.utcoffset() is not None:
        return value.astimezone(UTC)
    return value


def _require_orderable(column: str, value: Any, which: str) -> None:
    # NaN compares false with everything, so max() would silently pin or drop it.
    is_nan = (isinstance(value, float) and math.isnan(value)) or (isinstance(value, Decimal) and value.is_nan())
    if is_nan:
        raise WatermarkError(
            f"Watermark column {column!r} cannot be merged: {which} value is NaN, which has no order. "
            "Fix: filter NaN out of the watermark column, or repair the stored watermark"
        )
