"""Look-back: the effective lower bounds of an incremental read (DataCoolie S-07, S-08).

A source may re-read a trailing window before its stored watermark (late-arriving rows, an
accounting period still open). Pure arithmetic, no I/O:

* **Fixed offset** (``years``/``months``/``days``/``hours``): every temporal watermark value moves
  back; years and months calendar-wise with the day clamped to the month's end (31 Mar - 1 month
  = 29 Feb in a leap year), then days and hours as a ``timedelta``.
* **Closing day** (``closing_day = N``): the bound is the 1st of the previous month when the
  reference day (UTC) is ``<= N``, else the 1st of the current month, minus the optional extra
  ``months``/``years``. DataCoolie computes it from "now" only; here the bound never lies *after*
  the stored value, so a dataflow that missed runs still reads everything since its watermark
  instead of silently skipping the gap.

Temporal values are ``date``, ``datetime`` and ISO-8601 strings (DataCoolie 0.1.7 stored string
watermarks); a value keeps its type: a date stays a date, an aware datetime stays aware in its own
zone, a string comes back as a string in the same shape. A date moved back by hours is floored to
the day, so the window only ever grows. When the watermark holds ``__date_folder_partition__`` (a
date-folder source), only that key moves back: the folders re-read are the look-back, and the data
columns keep their exact stored value. Non-temporal values (numbers, other strings) are returned
unchanged. Without a stored watermark (first run) there is nothing to move; the upper bound of a
read is never shifted, and a replay range gets no look-back at all (the caller does not ask).
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from datacoolie_core.columns import DATE_FOLDER_PARTITION
from datacoolie_core.models.connection import BackwardConfig


@dataclass(frozen=True)
class _IsoShape:
    """How an ISO string watermark was written, so the moved value is written the same way."""

    date_only: bool
    separator: str
    fractional: bool


def effective_lower_bounds(
    watermark: Mapping[str, Any] | None, backward: BackwardConfig | None, *, reference_time: datetime
) -> dict[str, Any] | None:
    """The lower bounds to read after (``col > bound``), per watermark key.

    Args:
        watermark: the stored watermark; ``None`` or empty means a first run.
        backward: the source's effective look-back (``source.backward``), or ``None``.
        reference_time: "now" of the run (closing-day arithmetic uses its UTC date).

    Returns:
        ``None`` for a first run, else a new dict with every temporal value moved back.
    """
    if not watermark:
        return None
    if backward is None or not _has_offset(backward):
        return dict(watermark)
    # S-07: with a date-folder key, only the folder bound moves back; the data columns keep their exact value
    folder_only = any(key.lower() == DATE_FOLDER_PARTITION for key in watermark)
    return {
        key: shift_value(value, backward, reference_time=reference_time)
        if not folder_only or key.lower() == DATE_FOLDER_PARTITION
        else value
        for key, value in watermark.items()
    }


def shift_value(value: Any, backward: BackwardConfig, *, reference_time: datetime) -> Any:
    """One watermark value moved back by ``backward``; non-temporal values unchanged."""
    if isinstance(value, str):
        return _shift_iso_string(value, backward, reference_time)
    if isinstance(value, datetime):
        return _shift_datetime(value, backward, reference_time)
    if isinstance(value, date):
        return _shift_datetime(datetime(value.year, value.month, value.day), backward, reference_time).date()
    return value


def closing_day_start(reference_time: datetime, closing_day: int, *, months: int = 0, years: int = 0) -> date:
    """1st of the previous month if the reference day is ``<= closing_day``, else of the current one."""
    today = reference_time.astimezone(UTC).date() if reference_time.tzinfo else reference_time.date()
    first = today.replace(day=1)
    back = months + 12 * years + (1 if today.day <= closing_day else 0)
    return minus_months(first, back)


def minus_months(value: Any, months: int) -> Any:
    """``value`` (a date or datetime) ``months`` calendar months earlier, the day clamped to the month end."""
    if months == 0:
        return value
    index = value.year * 12 + (value.month - 1) - months
    year, month = divmod(index, 12)
    day = min(value.day, calendar.monthrange(year, month + 1)[1])
    return value.replace(year=year, month=month + 1, day=day)


def _has_offset(backward: BackwardConfig) -> bool:
    return any((backward.years, backward.months, backward.days, backward.hours, backward.closing_day))


def _shift_datetime(value: datetime, backward: BackwardConfig, reference_time: datetime) -> datetime:
    months = (backward.months or 0) + 12 * (backward.years or 0)
    if backward.closing_day:
        start = closing_day_start(reference_time, backward.closing_day, months=backward.months or 0,
                                  years=backward.years or 0)  # fmt: skip
        bound = datetime(start.year, start.month, start.day, tzinfo=value.tzinfo)
        return min(bound, value)
    moved = minus_months(value, months)
    return moved - timedelta(days=backward.days or 0, hours=backward.hours or 0)


def _shift_iso_string(value: str, backward: BackwardConfig, reference_time: datetime) -> str:
    parsed = _parse_iso(value)
    if parsed is None:
        return value
    moment, shape = parsed
    moved = _shift_datetime(moment, backward, reference_time)
    if shape.date_only:
        return moved.date().isoformat()
    return moved.isoformat(sep=shape.separator, timespec="microseconds" if shape.fractional else "seconds")


def _parse_iso(value: str) -> tuple[datetime, _IsoShape] | None:
    text = value.strip()
    if len(text) < 10 or not text[:4].isdigit() or text[4] != "-":
        return None  # not ISO-shaped: fromisoformat would also accept e.g. '20240101'
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if len(text) == 10:
        return moment, _IsoShape(date_only=True, separator="T", fractional=False)
    separator = text[10] if text[10] in "T " else "T"
    return moment, _IsoShape(date_only=False, separator=separator, fractional="." in text[10:])
