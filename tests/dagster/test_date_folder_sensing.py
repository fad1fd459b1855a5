"""A date-folder source (S-12) is sensed: the source sensor's fingerprint covers the files of its
date folders (they sit below the table folder, where a flat listing finds nothing), so a file landed
in a new day's folder requests a run, and a tick without change requests none. A table partitioned
by the folder date (``chunk_column: __date_folder_partition__``) gets the months of new folders from
the partition sensor, and each partition run reads exactly its month's folders."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest

from tests.dagster.test_partition_sensors import code_location as partition_location
from tests.dagster.test_partition_sensors import seen_empty
from tests.dagster.test_sensors import METADATA, ORDERS, ORDERS_KEY, requested, tick


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as test_instance:
        yield test_instance


@pytest.fixture
def dated_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    metadata = copy.deepcopy(METADATA)
    metadata["connections"][0]["configure"]["date_folder_partitions"] = "{year}/{month}/{day}"
    orders = next(d for d in metadata["dataflows"] if d["name"] == "orders_to_bronze")
    orders["source"]["watermark_columns"] = ["__date_folder_partition__", "updated_at"]
    metadata["dataflows"] = [orders]
    (tmp_path / "metadata.json").write_text(json.dumps(metadata), encoding="utf-8")
    return tmp_path


def land_day(root: Path, day: str, name: str) -> None:
    folder = root / "lake" / "landing" / "sales" / "orders" / day
    folder.mkdir(parents=True, exist_ok=True)
    ORDERS.write_parquet(folder / name)


def files_observed(data: Any) -> list[Any]:
    """The file counts of the source observations a tick recorded (the fingerprint it saw)."""
    return [event.metadata["datacoolie/files"].value for event in data.asset_events]


def test_files_in_new_date_folders_request_runs(dated_root: Path, instance: Any) -> None:
    land_day(dated_root, "2026/01/31", "a.parquet")
    first = tick(dated_root, instance)
    assert [keys for _, keys in requested(first)] == [[ORDERS_KEY]]
    assert files_observed(first) == [1]

    assert requested(tick(dated_root, instance, first.cursor)) == []  # nothing new: no run

    land_day(dated_root, "2026/02/01", "b.parquet")  # the next day, across a month boundary
    second = tick(dated_root, instance, first.cursor)
    assert [keys for _, keys in requested(second)] == [[ORDERS_KEY]]
    assert files_observed(second) == [2]


# --- a table partitioned by month of folder date -------------------------------------------------

MONTHS = {"start": "2026-01-01", "chunk_interval": {"months": 1}, "chunk_column": "__date_folder_partition__"}
MONTHLY_KEY = "bronze/orders_by_folder_month"


def monthly_metadata() -> dict[str, Any]:
    metadata = copy.deepcopy(METADATA)
    metadata["connections"][0]["configure"]["date_folder_partitions"] = "{year}/{month}/{day}"
    source = {"connection_name": "landing", "schema_name": "sales", "table": "orders",
              "watermark_columns": ["__date_folder_partition__", "updated_at"]}  # fmt: skip
    destination = {"connection_name": "bronze", "table": "orders_by_folder_month", "load_type": "merge_upsert",
                   "merge_keys": ["order_id"]}  # fmt: skip
    flow = {"name": "orders_by_folder_month", "stage": "load", "source": source, "destination": destination,
            "configure": {"dagster": {"partitions": MONTHS}}}  # fmt: skip
    metadata["dataflows"] = [flow]
    return metadata


def land_orders(root: Path, day: str, *order_ids: int) -> None:
    folder = root / "lake" / "landing" / "sales" / "orders" / day
    folder.mkdir(parents=True, exist_ok=True)
    frame = pl.DataFrame({"order_id": list(order_ids), "updated_at": [datetime(2026, 1, 1)] * len(order_ids)})
    frame.write_parquet(folder / f"part-{order_ids[0]}.parquet")


def test_new_date_folders_request_and_materialize_their_months(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, instance: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps(monthly_metadata()), encoding="utf-8")
    land_orders(tmp_path, "2026/01/31", 1, 2)
    land_orders(tmp_path, "2026/03/01", 3)

    defs, sensor = partition_location(tmp_path)
    empty = seen_empty(tmp_path)  # the sensor saw the folders empty: both days are new
    first = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=empty, definitions=defs))
    assert sorted(r.partition_key for r in first.run_requests) == ["2026-01", "2026-03"]

    job = defs.resolve_implicit_global_asset_job_def()
    for request in first.run_requests:
        result = job.execute_in_process(
            instance=instance, asset_selection=list(request.asset_selection), tags=request.tags,
            partition_key=request.partition_key,
        )  # fmt: skip
        assert result.success
    key = dg.AssetKey.from_user_string(MONTHLY_KEY)
    assert sorted(instance.get_materialized_partitions(key)) == ["2026-01", "2026-03"]
    written = pl.read_delta(str(tmp_path / "lake" / "bronze" / "orders_by_folder_month"))
    assert sorted(written["order_id"].to_list()) == [1, 2, 3]

    land_orders(tmp_path, "2026/02/14", 4)  # a late day in a month with no data yet
    second = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=first.cursor, definitions=defs))
    assert [r.partition_key for r in second.run_requests] == ["2026-02"]
