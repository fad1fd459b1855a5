"""The shared tail of every read (DataCoolie S-03, S-06): window, filter, one collect, count and max.

Order: the shape check (every required column is there, :mod:`~datacoolie_core.sources.shape`) ->
the watermark window (or replay range) -> ``source.filter_expression`` -> collect once -> count ->
new watermark over the surviving rows. Rows the filter drops never advance the watermark (F-08).
Zero rows is ``None``: the dataflow is skipped and nothing is written.

The new watermark is keyed by the spelling the stored watermark already uses for the column (else
as metadata spells it, the first time): when metadata switches between ``Order Date`` and
``order_date``, the stored key keeps its first spelling and still reads.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import polars as pl

from datacoolie_core.errors import SourceError
from datacoolie_core.models.dataflow import Source
from datacoolie_core.models.runtime import SourceRuntimeInfo
from datacoolie_core.sources.base import ReadRequest, ReadResult, SourceScan
from datacoolie_core.sources.lookback import effective_lower_bounds
from datacoolie_core.sources.shape import check_columns, check_framework_columns
from datacoolie_core.sources.window import Window, build_window, is_pseudo, resolve_column, stored_key, window_predicate
from datacoolie_core.transforms.base import ColumnNameMode

logger = logging.getLogger(__name__)

_ROWS = "__datacoolie_rows__"
"""Alias of the row count beside the maxima (no watermark key is spelled like it)."""


def source_label(source: Source) -> str:
    """How errors name a source: ``source 'sales.orders' (connection 'landing')``."""
    what = source.python_function or ".".join(p for p in (source.schema_name, source.table) if p) or "query"
    return f"source '{what}' (connection '{source.connection.name}')"


def lower_bounds(source: Source, request: ReadRequest) -> dict[str, Any] | None:
    """The effective lower bounds of a read: look-back applied; ``None`` for a range or a first run."""
    if request.read_range is not None:
        return None
    return effective_lower_bounds(request.watermark, source.backward, reference_time=request.reference_time)


def read_window(source: Source, request: ReadRequest) -> Window | None:
    """The data window of a read (``None``: every row qualifies)."""
    return build_window(
        source.watermark_columns, lower_bounds(source, request), request.read_range, request.column_name_mode
    )


def plan_read(
    lf: pl.LazyFrame,
    source: Source,
    request: ReadRequest,
    *,
    source_action: dict[str, Any],
    pseudo_watermark: Mapping[str, Any] | None = None,
    apply_filter: bool = True,
    check_unchanged: Callable[[], None] | None = None,
    size_hint: int | None = None,
    null_free: frozenset[str] = frozenset(),
) -> SourceScan:
    """The shape check, then the watermark window and ``filter_expression`` on ``lf`` (nothing read yet).

    Both filters sit directly on the scan, in the columns' own dtypes, so Polars pushes them into
    it (Delta file skipping by statistics, Parquet row-group pruning). A reader that has its rows
    already (SQL, API, a function) reads them at once: ``collect_scan(plan_read(...))``.

    Args:
        lf: the raw rows of the source (lazy; nothing read yet, ideally).
        source: the dataflow's source (watermark columns, look-back, filter_expression).
        request: stored watermark / replay range / reference time.
        source_action: what the reader did (files, SQL, version), recorded as is.
        pseudo_watermark: watermark values the reader computed itself (``__file_modification_time``).
        apply_filter: ``False`` when the reader already pushed ``filter_expression`` down (SQL).
        check_unchanged: raises when the source changed since it was planned (listed files).
        size_hint: bytes the read may cover (listed files, the Delta table's files).
        null_free: columns known to hold no null (a Delta log's statistics), which the NULL
            watermark check need not count.

    Returns:
        The filtered scan; :func:`collect_scan` or :func:`summarize_scan` reads it.

    Raises:
        SourceError: the source's schema cannot be read.
        SourceShapeError: a watermark column, merge key, hinted column ... is missing.
        SqlExpressionError: ``filter_expression`` names an unknown column or is unsupported.
    """
    label = source_label(source)
    schema = _collect_schema(lf, label)
    check_columns(schema.names(), source, request, label=label)
    if source.connection.connection_type != "file":  # file sources: checked file by file, before tagging
        check_framework_columns(schema.names(), source, label=label)
    window = read_window(source, request)
    if window is not None:
        warn_unordered_watermarks(lf, schema, source, request, label=label, null_free=null_free)
        lf = lf.filter(window_predicate(window, schema, label=label))
    if apply_filter and source.filter_expression:
        lf = lf.filter(_compiled_filter(source.filter_expression, schema, label, request.reference_time))
    return SourceScan(lf, source, request, label, source_action, pseudo_watermark, check_unchanged, size_hint)


def warn_unordered_watermarks(
    lf: pl.LazyFrame,
    schema: pl.Schema,
    source: Source,
    request: ReadRequest,
    *,
    label: str,
    null_free: frozenset[str] = frozenset(),
) -> int:
    """Count the source rows whose watermark value is NULL or NaN; warn when there are any.

    Such a row passes no lower bound (``col > stored``, as Spark filters NULL; NaN is kept out the
    same way, as it has no order), so only a first or full load reads it. The count is one
    aggregate over the watermark columns, left out when every one is in ``null_free`` and not a
    float (a whole pass over the source saved). Returns the count.
    """
    if lower_bounds(source, request) is None:
        return 0
    names = [
        resolve_column(c, schema.names(), label=label, mode=request.column_name_mode)
        for c in source.watermark_columns
        if not is_pseudo(c)
    ]
    if all(n in null_free and not schema[n].is_float() for n in names):
        return 0
    unordered = [
        pl.col(n).is_null() | pl.col(n).is_nan() if schema[n].is_float() else pl.col(n).is_null() for n in names
    ]
    count = int(_collect(lf.select(pl.any_horizontal(unordered).sum()), label).item())
    if count:
        logger.warning(
            "%s: %d source row(s) have a NULL or NaN watermark value (%s); an incremental read never passes "
            "them (only a first or full load reads them): fill the column at the source to load them",
            label,
            count,
            ", ".join(names),
        )
    return count


def collect_scan(scan: SourceScan) -> ReadResult | None:
    """Collect the scan's rows once; count them and take the new watermark from them.

    Returns:
        ``None`` when no row qualifies, else the rows and the runtime record.

    Raises:
        SourceError: the data cannot be read.
    """
    data = _collect(scan.rows, scan.label)
    if data.height == 0:
        return None
    source, request = scan.source, scan.request
    after = new_watermark(
        data, source.watermark_columns, label=scan.label, mode=request.column_name_mode, stored=request.watermark
    )
    return ReadResult(data=data, runtime=read_runtime(scan, data.height, after))


def summarize_scan(scan: SourceScan) -> SourceRuntimeInfo | None:
    """Count the scan's rows and take the new watermark without materializing them (``None``: no rows).

    One aggregate query: Polars reads only the watermark columns (and those the filters need),
    pruned by the same pushed-down window. The values are those :func:`collect_scan` computes.
    """
    source, request = scan.source, scan.request
    maxima = watermark_maxima(
        scan.rows.collect_schema(),
        source.watermark_columns,
        label=scan.label,
        mode=request.column_name_mode,
        stored=request.watermark,
    )
    row = _collect(scan.rows.select(pl.len().alias(_ROWS), *maxima.values()), scan.label).row(0, named=True)
    if not row[_ROWS]:
        return None
    return read_runtime(scan, row[_ROWS], watermark_values(row, maxima))


class RowCounter:
    """Counts the rows of a lazy frame as they stream through it (for a read with no watermark to take)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the streaming engine may call from several threads
        self.rows = 0

    def observe(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        """``lf`` counted batch by batch; filters and projections after it are not pushed below it."""
        return lf.map_batches(self._count, streamable=True, schema=lf.collect_schema())

    def _count(self, batch: pl.DataFrame) -> pl.DataFrame:
        with self._lock:
            self.rows += batch.height
        return batch


def read_runtime(scan: SourceScan, rows: int, after: Mapping[str, Any]) -> SourceRuntimeInfo:
    """The runtime record of a read of ``rows`` rows whose data watermark is ``after``."""
    request = scan.request
    return SourceRuntimeInfo(
        rows_read=rows,
        watermark_before=dict(request.watermark) if request.watermark else None,
        watermark_effective=_effective(scan.source, request),
        watermark_after=dict(after) | dict(scan.pseudo_watermark or {}),
        source_action=scan.source_action,
    )


def new_watermark(
    data: pl.DataFrame,
    watermark_columns: Iterable[str],
    *,
    label: str,
    mode: ColumnNameMode = "lower",
    stored: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Max of each (non-pseudo) watermark column; all-null columns omitted.

    Keyed by the key ``stored`` already has for the column, else as metadata spells it: once saved,
    a column's key keeps its spelling whichever spelling metadata later uses.

    An aware datetime comes back in UTC. A nanosecond maximum is rounded *up* to the microsecond
    (Python datetimes hold microseconds): rounding down would make ``col > stored`` re-read the
    newest rows on every run.
    """
    maxima = watermark_maxima(data.schema, watermark_columns, label=label, mode=mode, stored=stored)
    if not maxima:
        return {}
    return watermark_values(data.select(list(maxima.values())).row(0, named=True), maxima)


def watermark_maxima(
    schema: pl.Schema,
    watermark_columns: Iterable[str],
    *,
    label: str,
    mode: ColumnNameMode = "lower",
    stored: Mapping[str, Any] | None = None,
) -> dict[str, pl.Expr]:
    """``{watermark key: max expression aliased to the key}`` for each non-pseudo watermark column."""
    resolved: dict[str, str] = {}
    for column in (c for c in watermark_columns if not is_pseudo(c)):
        name = resolve_column(column, schema.names(), label=label, mode=mode)
        resolved.setdefault(stored_key(stored, column, mode) or column, name)
    return {key: _max_expr(name, schema[name]).alias(key) for key, name in resolved.items()}


def watermark_values(row: Mapping[str, Any], maxima: Mapping[str, pl.Expr]) -> dict[str, Any]:
    """The non-null maxima of ``row`` (keyed as ``maxima``), aware datetimes in UTC."""
    after: dict[str, Any] = {}
    for key in maxima:
        value = row[key]
        if isinstance(value, datetime) and value.tzinfo is not None:
            value = value.astimezone(UTC)
        if value is not None:
            after[key] = value
    return after


def _max_expr(name: str, dtype: pl.DataType) -> pl.Expr:
    if isinstance(dtype, pl.Datetime) and dtype.time_unit == "ns":
        return pl.col(name).max().dt.offset_by("999ns").dt.cast_time_unit("us")
    if dtype.is_float():  # NaN has no order: it never becomes the watermark (all NaN: not moved)
        return pl.col(name).filter(pl.col(name).is_not_nan()).max()
    return pl.col(name).max()


def _effective(source: Source, request: ReadRequest) -> dict[str, Any] | None:
    if request.read_range is not None:
        return {request.read_range.column: request.read_range.start}
    return lower_bounds(source, request)


def _compiled_filter(sql: str, schema: pl.Schema, label: str, now: datetime) -> pl.Expr:
    from datacoolie_core.sql import SqlExpressionError, compile_expression  # only with a filter_expression

    try:
        return compile_expression(sql, schema=schema, now=now)
    except SqlExpressionError as e:
        raise SqlExpressionError(f"{label}: filter_expression: {e}") from e


def _collect_schema(lf: pl.LazyFrame, label: str) -> pl.Schema:
    try:
        return lf.collect_schema()
    except (pl.exceptions.PolarsError, OSError) as e:
        raise SourceError(
            f"{label}: cannot read the source's schema: {e}; check the files/table exist and are valid"
        ) from e


def _collect(lf: pl.LazyFrame, label: str) -> pl.DataFrame:
    try:
        return lf.collect()
    except (pl.exceptions.PolarsError, OSError) as e:
        raise SourceError(f"{label}: reading failed: {e}; check the data and source.read_options") from e
