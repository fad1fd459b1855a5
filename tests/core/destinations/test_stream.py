"""BatchStream: a lazy frame streamed into one delta-rs commit; a check at its end can still stop the commit."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from deltalake import write_deltalake
from deltalake.exceptions import DeltaError

from datacoolie_core.destinations.stream import BatchStream
from datacoolie_core.errors import SourceError, TransformError


def test_a_stream_writes_every_row_once_and_counts_them(tmp_path: Path) -> None:
    frame = pl.LazyFrame({"n": range(10_000), "s": [f"row {i}" for i in range(10_000)]})
    stream = BatchStream(frame)
    assert not stream.is_empty()
    write_deltalake(str(tmp_path / "t"), stream)
    assert stream.rows == 10_000
    assert sorted(pl.read_delta(str(tmp_path / "t"))["n"].to_list()) == list(range(10_000))


def test_an_empty_result_is_seen_before_anything_is_written() -> None:
    stream = BatchStream(pl.LazyFrame({"n": [1, 2]}).filter(pl.col("n") > 5))
    assert stream.is_empty()
    assert stream.drain() == 0


def test_a_check_failing_at_the_end_stops_the_commit(tmp_path: Path) -> None:
    def changed() -> None:
        raise SourceError("a file changed during the read")

    stream = BatchStream(pl.LazyFrame({"n": [1, 2, 3]}), before_end=changed)
    with pytest.raises(DeltaError, match="a file changed during the read"):  # delta-rs's own error
        write_deltalake(str(tmp_path / "t"), stream)
    assert isinstance(stream.error, SourceError)
    assert not (tmp_path / "t" / "_delta_log").exists()


def test_an_error_while_producing_rows_is_kept_translated() -> None:
    frame = pl.LazyFrame({"s": ["1", "x"]}).select(pl.col("s").cast(pl.Int64, strict=True))
    stream = BatchStream(frame, on_error=lambda e: TransformError(f"bad data: {e}"))
    with pytest.raises(TransformError, match="bad data"):
        stream.drain()
    assert isinstance(stream.error, TransformError)
