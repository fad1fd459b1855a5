"""A date-folder source (S-12) is sensed: the source sensor's fingerprint covers the files of its
date folders (they sit below the table folder, where a flat listing finds nothing), so a file landed
in a new day's folder requests a run, and a tick without change requests none."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

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


def test_files_in_new_date_folders_request_runs(dated_root: Path, instance: Any) -> None:
    land_day(dated_root, "2026/01/31", "a.parquet")
    first = tick(dated_root, instance)
    assert [keys for _, keys in requested(first)] == [[ORDERS_KEY]]
    assert json.loads(first.cursor)["tables"][ORDERS_KEY]["orders_to_bronze"]["files"] == 1

    assert requested(tick(dated_root, instance, first.cursor)) == []  # nothing new: no run

    land_day(dated_root, "2026/02/01", "b.parquet")  # the next day, across a month boundary
    second = tick(dated_root, instance, first.cursor)
    assert [keys for _, keys in requested(second)] == [[ORDERS_KEY]]
    assert json.loads(second.cursor)["tables"][ORDERS_KEY]["orders_to_bronze"]["files"] == 2
