"""The reader contract: what every source reader takes and returns."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import polars as pl

from datacoolie_core.models.dataflow import Source
from datacoolie_core.models.runtime import SourceRuntimeInfo, utc_now
from datacoolie_core.transforms.base import ColumnNameMode


@dataclass(frozen=True)
class ReadRange:
    """An explicit bounded read ``start <= column < end`` (a replay chunk).

    The column may be outside ``source.watermark_columns``; the stored watermark and look-back are
    not applied when a range is given.
    """

    column: str
    start: Any
    end: Any


@dataclass(frozen=True)
class ExpectedColumn:
    """A column the dataflow's metadata needs from the source, and the key that names it."""

    name: str
    """As metadata spells it (raw or sanitized: resolved by :func:`~datacoolie_core.transforms.resolve.find_column`)."""
    key: str
    """The metadata key, for the error: ``destination.merge_keys``, ``transform.schema_hints``."""


@dataclass(frozen=True)
class ReadRequest:
    """What to read beyond the source's own metadata."""

    watermark: Mapping[str, Any] | None = None
    """The stored watermark (``None`` = first run: read everything). Lower bound ``>`` after look-back."""
    read_range: ReadRange | None = None
    """Replay: read exactly this range instead of "after the watermark"."""
    reference_time: datetime = field(default_factory=utc_now)
    """"Now" for closing-day look-back; fixed once per run so retries read the same window."""
    allowed_function_prefixes: tuple[str, ...] = ()
    """Dotted prefixes a python_function source may come from; empty allows all."""
    column_name_mode: ColumnNameMode = "lower"
    """The run's ``column_name_mode``: metadata names resolve through it (raw or sanitized spelling)."""
    expected_columns: tuple[ExpectedColumn, ...] = ()
    """Columns besides the watermark columns that every file (any source) must have; a missing one
    fails the read (:mod:`~datacoolie_core.sources.shape`)."""


@dataclass
class ReadResult:
    """The rows that qualified, materialized once, with what the read observed."""

    data: pl.DataFrame
    runtime: SourceRuntimeInfo
    """``rows_read``, ``watermark_before``/``effective``/``after`` and ``source_action`` filled in."""


class Reader(Protocol):
    """Reads one source format.

    Contract: apply the watermark window (or the read range) compared in each column's own dtype,
    then ``source.filter_expression``; count the rows and take the new watermark (max per
    watermark column, plus pseudo columns) in the same pass that produces the data, never a second
    read of the source. (A :class:`ScanningReader`'s streamed write takes them in an aggregate over
    a *repeatable* read instead: see :class:`SourceScan`.) Return ``None`` when nothing qualifies (no files, zero rows): the dataflow is
    then skipped and nothing is written. Raise :class:`~datacoolie_core.errors.SourceError` for a
    source that cannot be read.
    """

    def read(self, source: Source, request: ReadRequest) -> ReadResult | None: ...


@dataclass(frozen=True)
class SourceScan:
    """A read planned, not run: the qualifying rows as a lazy frame (window and filter applied).

    The rows are a repeatable read: a Delta source is pinned to the version it was opened at, and
    listed files are checked unchanged (``check_unchanged``) before a streamed write commits. So an
    aggregate over :attr:`rows` (count, new watermark) describes exactly the rows a stream of them
    writes.
    """

    rows: pl.LazyFrame
    source: Source
    request: ReadRequest
    label: str
    source_action: dict[str, Any]
    pseudo_watermark: Mapping[str, Any] | None = None
    """Watermark values the reader computed itself (``__file_modification_time``)."""
    check_unchanged: Callable[[], None] | None = None
    """Raises :class:`~datacoolie_core.errors.SourceError` when the source changed since it was planned."""
    size_hint: int | None = None
    """Bytes the read may cover (listed files, the Delta tables' files); ``None``: unknown."""


@runtime_checkable
class ScanningReader(Protocol):
    """A reader that can also plan its read lazily (:class:`SourceScan`), for a streamed write.

    Contract: ``read(source, request)`` equals collecting ``scan(source, request)``
    (:func:`~datacoolie_core.sources.collect_and_watermark.collect_scan`); ``None`` when no file qualifies.
    """

    def read(self, source: Source, request: ReadRequest) -> ReadResult | None: ...

    def scan(self, source: Source, request: ReadRequest) -> SourceScan | None: ...


WatermarkValues = Mapping[str, Any]
