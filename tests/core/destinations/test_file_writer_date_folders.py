"""The flat-file writer under ``date_folder_partitions`` (D-14): the batch goes to the folder of the UTC
date now; an overwrite replaces that day's folder only; partition columns take precedence."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from datacoolie_core.destinations import FileWriter
from tests.core.destinations.builders import APP, make_destination, marker

PARQUET = FileWriter("parquet")
DAILY = {"date_folder_partitions": "{year}/{month}/{day}"}


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.parquet") if not p.name.startswith("."))


def test_an_overwrite_replaces_today_s_folder_and_keeps_earlier_days(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, "parquet", load_type="overwrite", connection=DAILY)
    root = Path(str(dest.path))
    earlier = root / "2020" / "01" / "01"
    earlier.mkdir(parents=True)
    pl.DataFrame({"id": [0]}).write_parquet(earlier / "old.parquet")

    before = datetime.now(UTC)
    PARQUET.write(pl.DataFrame({"id": [1]}), dest, marker=marker(1))
    PARQUET.write(pl.DataFrame({"id": [2]}), dest, marker=marker(2))
    after = datetime.now(UTC)

    written = files(root)
    assert "2020/01/01/old.parquet" in written  # another day's folder is not part of today's overwrite
    (today,) = [f for f in written if not f.startswith("2020/")]  # the second overwrite replaced the first
    assert today.rsplit("/", 1)[0] in {f"{m:%Y/%m/%d}" for m in (before, after)}
    assert pl.read_parquet(root / today)["id"].to_list() == [2]
    assert PARQUET.committed_sequence(dest, APP) == 2


def test_partition_columns_take_precedence_over_date_folders(tmp_path: Path) -> None:
    dest = make_destination(
        tmp_path, "parquet", load_type="append", connection=DAILY, partition_columns=[{"column": "region"}]
    )
    PARQUET.write(pl.DataFrame({"id": [1, 2], "region": ["EU", "US"]}), dest, marker=marker(1))
    assert [f.split("/")[0] for f in files(Path(str(dest.path)))] == ["region=EU", "region=US"]
