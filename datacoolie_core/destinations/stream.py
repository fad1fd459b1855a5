"""Rows a writer pulls while they are produced: a lazy frame streamed into ONE commit, never held whole.

A :class:`BatchStream` runs the plan on Polars' streaming engine and hands its batches to delta-rs
as an Arrow stream, so peak memory is a few batches, not the table. Two things the engine needs
that a bare ``sink_delta`` does not give:

* :meth:`BatchStream.is_empty` produces rows up to the first non-empty batch before anything is
  written: an empty result writes nothing (no commit, no table created), exactly as a collected
  empty frame did.
* ``before_end`` runs when the last batch has been produced, *before* delta-rs commits: a check
  that raises there (a source file changed under the read) fails the write with nothing committed.
* ``on_batch`` sees every batch handed to the writer (the windows a write touches are tallied so).

An error while producing rows is kept in :attr:`BatchStream.error` (translated by ``on_error``):
delta-rs reports it as its own error, and the caller re-raises the kept one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from polars._typing import PolarsDataType


class BatchStream:
    """The rows of ``frame``, produced once while a writer pulls them (row order kept)."""

    def __init__(
        self,
        frame: pl.LazyFrame,
        *,
        before_end: Callable[[], None] | None = None,
        on_error: Callable[[Exception], Exception] = lambda e: e,
        on_batch: Callable[[pl.DataFrame], None] | None = None,
    ) -> None:
        self.schema = frame.collect_schema()
        self._frame = frame
        self._source = self._produce()  # one generator: the plan starts on the first pull
        self._first: pl.DataFrame | None = None
        self._ended = False
        self._before_end = before_end
        self._on_error = on_error
        self._on_batch = on_batch
        self.rows = 0
        """Rows handed to the writer so far."""
        self.error: Exception | None = None
        """The (translated) error that stopped the rows, if one did."""

    @property
    def columns(self) -> list[str]:
        return self.schema.names()

    def is_empty(self) -> bool:
        """Produce rows up to the first non-empty batch (kept for the writer); ``True`` when none come."""
        while self._first is None and not self._ended:
            batch = next(self._source, None)
            if batch is not None and batch.height:
                self._first = batch
        return self._first is None

    def drain(self) -> int:
        """Produce the rows nobody pulled (a write found already committed) and return the row count."""
        for batch in self._pending():
            self.rows += batch.height
        return self.rows

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        from arro3.core import RecordBatchReader  # delta-rs's own Arrow binding

        if self.is_empty():
            empty = RecordBatchReader.from_stream(arrow_exportable(pl.DataFrame(schema=self.schema)))
            return empty.__arrow_c_stream__(requested_schema)
        assert self._first is not None
        schema = RecordBatchReader.from_stream(arrow_exportable(self._first)).schema
        reader = RecordBatchReader.from_batches(schema, self._arrow_batches())
        return reader.__arrow_c_stream__(requested_schema)

    def _arrow_batches(self) -> Iterator[Any]:
        from arro3.core import RecordBatchReader

        for batch in self._pending():
            self.rows += batch.height
            yield from RecordBatchReader.from_stream(arrow_exportable(batch))

    def _pending(self) -> Iterator[pl.DataFrame]:
        """The kept first batch, then the rest of the stream."""
        if self._first is not None:
            first, self._first = self._first, None
            yield self._seen(first)
        for batch in self._source:
            yield self._seen(batch)

    def _seen(self, batch: pl.DataFrame) -> pl.DataFrame:
        if self._on_batch is not None:
            self._on_batch(batch)
        return batch

    def _produce(self) -> Iterator[pl.DataFrame]:
        try:
            yield from self._frame.collect_batches(maintain_order=True, lazy=True)
            self._ended = True
            if self._before_end is not None:
                self._before_end()
        except Exception as e:
            self._ended = True
            self.error = self._on_error(e)
            if self.error is e:
                raise
            raise self.error from e


def arrow_exportable(frame: pl.DataFrame) -> Any:
    """``frame`` as delta-rs 1.6.6 can read it through the Arrow C stream interface.

    Delta has no categorical type: Categorical and Enum columns are written as their values
    (``string``; delta-rs panics on a Categorical's ``Utf8View`` dictionary and refuses an Enum).
    Polars' own stream (``frame`` itself) spares loading pyarrow (~50 ms a process), except for the
    columns delta-rs cannot take from it: a Null column (refused by the C data interface) and a
    Categorical inside a list or struct. Such a frame goes through ``to_arrow()``, which delta-rs
    writes as ``void`` and ``string`` columns.
    """
    textual = [name for name, dtype in frame.schema.items() if isinstance(dtype, pl.Categorical | pl.Enum)]
    if textual:
        frame = frame.with_columns(pl.col(textual).cast(pl.String))
    if any(_needs_pyarrow(dtype) for dtype in frame.schema.values()):
        return frame.to_arrow()
    return frame


def _needs_pyarrow(dtype: PolarsDataType) -> bool:
    if isinstance(dtype, pl.Categorical | pl.Null):
        return True
    if isinstance(dtype, pl.List | pl.Array):
        return _needs_pyarrow(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return any(_needs_pyarrow(field.dtype) for field in dtype.fields)
    return False
