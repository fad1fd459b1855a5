"""Touched windows -> partition keys: each window lies in exactly one partition of the table."""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from datacoolie_core import FileProvider
from datacoolie_core.destinations.touched import touched_windows
from datacoolie_dagster.location.partitions import (
    PartitionsConfig,
    TablePartitioning,
    build_partitions_def,
    table_partitioning,
)
from datacoolie_dagster.location.touched_partitions import column_window_spec, partition_rows, partition_rows_of_values
from tests.dagster.test_catalog import METADATA


def partitioning(**config: Any) -> TablePartitioning:
    parsed = PartitionsConfig(**config)
    return TablePartitioning(parsed, build_partitions_def(parsed), None)


@pytest.mark.parametrize(
    ("config", "values", "rows", "outside"),
    [
        (
            {"start": "2024-01-01", "chunk_interval": {"months": 1}},
            [datetime(2024, 2, 3), datetime(2024, 7, 31, 23, 59), datetime(2024, 2, 29), datetime(2023, 12, 31)],
            {"2024-02": 2, "2024-07": 1},
            1,
        ),
        (
            {"start": "2024-01-01", "end": "2025-01-01", "chunk_interval": {"months": 3}},
            [date(2024, 3, 31), date(2024, 4, 1), date(2025, 1, 1)],
            {"2024-01": 1, "2024-04": 1},
            1,
        ),
        (
            {"start": "2024-01-01", "chunk_interval": {"hours": 6}},
            [datetime(2024, 1, 1, 5, 59), datetime(2024, 1, 1, 6), datetime(2024, 1, 1, 23)],
            {"2024-01-01T00:00": 1, "2024-01-01T06:00": 1, "2024-01-01T18:00": 1},
            0,
        ),
        (
            # New York's day 2024-02-02 ends at 05:00 UTC on the 3rd
            {"start": "2024-01-01", "chunk_interval": {"days": 1}, "timezone": "America/New_York"},
            [datetime(2024, 2, 3, 4, 59), datetime(2024, 2, 3, 5, 0)],
            {"2024-02-02": 1, "2024-02-03": 1},
            0,
        ),
        (
            {"start": 0, "end": 1000, "chunk_interval": {"step": 300}},
            [5, 299, 300, 950, 1200, -4, None],
            {"0-300": 2, "300-600": 1, "900-1000": 1},
            3,
        ),
    ],
    ids=["months", "quarters-of-dates", "six-hours", "days-in-new-york", "integer-steps"],
)
def test_rows_land_in_the_partition_of_their_window(
    config: dict[str, Any], values: list[object], rows: dict[str, int], outside: int
) -> None:
    table = partitioning(chunk_column="c", **config)
    touched = touched_windows(pl.DataFrame({"c": values}), column_window_spec(table, "c"))
    assert touched is not None
    found = partition_rows(table, touched)
    assert (dict(found.rows), found.outside) == (rows, outside)
    assert found.keys == list(rows)


def test_values_of_a_new_file_map_to_the_partitions_of_their_dataflow(tmp_path: Path) -> None:
    """What a partition sensor asks: which partitions do these window-column values belong to?"""
    (tmp_path / "metadata.json").write_text(json.dumps(METADATA), encoding="utf-8")
    (flow,) = FileProvider(tmp_path / "metadata.json").get_dataflows(stage="bronze2silver")
    table = table_partitioning([flow])
    assert table is not None

    values = pl.Series([datetime(2024, 2, 10), datetime(2024, 7, 3), datetime(2024, 7, 9), None])
    found = partition_rows_of_values(table, flow, values)

    assert (dict(found.rows), found.outside) == ({"2024-02": 1, "2024-07": 2}, 1)


def test_values_without_windows_are_an_error(tmp_path: Path) -> None:
    (tmp_path / "metadata.json").write_text(json.dumps(METADATA), encoding="utf-8")
    (flow,) = FileProvider(tmp_path / "metadata.json").get_dataflows(stage="bronze2silver")
    table = table_partitioning([flow])
    assert table is not None

    with pytest.raises(ValueError, match=r"column 'order_date' of type String has no '1mo' windows"):
        partition_rows_of_values(table, flow, pl.Series(["2024-02-10"]))
