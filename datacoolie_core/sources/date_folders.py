"""Date-folder partitioned file sources (DataCoolie S-12): ``connection.configure.date_folder_partitions``.

A pattern like ``{year}/{month}/{day}`` or ``year={year}/month={month}`` names one placeholder per
``/`` level, in the order year, month, day, hour (a prefix of it: ``{year}/{month}`` is fine); text
around a placeholder is literal (``year=``). ``{year}`` matches 4 digits, the others 2. The source
folder is listed level by level: a folder whose name does not have the level's shape (``_tmp``,
``staging``) is not a date folder and is passed over; one that has the shape but no such date
(``2026/02/30``, month ``13``) is an error, as it is surely a mistake.

A folder stands for a span of time: ``2026/03`` is all of March. Pruning keeps a folder whose span
reaches the lower bound (``end > lower``: the folder holding the stored date is read again, it may
have received files since) and starts before the upper bound (``start < upper``, a replay's
exclusive end). Pruning happens at every level, so old years are never listed.

Bounds come from ``__date_folder_partition__``: the stored watermark's value (after look-back), or a
replay range on that column. The new watermark is the newest date folder a file was read from, as
an ISO string (``2026-03-02T00:00:00``). A folder date is a calendar date without a time zone: the
flat-file writer resolves the pattern with the UTC clock (D-14), so folders are UTC dates, and an
aware bound is converted to UTC before it is compared (a replay bound of ``2026-03-29T01:30+01:00``
is 00:30 UTC on the 29th, whatever daylight saving does to the local clock).
"""

from __future__ import annotations

import calendar
import os
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from datacoolie_core.columns import DATE_FOLDER_PARTITION
from datacoolie_core.errors import SourceError
from datacoolie_core.models.dataflow import Source
from datacoolie_core.models.date_pattern import Level, parse_pattern
from datacoolie_core.sources.base import ReadRequest
from datacoolie_core.sources.collect_and_watermark import lower_bounds
from datacoolie_core.sources.window import lookup


@dataclass(frozen=True)
class DateFolder:
    """A leaf date folder and the start of the span it stands for (naive: a UTC calendar date)."""

    path: str
    start: datetime


def source_levels(source: Source, label: str) -> tuple[Level, ...] | None:
    """The source connection's date-folder levels, ``None`` when it has none.

    Raises:
        SourceError: the pattern is invalid.
    """
    pattern = source.connection.configure.date_folder_partitions
    if not pattern:
        return None
    try:
        return parse_pattern(pattern)
    except ValueError as e:
        raise SourceError(
            f"{label}: connection.configure.date_folder_partitions {pattern!r}: {e}; e.g. '{{year}}/{{month}}/{{day}}'"
        ) from e


def folder_bounds(source: Source, request: ReadRequest, label: str) -> tuple[datetime | None, datetime | None]:
    """(lower, upper) of the folder spans to read: a replay range on ``__date_folder_partition__``,
    else the stored value (after look-back) as the lower bound; ``(None, None)`` reads every folder."""
    read_range = request.read_range
    if read_range is not None:
        if read_range.column.lower() != DATE_FOLDER_PARTITION:
            return None, None
        return _moment(read_range.start, label), _moment(read_range.end, label)
    return _moment(lookup(lower_bounds(source, request), DATE_FOLDER_PARTITION), label), None


def find_date_folders(
    root: str, levels: tuple[Level, ...], *, lower: datetime | None, upper: datetime | None, label: str
) -> list[DateFolder]:
    """The leaf date folders under ``root`` whose span meets ``[lower, upper)``, oldest first."""
    found: list[DateFolder] = []
    frontier: list[tuple[str, tuple[int, ...]]] = [(root, ())]
    for depth, level in enumerate(levels):
        deeper: list[tuple[str, tuple[int, ...]]] = []
        for folder, parts in frontier:
            for name in _subfolders(folder, label):
                match = level.regex.fullmatch(name)
                if match is None:
                    continue
                path, values = os.path.join(folder, name), (*parts, int(match.group(1)))
                start, end = _span(values, path, label)
                if (lower is None or end > lower) and (upper is None or start < upper):
                    deeper.append((path, values))
        frontier = deeper
        if depth == len(levels) - 1:
            found = [DateFolder(path, _span(values, path, label)[0]) for path, values in frontier]
    return sorted(found, key=lambda f: f.start)


def folder_date_of(source: Source, path: str, *, label: str) -> datetime | None:
    """The start (UTC, aware) of the date folder holding file ``path`` of a date-folder source;
    ``None`` when the source has no date folders or the file is not under one."""
    levels = source_levels(source, label)
    if levels is None or not source.path:
        return None
    parts = os.path.relpath(os.path.dirname(path), source.path).split(os.sep)[: len(levels)]
    matches = [level.regex.fullmatch(part) for level, part in zip(levels, parts, strict=False)]
    if len(parts) < len(levels) or any(m is None for m in matches):
        return None
    values = tuple(int(m.group(1)) for m in matches if m is not None)
    return _span(values, path, label)[0].replace(tzinfo=UTC)


def watermark_value(start: datetime) -> str:
    """How a folder date is stored in the watermark: its ISO string, as DataCoolie stores it."""
    return start.isoformat()


def _subfolders(folder: str, label: str) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return sorted(e.name for e in entries if e.is_dir() and not e.name.startswith((".", "_")))
    except OSError as e:
        raise SourceError(f"{label}: cannot list date folder '{folder}': {e}; check its permissions") from e


def _span(values: tuple[int, ...], path: str, label: str) -> tuple[datetime, datetime]:
    """The ``[start, end)`` a folder of ``values`` (year[, month[, day[, hour]]]) stands for."""
    year, month, day, hour = (*values, *(1, 1, 1, 0)[len(values) :])
    try:
        start = datetime(year, month, day, hour)
    except ValueError as e:
        raise SourceError(
            f"{label}: date folder '{path}' is not a date ({e}); rename or remove it, it would never be read"
        ) from e
    if len(values) == 1:
        return start, start.replace(year=year + 1)
    if len(values) == 2:
        return start, start + timedelta(days=calendar.monthrange(year, month)[1])
    return start, start + (timedelta(days=1) if len(values) == 3 else timedelta(hours=1))


def _moment(value: Any, label: str) -> datetime | None:
    """A bound as a naive UTC datetime (folder dates are UTC calendar dates)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError as e:
            raise SourceError(
                f"{label}: {DATE_FOLDER_PARTITION} bound {value!r} is not an ISO date or timestamp; "
                "fix or delete the stored watermark (or the replay bounds)"
            ) from e
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    raise SourceError(f"{label}: {DATE_FOLDER_PARTITION} bound {value!r} is not a date or timestamp")
