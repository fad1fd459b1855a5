"""Dataflows writing one table take turns, even when the metadata does not order them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

from datacoolie_core import DataCoolieDriver, DataCoolieRunConfig, FileProvider


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


def test_a_writer_in_another_process_waits_for_the_table(tmp_path: Path) -> None:
    """Two processes loading one table (two Dagster runs, or the same dataflow twice) take turns: a
    second run of an append would otherwise read the same watermark and append the rows again."""
    source = tmp_path / "landing" / "sales" / "orders"
    source.mkdir(parents=True)
    pl.DataFrame({"order_id": [1, 2]}).write_parquet(source / "part.parquet")
    document = {
        "connections": [
            {"name": "landing", "format": "parquet", "configure": {"base_path": str(tmp_path / "landing")}},
            {"name": "lake", "format": "delta", "configure": {"base_path": str(tmp_path / "lake")}},
        ],
        "dataflows": [
            {
                "name": "orders",
                "source": {"connection_name": "landing", "schema_name": "sales", "table": "orders"},
                "destination": {"connection_name": "lake", "table": "orders", "load_type": "append"},
            }
        ],
    }
    metadata = tmp_path / "metadata.json"
    metadata.write_text(json.dumps(document))
    provider = FileProvider(metadata, state_base_path=tmp_path / "state")
    provider.initialize()
    destination_key = provider.get_dataflows()[0].destination.destination_key
    command = [str(Path(sys.executable).parent / "datacoolie"), "run", "--metadata", str(metadata),
               "--state-path", str(tmp_path / "state")]  # fmt: skip

    with provider.destination_lock(destination_key):
        other = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            _wait_until_blocked_on_a_flock(other.pid, timeout=60)
            assert not (tmp_path / "lake" / "orders").exists()  # it waits before reading or writing
        except BaseException:
            other.kill()
            raise
    output, _ = other.communicate(timeout=120)
    assert other.returncode == 0, output
    assert pl.read_delta(str(tmp_path / "lake" / "orders"))["order_id"].sort().to_list() == [1, 2]


def _wait_until_blocked_on_a_flock(pid: int, timeout: float) -> None:
    """Until ``/proc/locks`` lists ``pid`` waiting (``->``) for a FLOCK (Linux)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        waiting = [line.split() for line in Path("/proc/locks").read_text().splitlines() if "->" in line]
        if any(fields[2] == "FLOCK" and fields[5] == str(pid) for fields in waiting):
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} never waited for the destination lock")
