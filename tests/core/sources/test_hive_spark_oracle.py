"""Hive-partitioned parquet read as Spark 3.5 reads it (S-13): each case is a folder of ``k=value``
sub-folders, one parquet file each, read by PySpark (``spark.read.parquet``, UTC) and by our file
reader with ``use_hive_partitioning``, compared column names, types and values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.core.sources.helpers import read_ok
from tests.core.sources.test_file import business, file_source, folder_of
from tests.core.sources.test_file_spark_oracle import spark_frame

HIVE = {"use_hive_partitioning": True}

CASES: dict[str, list[str]] = {
    "ints": ["1", "02", "-3", "+5", "-0"],
    "int-then-long": ["1", "3000000000"],
    "long-then-decimal": ["1", "99999999999999999999"],
    "negative-decimal": ["-99999999999999999999", "7"],
    "exponent-is-integral-decimal": ["1e3"],
    "39-digits-is-double": ["1" + "0" * 38],
    "int-and-double": ["1", "2.5"],
    "decimal-and-double-is-string": ["99999999999999999999", "2.5"],
    "java-doubles": [".5", "1d", "Infinity", "NaN", "1.50"],
    "date": ["2026-03-01", "2024-02-29"],
    "bad-date-is-string": ["2026-02-30"],
    "one-digit-month-is-string": ["2026-3-1"],
    "timestamp": ["2026-03-01 10%3A00%3A00", "2026-03-29 02%3A30%3A00.5"],
    "date-and-timestamp": ["2026-03-01", "2026-03-01 10%3A00%3A00"],
    "three-fraction-digits-is-string": ["2026-03-01 10%3A00%3A00.123"],
    "int-and-date-is-string": ["1", "2026-03-01"],
    "booleans-are-strings": ["true", "false"],
    "escaped-strings": ["a%2Fb", "c%20d", "x%3Dy"],
    "null-and-int": ["__HIVE_DEFAULT_PARTITION__", "5"],
    "null-and-date": ["__HIVE_DEFAULT_PARTITION__", "2026-03-01"],
    "blank-padded-is-double": ["%205"],
    "only-nulls": ["__HIVE_DEFAULT_PARTITION__"],
}


def land(tmp_path: Path, values: list[str]) -> Path:
    folder = folder_of(tmp_path)
    for index, value in enumerate(values):
        (folder / f"k={value}").mkdir()
        pl.DataFrame({"id": [index]}).write_parquet(folder / f"k={value}" / "part-0.parquet")
    return folder


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_partition_columns_are_typed_as_spark_types_them(spark: Any, tmp_path: Path, case: str) -> None:
    folder = land(tmp_path, CASES[case])

    ours = business(read_ok(file_source(tmp_path, "parquet", configure=HIVE)).data).sort("id")
    theirs = spark_frame(spark.read.parquet(str(folder))).sort("id")

    assert_frame_equal(ours, theirs)


def test_nested_keys_are_typed_as_spark_types_them(spark: Any, tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    for index, (year, month, region) in enumerate([("2025", "12", "EU"), ("2026", "01", "US"), ("2026", "02", "EU")]):
        leaf = folder / f"year={year}" / f"month={month}" / f"region={region}"
        leaf.mkdir(parents=True)
        pl.DataFrame({"id": [index], "amount": [index * 1.5]}).write_parquet(leaf / "part-0.parquet")

    ours = business(read_ok(file_source(tmp_path, "parquet", configure=HIVE)).data).sort("id")
    theirs = spark_frame(spark.read.parquet(str(folder))).sort("id")

    assert_frame_equal(ours, theirs)
    assert ours.columns == ["id", "amount", "year", "month", "region"]


def test_a_partition_key_that_is_also_a_data_column(spark: Any, tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    (folder / "k=1").mkdir()
    pl.DataFrame({"id": [0], "k": ["from-data"]}).write_parquet(folder / "k=1" / "part-0.parquet")

    ours = business(read_ok(file_source(tmp_path, "parquet", configure=HIVE)).data)
    theirs = spark_frame(spark.read.parquet(str(folder)))

    assert_frame_equal(ours, theirs)  # the folder's value and type win over the file's column
