"""Pure checks that stored state fits its dataflow and agrees with what the destination committed.

A watermark that parses is not yet a usable one: its keys must be the dataflow's watermark columns
and its values orderable scalars, or the reader would silently ignore it and read everything again
(duplicates on an append). The I/O side of the cross-check is
:mod:`datacoolie_core.orchestration.state_check`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date, time
from decimal import Decimal
from typing import Any

from datacoolie_core.errors import WatermarkError
from datacoolie_core.transforms.column_names import sanitize_name
from datacoolie_core.watermark.merge import merge_watermarks
from datacoolie_core.watermark.serializer import (
    DATE_FOLDER_PARTITION_KEY,
    STATE_FIX,
    deserialize_watermark,
    serialize_watermark,
)

_ORDERABLE = (date, time, int, float, Decimal, str, bytes)  # datetime is a date


def _spelling(name: str) -> str:
    # metadata may name a column raw or sanitized ("Order Date" / "order_date"): one column, one key
    # (the name rule of docs/columns.md; which stored key a column reads is decided in sources.window)
    return sanitize_name(name, "snake").lower()


def check_watermark_fits(watermark: Mapping[str, Any], watermark_columns: Sequence[str]) -> None:
    """Raise unless every key is one of ``watermark_columns`` (any spelling) and every value orderable.

    ``__date_folder_partition__`` is always allowed: DataCoolie's date-folder readers keep their
    position under it. Null values are allowed beside a non-null one (a column that was all null).

    Raises:
        WatermarkError: naming the unknown key or the badly typed value, expected vs found.
    """
    known = {_spelling(c) for c in watermark_columns} | {_spelling(DATE_FOLDER_PARTITION_KEY)}
    unknown = [key for key in watermark if _spelling(key) not in known]
    if unknown:
        expected = ", ".join(repr(c) for c in watermark_columns) or "none (the dataflow has no watermark_columns)"
        raise WatermarkError(
            f"Watermark does not fit the dataflow: key(s) {', '.join(map(repr, unknown))} are not its "
            f"watermark columns (expected {expected}). It is NOT treated as a first run. Fix: {STATE_FIX}"
        )
    for column in watermark_columns:
        keys = [key for key in watermark if _spelling(key) == _spelling(column)]
        if len(keys) > 1:
            raise WatermarkError(
                f"the stored watermark has several keys for watermark column '{column}' "
                f"({', '.join(map(repr, keys))}); keep the one with the newest value and delete the others "
                f"from the watermark file. Fix: {STATE_FIX}"
            )
    for key, value in watermark.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, _ORDERABLE)):
            raise WatermarkError(
                f"Watermark does not fit the dataflow: {key!r} holds {type(value).__name__} {value!r}, "
                "expected a timestamp, date, time, number or string. It is NOT treated as a first run. "
                f"Fix: {STATE_FIX}"
            )


def covers(stored: Mapping[str, Any] | None, committed: Mapping[str, Any]) -> bool:
    """True when ``stored`` is at or past ``committed`` in every column (merging changes nothing).

    Values that cannot be ordered against each other (a date where a timestamp was saved) do not cover.
    """
    if stored is None:
        return False
    try:
        return serialize_watermark(merge_watermarks(stored, committed)) == serialize_watermark(stored)
    except WatermarkError:
        return False


def merge_recorded(texts: Iterable[str | None]) -> dict[str, Any] | None:
    """The never-backward merge of watermarks recorded in commits (``None`` texts are skipped).

    Every recorded watermark is a lower bound of rows the destination holds, so their merge is the
    furthest point loaded; ``None`` when no commit recorded one.
    """
    merged: dict[str, Any] | None = None
    for text in texts:
        if text is not None:
            merged = merge_watermarks(merged, deserialize_watermark(text))
    return merged
