"""Type drift into an existing Delta table: lossy casts are refused, lossless widenings pass."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from deltalake import DeltaTable
from polars.testing import assert_frame_equal

from datacoolie_core.destinations import DeltaWriter
from datacoolie_core.destinations.drift import fits
from datacoolie_core.errors import DestinationError
from tests.core.destinations.builders import at, make_destination, marker, read_table, scd2_batch

WRITER = DeltaWriter()
SCD2 = {"merge_keys": ["id"], "configure": {"scd2_effective_column": "valid_from"}}


@pytest.mark.parametrize(
    ("load_type", "extra"),
    [("append", {}), ("merge_upsert", {"merge_keys": ["id"]}), ("merge_overwrite", {"merge_keys": ["id"]})],
    ids=["append", "merge_upsert", "merge_overwrite"],
)
def test_float_into_a_long_column_is_refused_and_nothing_is_written(
    tmp_path: Path, load_type: str, extra: dict[str, object]
) -> None:
    dest = make_destination(tmp_path, load_type=load_type, **extra)
    first = pl.DataFrame({"id": [1], "amount": [10]})
    # load 1 — the table stores amount as long
    WRITER.write(first, dest, marker=marker(1))
    # load 2 — amount arrives as double: 2.5 would be stored as 2
    drifted = pl.DataFrame({"id": [2, 3], "amount": [2.5, 3.75]})
    with pytest.raises(DestinationError, match=r"'amount' is double in the data but long in the table; nothing was"):
        WRITER.write(drifted, dest, marker=marker(2))
    assert_frame_equal(read_table(dest.path), first)


def test_double_into_a_float_column_is_refused(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="append")
    WRITER.write(pl.DataFrame({"id": [1], "x": pl.Series([0.5], dtype=pl.Float32)}), dest, marker=marker(1))
    with pytest.raises(DestinationError, match=r"'x' is double in the data but float in the table"):
        WRITER.write(pl.DataFrame({"id": [2], "x": [1e300]}), dest, marker=marker(2))
    assert read_table(dest.path)["x"].to_list() == [0.5]


def test_scd2_refuses_a_lossy_cast_too(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="scd2", **SCD2)
    WRITER.write(scd2_batch([(1, "a", at(1))], load=1).with_columns(amount=pl.lit(10)), dest, marker=marker(1))
    drifted = scd2_batch([(1, "b", at(2))], load=2).with_columns(amount=pl.lit(2.5))
    with pytest.raises(DestinationError, match=r"'amount' is double in the data but integer in the table"):
        WRITER.write(drifted, dest, marker=marker(2))
    assert read_table(dest.path)["name"].to_list() == ["a"]


def test_lossless_widenings_pass(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="append")
    schema = {"id": pl.Int64, "d": pl.Float64, "dec": pl.Decimal(12, 2)}
    WRITER.write(pl.DataFrame({"id": [1], "d": [1.5], "dec": [Decimal("1.25")]}, schema=schema), dest, marker=marker(1))
    narrow = {"id": pl.Int32, "d": pl.Float32, "dec": pl.Decimal(6, 1)}
    WRITER.write(pl.DataFrame({"id": [2], "d": [2.5], "dec": [Decimal("2.5")]}, schema=narrow), dest, marker=marker(2))
    assert read_table(dest.path).to_dicts() == [
        {"id": 1, "d": 1.5, "dec": Decimal("1.25")},
        {"id": 2, "d": 2.5, "dec": Decimal("2.50")},
    ]


def test_overwrite_changes_the_type_without_a_check(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="overwrite")
    WRITER.write(pl.DataFrame({"id": [1], "amount": [10]}), dest, marker=marker(1))
    WRITER.write(pl.DataFrame({"id": [2], "amount": [2.5]}), dest, marker=marker(2))
    assert read_table(dest.path)["amount"].to_list() == [2.5]


@pytest.mark.parametrize(
    ("dtype", "table_type", "expected"),
    [
        (pl.Int32, "long", True),
        (pl.Int64, "integer", False),
        (pl.UInt32, "long", True),
        (pl.UInt64, "long", False),
        (pl.Float64, "long", False),
        (pl.Float32, "double", True),
        (pl.Int32, "double", True),
        (pl.Int64, "double", False),
        (pl.Float64, "float", False),
        (pl.Int64, "decimal(20,0)", True),
        (pl.Int64, "decimal(19,0)", False),
        (pl.Decimal(10, 3), "decimal(12,2)", False),
        (pl.Decimal(10, 2), "decimal(12,2)", True),
        (pl.Float64, "decimal(12,2)", False),
        (pl.Datetime("us", "UTC"), "date", False),
        (pl.Date, "timestamp", True),
        (pl.Null, "long", True),
        (pl.String, "long", False),
        (pl.Int64, "string", True),
    ],
    ids=lambda v: str(v),
)
def test_fits(dtype: pl.DataType, table_type: str, expected: bool) -> None:
    assert fits(dtype, table_type) is expected


def test_an_existing_timestamp_ntz_column_keeps_its_type_on_append_and_merge(tmp_path: Path) -> None:
    for load_type, extra in (("append", {}), ("merge_upsert", {"merge_keys": ["id"]})):
        dest = make_destination(tmp_path / load_type, load_type=load_type, **extra)
        WRITER.write(pl.DataFrame({"id": [1], "t": [datetime(2024, 1, 1, 12)]}), dest, marker=marker(1))
        # the transform step labels zone-less timestamps UTC (convert_timestamp_ntz, the default)
        utc = pl.DataFrame({"id": [2], "t": [datetime(2024, 1, 2, 12)]}).with_columns(
            pl.col("t").dt.replace_time_zone("UTC")
        )
        WRITER.write(utc, dest, marker=marker(2))
        assert DeltaTable(str(dest.path)).schema().fields[1].type.type == "timestamp_ntz"
        assert read_table(dest.path)["t"].to_list() == [datetime(2024, 1, 1, 12), datetime(2024, 1, 2, 12)]
