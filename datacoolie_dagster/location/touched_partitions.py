"""The partitions of a table that rows touched: window-column values -> Dagster partition keys.

The core reports, per write, the rows per window of a column the caller names
(:class:`~datacoolie_core.models.runtime.TouchedWindows`, asked for with a
:class:`~datacoolie_core.models.run_config.WindowSpec`). Here the windows become partition keys. A
window is never wider than a partition and starts on a partition boundary, so each window lies in
exactly one partition and the mapping is exact:

- calendar partitions in UTC: windows of the partition's own unit (a month for months:3 quarters,
  an hour for hours:6), in another time zone quarter hours (every zone's offset is whole quarters);
- integer ``step`` partitions: windows of the step from the partitioning's start.

Example:
    >>> rows = partition_rows(partitioning, runtime.destination.touched)  # doctest: +SKIP
    >>> rows.keys  # the partitions a watermark load touched, e.g. ['2024-02', '2024-07']
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

import dagster as dg

from datacoolie_core import DataFlow
from datacoolie_core.api import TouchedWindows, WindowSpec
from datacoolie_dagster.location.partitions import TablePartitioning

if TYPE_CHECKING:
    import polars as pl

_GRAIN = {"years": "1mo", "months": "1mo", "weeks": "1d", "days": "1d", "hours": "1h", "minutes": "1m"}
"""Per partition unit, a window width that divides its partitions (in UTC)."""
_OFFSET_GRAIN = "15m"
"""Outside UTC a partition starts at local midnight: a whole number of quarter hours from UTC's."""


@dataclass(frozen=True)
class PartitionRows:
    """Rows per partition key, and the rows that fall in no partition of the definition."""

    rows: Mapping[str, int] = field(default_factory=dict)
    outside: int = 0
    """Rows before the first or after the last partition, or with a null window value."""

    @property
    def keys(self) -> list[str]:
        """The touched partition keys, in window order."""
        return list(self.rows)


def window_spec(partitioning: TablePartitioning, dataflow: DataFlow) -> WindowSpec | None:
    """What to ask the core about a write of ``dataflow``: its chunk column (default its first
    watermark column, as replay selects), in windows that fit ``partitioning``; ``None`` when the
    dataflow names no such column."""
    column = partitioning.config.chunk_column or next(iter(dataflow.source.watermark_columns), None)
    return column_window_spec(partitioning, column) if column is not None else None


def column_window_spec(partitioning: TablePartitioning, column: str) -> WindowSpec:
    """Windows of ``column`` that each lie in one partition of ``partitioning``."""
    config = partitioning.config
    ((unit, amount),) = config.chunk_interval.items()
    if unit == "step":
        return WindowSpec(column=column, every=amount, origin=int(config.start))  # type: ignore[arg-type]
    utc = config.timezone.upper() in ("UTC", "ETC/UTC", "Z")
    return WindowSpec(column=column, every=_GRAIN[unit] if utc or unit == "minutes" else _OFFSET_GRAIN)


def window_specs(tables: Iterable[Any]) -> dict[str, WindowSpec]:
    """``dataflow_id -> WindowSpec`` for every dataflow writing a partitioned table.

    ``tables``: objects with ``table`` (a ``DestinationTable``) and ``partitioning`` (``TableAsset``).
    """
    specs: dict[str, WindowSpec] = {}
    for asset in tables:
        if asset.partitioning is None:
            continue
        for dataflow_id, dataflow in zip(asset.table.dataflow_ids, asset.table.dataflows, strict=True):
            spec = window_spec(asset.partitioning, dataflow)
            if spec is not None:
                specs[dataflow_id] = spec
    return specs


def partition_rows(partitioning: TablePartitioning, touched: TouchedWindows) -> PartitionRows:
    """The partitions the windows of ``touched`` lie in, with their rows."""
    rows: dict[str, int] = {}
    outside = touched.null_rows
    key_of = _key_finder(partitioning)
    for start, count in zip(touched.starts, touched.rows, strict=True):
        key = key_of(start)
        if key is None:
            outside += count
        else:
            rows[key] = rows.get(key, 0) + count
    return PartitionRows(rows, outside)


def partition_rows_of_values(partitioning: TablePartitioning, dataflow: DataFlow, values: pl.Series) -> PartitionRows:
    """The partitions rows with these window-column ``values`` belong to (e.g. a new file's column).

    Raises:
        ValueError: the dataflow names no window column, or the values' type has no windows.
    """
    import polars as pl  # with the first values mapped (a sensor tick, a test): not with the code location

    from datacoolie_core.api import touched_windows

    spec = window_spec(partitioning, dataflow)
    if spec is None:
        raise ValueError(f"dataflow '{dataflow.name}' has no chunk_column or watermark column to partition by")
    touched = touched_windows(pl.DataFrame({spec.column: values}), spec)
    if touched is None:
        raise ValueError(f"column '{spec.column}' of type {values.dtype} has no {spec.every!r} windows")
    return partition_rows(partitioning, touched)


def _key_finder(partitioning: TablePartitioning) -> Callable[[Any], str | None]:
    """``window start -> partition key`` (``None``: in no partition)."""
    partitions_def = partitioning.partitions_def
    if isinstance(partitions_def, dg.TimeWindowPartitionsDefinition):
        return lambda start: _time_key(partitions_def, start)
    windows = sorted((*partitioning.window(k), k) for k in partitions_def.get_partition_keys())
    starts = [w[0] for w in windows]

    def step_key(start: Any) -> str | None:
        if not isinstance(start, int):
            return None
        index = bisect.bisect_right(starts, start) - 1
        return windows[index][2] if index >= 0 and start < windows[index][1] else None

    return step_key


def _time_key(partitions_def: dg.TimeWindowPartitionsDefinition, start: Any) -> str | None:
    if isinstance(start, datetime):
        moment = start if start.tzinfo else start.replace(tzinfo=UTC)  # naive = UTC, as replay reads it
    elif isinstance(start, date):
        moment = datetime(start.year, start.month, start.day, tzinfo=UTC)
    else:
        return None
    end = partitions_def.end
    if moment < partitions_def.start or (end is not None and moment >= end):
        return None
    return partitions_def.get_partition_key_for_timestamp(moment.timestamp())
