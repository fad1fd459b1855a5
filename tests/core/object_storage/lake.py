"""An S3 lake for tests: metadata whose connections reach moto with credentials from ``secrets_ref``."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from datacoolie_core import FileProvider
from datacoolie_core.cli import main
from tests.support.s3 import KEY_ID_VAR, REGION, SECRET_VAR, S3Server

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def s3_connection(name: str, fmt: str, base_path: str, server: S3Server, **configure: Any) -> dict[str, Any]:
    """A connection on ``base_path``: endpoint in storage_options, credentials named by secrets_ref."""
    return {
        "name": name,
        "format": fmt,
        "configure": {
            "base_path": base_path,
            "storage_options": {"aws_endpoint_url": server.endpoint, "aws_allow_http": "true"},
            "aws_region": REGION,
            "aws_access_key_id": KEY_ID_VAR,
            "aws_secret_access_key": SECRET_VAR,
            **configure,
        },
        "secrets_ref": {"env:": ["aws_access_key_id", "aws_secret_access_key"]},
    }


class S3Lake:
    """A bucket with ``landing/`` (parquet files) and ``lake/`` (Delta tables); metadata and state local."""

    def __init__(self, server: S3Server, root: Path) -> None:
        self.server, self.root = server, root
        self.bucket = server.bucket()
        self.landing = f"s3://{self.bucket}/landing"
        self.lake = f"s3://{self.bucket}/lake"
        self.metadata = root / "meta" / "metadata.json"
        self.state = root / "state"

    def write_metadata(
        self, dataflows: list[dict[str, Any]], *, landing_format: str = "parquet", **landing: Any
    ) -> None:
        """Connections ``landing`` (``landing`` = more of its configure) and ``lake``, and ``dataflows``."""
        document = {
            "connections": [
                s3_connection("landing", landing_format, self.landing, self.server, **landing),
                s3_connection("lake", "delta", self.lake, self.server),
            ],
            "dataflows": dataflows,
        }
        self.metadata.parent.mkdir(parents=True, exist_ok=True)
        self.metadata.write_text(json.dumps(document))

    def watermark_path(self, name: str) -> Path:
        provider = FileProvider(self.metadata, state_base_path=self.state)
        dataflow = next(d for d in provider.get_dataflows() if d.name == name)
        return provider.watermark_path(str(dataflow.dataflow_id))

    def land(self, folder: str, name: str, frame: pl.DataFrame) -> str:
        """Write ``frame`` as ``landing/<folder>/<name>.parquet``; its URL."""
        buffer = io.BytesIO()
        frame.write_parquet(buffer)
        url = f"{self.landing}/{folder}/{name}.parquet"
        self.server.put(url, buffer.getvalue())
        return url

    def run(self, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, list[dict[str, Any]]]:
        code = main(["run", "--metadata", str(self.metadata), "--state-path", str(self.state), "--json", *extra])
        out = capsys.readouterr().out
        return code, json.loads(out)["dataflows"]

    def table(self, schema: str, table: str) -> pl.DataFrame:
        return pl.read_delta(f"{self.lake}/{schema}/{table}", storage_options=self.server.storage_options)


def orders(ids: list[int], minutes: list[int], **extra: list[Any]) -> pl.DataFrame:
    """Orders with ``updated_at`` = T0 + minutes."""
    return pl.DataFrame(
        {"order_id": ids, "amount": [float(i) for i in ids], "updated_at": [T0 + timedelta(minutes=m) for m in minutes],
         **extra},
        schema_overrides={"updated_at": pl.Datetime("us", "UTC")},
    )  # fmt: skip


def minutes(frame: pl.DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    """``(order_id, minutes after T0, *columns)`` of every row, sorted."""
    rows = frame.select("order_id", "updated_at", *columns).iter_rows()
    return sorted((i, int((t - T0).total_seconds() // 60), *rest) for i, t, *rest in rows)
