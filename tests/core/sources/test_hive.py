"""Hive partition columns (S-13) without Spark: the type rules table-driven, and the folder layouts
Spark refuses. ``test_hive_spark_oracle.py`` checks the same rules against PySpark."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from datacoolie_core.errors import SourceError
from datacoolie_core.sources.hive import value_type, wider_type
from tests.core.sources.helpers import read, read_ok
from tests.core.sources.test_file import business, file_source, folder_of

HIVE = {"use_hive_partitioning": True}


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("7", "int"), ("+5", "int"), ("2147483648", "bigint"), ("99999999999999999999", "decimal(20)"),
        ("1e3", "decimal(4)"), ("1" + "0" * 38, "double"), ("1.50", "double"), ("1d", "double"),
        ("NaN", "double"), ("2026-03-01", "date"), ("2026-03-01 10%3A00%3A00", "timestamp"),
        ("2026-03-01 10%3A00%3A00.12", "string"), ("2026-02-30", "string"), ("true", "string"),
        ("__HIVE_DEFAULT_PARTITION__", "null"),
    ],
)  # fmt: skip
def test_value_types(raw: str, kind: str) -> None:
    assert value_type(raw) == kind


@pytest.mark.parametrize(
    ("a", "b", "wider"),
    [
        ("int", "bigint", "bigint"), ("int", "decimal(20)", "decimal(20)"), ("decimal(4)", "int", "decimal(10)"),
        ("bigint", "double", "double"), ("decimal(20)", "double", "string"), ("date", "timestamp", "timestamp"),
        ("int", "date", "string"), ("null", "date", "date"), ("string", "int", "string"),
    ],
)  # fmt: skip
def test_wider_types(a: str, b: str, wider: str) -> None:
    assert wider_type(a, b) == wider == wider_type(b, a)


def test_files_under_different_keys_are_refused(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    for leaf in ("a=1", "b=2"):
        (folder / leaf).mkdir()
        pl.DataFrame({"id": [1]}).write_parquet(folder / leaf / "part-0.parquet")
    with pytest.raises(SourceError, match=r"conflicting partition folders .*\(a=\.\.\., b=\.\.\.\).*Spark requires"):
        read(file_source(tmp_path, "parquet", configure=HIVE))


def test_plain_folders_between_partitions_add_no_column(tmp_path: Path) -> None:
    leaf = folder_of(tmp_path) / "region=EU" / "batch-7"
    leaf.mkdir(parents=True)
    pl.DataFrame({"id": [1]}).write_parquet(leaf / "part-0.parquet")
    data = business(read_ok(file_source(tmp_path, "parquet", configure=HIVE)).data)
    assert data.to_dicts() == [{"id": 1, "region": "EU"}]


def test_hive_partitioning_leaves_csv_files_alone(tmp_path: Path) -> None:
    leaf = folder_of(tmp_path) / "region=EU"
    leaf.mkdir(parents=True)
    (leaf / "a.csv").write_text("id\n1\n", encoding="utf-8")
    data = business(read_ok(file_source(tmp_path, "csv", configure={**HIVE, "read_options": {"header": "true"}})).data)
    assert data.columns == ["id"]  # S-13: hive columns for parquet only; csv is only listed recursively
