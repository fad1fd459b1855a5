"""Dataflows writing one table take turns, even when the metadata does not order them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl

from datacoolie_core import DataCoolieDriver, DataCoolieRunConfig


def test_unordered_fan_in_writers_never_race_on_the_first_commit(tmp_path: Path) -> None:
    sources = tmp_path / "landing" / "sales"
    for region in ("eu", "us", "apac"):
        (sources / region).mkdir(parents=True)
        pl.DataFrame({"order_id": [1, 2], "region": [region, region]}).write_parquet(sources / region / "part.parquet")
    document = {
        "connections": [
            {"name": "landing", "format": "parquet", "configure": {"base_path": str(tmp_path / "landing")}},
            {"name": "lake", "format": "delta", "configure": {"base_path": str(tmp_path / "lake")}},
        ],
        "dataflows": [
            {
                "name": f"orders_{region}",
                "source": {"connection_name": "landing", "schema_name": "sales", "table": region},
                "destination": {"connection_name": "lake", "table": "orders", "load_type": "append"},
            }
            for region in ("eu", "us", "apac")
        ],
    }
    (tmp_path / "metadata.json").write_text(json.dumps(document))
    for _ in range(3):  # the race shows up on some runs only
        shutil.rmtree(tmp_path / "lake", ignore_errors=True)
        with DataCoolieDriver(metadata_base_path=tmp_path, config=DataCoolieRunConfig(max_workers=3)) as driver:
            result = driver.run()
        assert (result.succeeded, result.failed) == (3, 0), result.errors
        table = pl.read_delta(str(tmp_path / "lake" / "orders"))
        assert sorted(table["region"].to_list()) == ["apac", "apac", "eu", "eu", "us", "us"]
