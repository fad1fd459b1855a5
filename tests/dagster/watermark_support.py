"""Metadata for the watermark-sensor and partition-following tests, and its landing data.

``orders``: landing -> bronze (unpartitioned, watermark ``updated_at``) -> silver (eager) and
silver ``orders_monthly`` (partitioned by month, reading the unpartitioned bronze table).
``events``: landing -> bronze by day (2024-01-29..31) -> silver by month (January): a monthly
table over a daily one.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from tests.dagster.conftest import land

ORDERS = pl.DataFrame(
    {
        "order_id": [1, 2, 3],
        "amount": [10.0, 20.0, 5.0],
        "updated_at": [datetime(2024, 1, 5), datetime(2024, 2, 5), datetime(2024, 2, 7)],
    }
)
LATE_ORDERS = pl.DataFrame({"order_id": [4], "amount": [7.5], "updated_at": [datetime(2024, 3, 2)]})
EVENTS = pl.DataFrame(
    {
        "event_id": [1, 2, 3, 4],
        "updated_at": [datetime(2024, 1, 29, 8), datetime(2024, 1, 30, 9), datetime(2024, 1, 31, 10), datetime(2024, 1, 31, 11)],
    }
)  # fmt: skip
DAYS = ["2024-01-29", "2024-01-30", "2024-01-31"]


def _flow(
    name: str,
    stage: str,
    source: tuple[str, str],
    destination: tuple[str, str],
    key: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Appended, or merged on ``key``: a partitioned reader's window may run again (a sensor request)."""
    load = {"load_type": "merge_upsert", "merge_keys": [key]} if key else {"load_type": "append"}
    return {
        "name": name,
        "stage": stage,
        "source": {"connection_name": source[0], "schema_name": "sales", "table": source[1],
                   "watermark_columns": ["updated_at"]},
        "destination": {"connection_name": destination[0], "schema_name": "sales", "table": destination[1], **load},
    } | extra  # fmt: skip


def _partitioned(start: str, end: str, unit: str, **settings: Any) -> dict[str, Any]:
    partitions = {"start": start, "end": end, "chunk_interval": {unit: 1}, "chunk_column": "updated_at"}
    return {"configure": {"dagster": {"partitions": partitions, **settings}}}


def document() -> dict[str, Any]:
    connections = [
        {"name": "landing", "connection_type": "file", "format": "parquet", "configure": {"base_path": "./lake/landing"}},
        *({"name": n, "connection_type": "lakehouse", "format": "delta", "configure": {"base_path": f"./lake/{n}"}}
          for n in ("bronze", "silver")),
    ]  # fmt: skip
    dataflows = [
        # bronze is not source-sensed (sensor: false): in these tests only a CLI run or the test loads it
        _flow("orders_to_bronze", "landing2bronze", ("landing", "orders"), ("bronze", "orders"),
              configure={"dagster": {"sensor": False}}),
        _flow("orders_to_silver", "bronze2silver", ("bronze", "orders"), ("silver", "orders")),
        _flow("orders_monthly", "bronze2silver", ("bronze", "orders"), ("silver", "orders_monthly"), "order_id",
              **_partitioned("2024-01-01", "2024-04-01", "months")),
        _flow("events_daily", "landing2bronze", ("landing", "events"), ("bronze", "events"),
              **_partitioned("2024-01-29", "2024-02-01", "days", sensor=False)),
        _flow("events_monthly", "bronze2silver", ("bronze", "events"), ("silver", "events_monthly"), "event_id",
              **_partitioned("2024-01-01", "2024-02-01", "months")),
    ]  # fmt: skip
    return {"connections": connections, "dataflows": dataflows}


def deploy(root: Path) -> Path:
    """``root/metadata.json`` and the first landed batch of orders and events."""
    path = root / "metadata.json"
    path.write_text(json.dumps(document(), indent=2), encoding="utf-8")
    land(root, "sales/orders", ORDERS)
    land(root, "sales/events", EVENTS)
    return path
