"""Touched windows: one aggregation of the written rows, per window of a column the caller names."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import polars as pl
import pytest

from datacoolie_core.destinations.touched import touched_windows
from datacoolie_core.models.run_config import DataCoolieRunConfig, WindowSpec


@pytest.mark.parametrize(
    ("values", "spec", "starts", "rows"),
    [
        ([1, 5, 12, None], WindowSpec(column="n", every=10), [0, 10], [2, 1]),
        ([-1, 104, 105], WindowSpec(column="n", every=100, origin=5), [-95, 5, 105], [1, 1, 1]),
        (
            [datetime(2024, 2, 3), datetime(2024, 7, 31, 23), datetime(2024, 2, 28)],
            WindowSpec(column="n", every="1mo"),
            [datetime(2024, 2, 1), datetime(2024, 7, 1)],
            [2, 1],
        ),
        (
            # an aware column is reported in UTC: 01:30 at +02:00 is 23:30 UTC the day before
            [datetime(2024, 3, 1, 1, 30, tzinfo=timezone(timedelta(hours=2))), datetime(2024, 3, 1, 12, tzinfo=UTC)],
            WindowSpec(column="n", every="1d"),
            [datetime(2024, 2, 29), datetime(2024, 3, 1)],
            [1, 1],
        ),
        (
            [date(2024, 1, 31), date(2024, 2, 1)],
            WindowSpec(column="n", every="1mo"),
            [date(2024, 1, 1), date(2024, 2, 1)],
            [1, 1],
        ),
    ],
    ids=["int-step", "int-origin", "naive-months", "aware-to-utc-days", "date-months"],
)
def test_rows_per_window(values: list[object], spec: WindowSpec, starts: list[object], rows: list[int]) -> None:
    touched = touched_windows(pl.DataFrame({"n": values}), spec)
    assert touched is not None
    assert (touched.starts, touched.rows) == (starts, rows)


def test_nulls_are_in_no_window() -> None:
    touched = touched_windows(pl.DataFrame({"n": [1, None, None]}), WindowSpec(column="n", every=10))
    assert touched is not None
    assert (touched.starts, touched.rows, touched.null_rows) == ([0], [1], 2)


def test_column_named_as_metadata_spells_it() -> None:
    """The writer sees sanitized names; the spec names the column as metadata does."""
    touched = touched_windows(pl.DataFrame({"order_date": [date(2024, 5, 2)]}), WindowSpec(column="Order Date"))
    assert touched is not None
    assert (touched.column, touched.starts) == ("order_date", [date(2024, 5, 2)])


@pytest.mark.parametrize(
    ("frame", "spec"),
    [
        (pl.DataFrame({"n": ["2024-01-01"]}), WindowSpec(column="n", every="1d")),
        (pl.DataFrame({"n": [1]}), WindowSpec(column="n", every="1d")),
        (pl.DataFrame({"n": [1]}), WindowSpec(column="missing", every=10)),
    ],
    ids=["string-column", "duration-on-int", "missing-column"],
)
def test_no_windows_is_none_never_an_error(
    frame: pl.DataFrame, spec: WindowSpec, caplog: pytest.LogCaptureFixture
) -> None:
    assert touched_windows(frame, spec) is None
    assert "touched windows" in caplog.text


def test_spec_rejects_a_zero_step() -> None:
    with pytest.raises(ValueError, match="a window step must be a positive integer, got 0"):
        WindowSpec(column="n", every=0)


def test_run_config_carries_specs_by_dataflow_id() -> None:
    config = DataCoolieRunConfig(touched_windows={"df-1": {"column": "created_at", "every": "1mo"}})
    assert config.touched_windows["df-1"] == WindowSpec(column="created_at", every="1mo")
