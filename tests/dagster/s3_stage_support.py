"""The stage the distributed deployments run (Celery workers, Kubernetes pods): append dataflows, each
from a landing folder of its own on S3 into a Delta table on S3, and the check that every table
holds its source's rows exactly once.

Each deployment test picks the size (enough rows for a step to last long enough to be killed, or
few for a fast run) and the environment variables its connections' ``secrets_ref`` name (those its
hosts are given: the test's own, or the ones the Kubernetes Secrets of docs/deployment.md hold).
"""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
from polars.testing import assert_frame_equal

from datacoolie_core.columns import TRAILING_COLUMNS
from tests.support.s3 import REGION, S3Server

STAGE = "landing2bronze"


def s3_connection(
    name: str, kind: str, fmt: str, base_path: str, server: S3Server, *, credentials: tuple[str, str]
) -> dict[str, Any]:
    """A connection on S3: the endpoint in ``storage_options``, the key pair read from the environment
    variables ``credentials`` (key id, secret) names, through ``secrets_ref``."""
    key_id, secret = credentials
    return {
        "name": name, "connection_type": kind, "format": fmt,
        "configure": {"base_path": base_path, "aws_region": REGION,
                      "storage_options": {"aws_endpoint_url": server.endpoint, "aws_allow_http": "true"},
                      "aws_access_key_id": key_id, "aws_secret_access_key": secret},
        "secrets_ref": {"env:": ["aws_access_key_id", "aws_secret_access_key"]},
    }  # fmt: skip


def source_frame(index: int, rows: int) -> pl.DataFrame:
    """Source ``index``'s rows: ids of its own, values no other source has, a day of its own."""
    start = datetime(2024, 1, 1) + timedelta(days=index)
    return pl.DataFrame(
        {
            "id": pl.int_range(index * rows, (index + 1) * rows, eager=True),
            "value": pl.int_range(0, rows, eager=True).cast(pl.Float64) * (index + 1),
            "updated_at": pl.datetime_range(start, start + timedelta(seconds=rows - 1), "1s", eager=True),
        }
    )


def table_url(bucket: str, index: int) -> str:
    """Where dataflow ``index`` writes."""
    return f"s3://{bucket}/lake/t_{index:02d}"


def write_stage(
    path: Path, server: S3Server, bucket: str, *, dataflows: int, rows: int, credentials: tuple[str, str]
) -> None:
    """The landing files on S3 and the metadata at ``path``: ``df_NN`` reads ``s_NN`` into ``t_NN``
    (append, ``updated_at`` watermark)."""
    flows = []
    for i in range(dataflows):
        buffer = io.BytesIO()
        source_frame(i, rows).write_parquet(buffer)
        server.put(f"s3://{bucket}/landing/s_{i:02d}/batch_001.parquet", buffer.getvalue())
        flows.append(
            {
                "name": f"df_{i:02d}",
                "stage": STAGE,
                "source": {"connection_name": "landing", "table": f"s_{i:02d}", "watermark_columns": ["updated_at"]},
                "destination": {"connection_name": "bronze", "table": f"t_{i:02d}", "load_type": "append"},
            }
        )
    connections = [
        s3_connection("landing", "file", "parquet", f"s3://{bucket}/landing", server, credentials=credentials),
        s3_connection("bronze", "lakehouse", "delta", f"s3://{bucket}/lake", server, credentials=credentials),
    ]
    path.write_text(json.dumps({"connections": connections, "dataflows": flows}, indent=1), encoding="utf-8")


def assert_tables_hold_their_sources(server: S3Server, bucket: str, *, dataflows: int, rows: int) -> None:
    """Each Delta table on S3 holds its source's rows exactly once: the business columns compared whole
    (the source's naive timestamps are UTC in the lake)."""
    for i in range(dataflows):
        frame = pl.read_delta(table_url(bucket, i), storage_options=server.storage_options)
        table = frame.drop([c for c in frame.columns if c in TRAILING_COLUMNS]).sort("id")
        assert table.height == rows, f"t_{i:02d}: {table.height} rows, the source has {rows}"
        expected = source_frame(i, rows).with_columns(pl.col("updated_at").dt.replace_time_zone("UTC"))
        assert_frame_equal(table, expected, check_dtypes=False)
