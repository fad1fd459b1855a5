"""Which windows of a column a write touched: one aggregation of the frame already in hand.

An orchestrator that partitions a table by a column (Dagster's time windows, integer ranges) asks,
through ``DataCoolieRunConfig.touched_windows``, which of its windows received rows; the runner
answers here, after the commit, without reading the table back. The core knows nothing of the
orchestrator's partitions: it reports windows of a width the caller picks (a width that divides
the caller's partitions makes the mapping exact).
"""

from __future__ import annotations

import logging
from typing import Any

import polars as pl

from datacoolie_core.models.run_config import WindowSpec
from datacoolie_core.models.runtime import TouchedWindows
from datacoolie_core.transforms.base import ColumnNameMode
from datacoolie_core.transforms.resolve import find_column

_LOG = logging.getLogger("datacoolie.destinations")
_START = "__datacoolie_window_start"


def touched_windows(frame: pl.DataFrame, spec: WindowSpec, mode: ColumnNameMode = "lower") -> TouchedWindows | None:
    """Rows of ``frame`` per window of ``spec.column``; ``None`` when no window applies.

    Datetimes are converted to UTC and reported naive; dates stay dates; integers are floored to
    ``origin + k * every``. ``None`` (logged) when the column is not in the frame, its type has no
    windows (strings, floats), or ``every`` does not fit the type: the write itself is never failed
    by this report, which runs after the commit.

    Example:
        >>> frame = pl.DataFrame({"n": [1, 5, 12, None]})
        >>> touched_windows(frame, WindowSpec(column="n", every=10)).starts
        [0, 10]
    """
    try:
        name = find_column(frame.columns, spec.column, mode)
        start = _window_start(frame, name, spec) if name is not None else None
        if name is None or start is None:
            _LOG.warning("touched windows: no %r window on column %r of the written rows", spec.every, spec.column)
            return None
        counts = frame.lazy().select(start.alias(_START)).group_by(_START).len().sort(_START).collect()
    except Exception as e:  # a report after the commit: it must never fail the write
        _LOG.warning("touched windows of column %r could not be computed: %s", spec.column, e)
        return None
    present = counts.filter(pl.col(_START).is_not_null())
    nulls = counts.filter(pl.col(_START).is_null())["len"].sum()
    return TouchedWindows(
        column=name,
        every=spec.every,
        starts=present[_START].to_list(),
        rows=present["len"].to_list(),
        null_rows=int(nulls or 0),
    )


def _window_start(frame: pl.DataFrame, name: str, spec: WindowSpec) -> pl.Expr | None:
    dtype = frame.schema[name]
    column = pl.col(name)
    if isinstance(spec.every, str) and isinstance(dtype, pl.Datetime):
        if dtype.time_zone is not None:  # windows are UTC; a naive column already is (as replay reads it)
            column = column.dt.convert_time_zone("UTC").dt.replace_time_zone(None)
        return column.dt.truncate(spec.every)
    if isinstance(spec.every, str) and dtype == pl.Date:
        return column.dt.truncate(spec.every)
    if isinstance(spec.every, int) and dtype.is_integer():
        return (column - spec.origin) // spec.every * spec.every + spec.origin
    return None


class TouchedTally:
    """:func:`touched_windows` of a stream of batches: each batch's windows counted as it passes.

    The result equals :func:`touched_windows` of all the batches together; ``None`` when no window
    applies (decided by the first batch: every batch of a stream has the same schema).
    """

    def __init__(self, spec: WindowSpec, mode: ColumnNameMode = "lower") -> None:
        self._spec, self._mode = spec, mode
        self._rows: dict[Any, int] = {}
        self._nulls = 0
        self._column: str | None = None
        self._failed = False

    def add(self, batch: pl.DataFrame) -> None:
        if self._failed:
            return
        part = touched_windows(batch, self._spec, self._mode)
        if part is None:
            self._failed = True
            return
        self._column = part.column
        self._nulls += part.null_rows
        for start, rows in zip(part.starts, part.rows, strict=True):
            self._rows[start] = self._rows.get(start, 0) + rows

    def result(self) -> TouchedWindows | None:
        if self._failed or self._column is None:
            return None
        starts = sorted(self._rows)
        return TouchedWindows(
            column=self._column,
            every=self._spec.every,
            starts=starts,
            rows=[self._rows[s] for s in starts],
            null_rows=self._nulls,
        )
