"""File sources on S3: a folder of parquet, csv or jsonl objects read incrementally by ``LastModified``.

The ``__file_modification_time`` watermark prunes objects by the ``LastModified`` the listing returns
(whole seconds on S3): run 1 reads the first object, run 2 only the object landed after it, run 3
nothing. Parquet is scanned in the bucket by Polars' cloud reader; csv and jsonl are read from a
local copy. ``__file_path`` is the object's URL either way.
"""

from __future__ import annotations

import io
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.core.object_storage.lake import S3Lake
from tests.support.s3 import S3Server

pytestmark = [pytest.mark.slow, pytest.mark.s3]

READ_OPTIONS: dict[str, dict[str, Any]] = {"parquet": {}, "csv": {"header": "true"}, "jsonl": {}}


def encoded(frame: pl.DataFrame, fmt: str) -> bytes:
    buffer = io.BytesIO()
    {"parquet": frame.write_parquet, "csv": frame.write_csv, "jsonl": frame.write_ndjson}[fmt](buffer)
    return buffer.getvalue()


def land(s3: S3Server, url: str, frame: pl.DataFrame, fmt: str) -> datetime:
    """Put the object; wait until its ``LastModified`` second is over (S3 timestamps are whole seconds)."""
    s3.put(url, encoded(frame, fmt))
    bucket, _, key = url.removeprefix("s3://").partition("/")
    modified: datetime = s3.client().head_object(Bucket=bucket, Key=key)["LastModified"]
    while datetime.now(UTC) < modified + timedelta(seconds=1):  # settled: the reader leaves the current second
        time.sleep(0.05)
    return modified.astimezone(UTC)


@pytest.mark.parametrize("fmt", list(READ_OPTIONS))
def test_an_s3_folder_is_read_incrementally_by_last_modified(
    s3: S3Server, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    lake = S3Lake(s3, tmp_path)
    lake.write_metadata(
        [{"name": "events", "stage": "landing2bronze",
          "source": {"connection_name": "landing", "schema_name": "app", "table": "events",
                     "watermark_columns": ["__file_modification_time"],
                     "configure": {"read_options": READ_OPTIONS[fmt]}},
          "destination": {"connection_name": "lake", "schema_name": "bronze", "table": "events", "load_type": "append"}}],
        landing_format=fmt,
    )  # fmt: skip
    folder = f"{lake.landing}/app/events"
    # run 1 — one object
    first = land(s3, f"{folder}/a.{fmt}", pl.DataFrame({"id": [1, 2], "kind": ["x", "y"]}), fmt)
    code, (row,) = lake.run(capsys)
    assert (code, row["status"], row["source"]["rows_read"]) == (0, "succeeded", 2), row["error_message"]
    assert row["source"]["watermark_after"] == {"__file_modification_time": str(first)}
    # run 2 — a second object lands: only it is read
    second = land(s3, f"{folder}/b.{fmt}", pl.DataFrame({"id": [3], "kind": ["z"]}), fmt)
    s3.put(f"{folder}/_SUCCESS", b"")  # marker files are skipped, as on a local folder
    code, (row,) = lake.run(capsys)
    assert (code, row["status"], row["source"]["rows_read"]) == (0, "succeeded", 1), row["error_message"]
    assert row["source"]["watermark_after"] == {"__file_modification_time": str(second)}
    # run 3 — nothing newer
    code, (row,) = lake.run(capsys)
    assert (code, row["status"]) == (0, "skipped"), row["error_message"]
    table = lake.table("bronze", "events").with_columns(pl.col("id").cast(pl.Int64)).sort("id")  # csv: text
    assert table.select("id", "kind", "__file_name", "__file_path").rows() == [
        (1, "x", f"a.{fmt}", f"{folder}/a.{fmt}"),
        (2, "y", f"a.{fmt}", f"{folder}/a.{fmt}"),
        (3, "z", f"b.{fmt}", f"{folder}/b.{fmt}"),
    ]
    assert table["__file_modification_time"].to_list() == [first, first, second]


def test_a_hive_partitioned_s3_folder_is_listed_recursively_with_its_partition_columns(
    s3: S3Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lake = S3Lake(s3, tmp_path)
    lake.write_metadata(
        [{"name": "events", "source": {"connection_name": "landing", "schema_name": "app", "table": "events"},
          "destination": {"connection_name": "lake", "schema_name": "bronze", "table": "events", "load_type": "overwrite"}}],
        use_hive_partitioning=True,
    )  # fmt: skip
    folder = f"{lake.landing}/app/events"
    s3.put(f"{folder}/region=eu/a.parquet", encoded(pl.DataFrame({"id": [1, 2]}), "parquet"))
    s3.put(f"{folder}/region=us/b.parquet", encoded(pl.DataFrame({"id": [3]}), "parquet"))
    s3.put(f"{folder}/_tmp/c.parquet", encoded(pl.DataFrame({"id": [9]}), "parquet"))  # a hidden folder: skipped
    code, (row,) = lake.run(capsys)
    assert (code, row["status"], row["source"]["rows_read"]) == (0, "succeeded", 3), row["error_message"]
    table = lake.table("bronze", "events").sort("id")
    assert table.select("id", "region").rows() == [(1, "eu"), (2, "eu"), (3, "us")]
