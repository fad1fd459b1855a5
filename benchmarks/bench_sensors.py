"""What the sensors cost on a quiet tick, and what their first tick requests, at scale.

    .venv/bin/python benchmarks/bench_sensors.py [--dataflows 200 1000] [--rounds 5] [--out /tmp/bench_sensors.json]

A generated deployment per size N, with real landing files, Delta tables and stored watermarks
under a temporary folder (nothing is loaded by the engine: the state is written as a load leaves it):

* 45 % ``landing -> bronze`` appends of one parquet file each (the source sensor's tables);
* 45 % ``bronze -> silver`` appends reading those bronze tables (``eager()`` automation; the
  watermark sensor watches their upstream's watermark);
* 5 % monthly-partitioned ``merge_upsert`` tables reading landing files (the partition sensor);
* 5 % monthly-partitioned ``merge_upsert`` tables reading a bronze table (the watermark sensor's
  exact readers: it reads the bronze Delta change).

For each size: the code location is built in process (``build_definitions``), each sensor is
evaluated once with no cursor (its first tick: what it requests, how long it takes), then
``--rounds`` times with the cursor that tick left (a quiet tick: nothing changed), as the daemon
evaluates it in the code server (``sensor.evaluate_tick``; the gRPC hop is not included). Each
automation sensor's conditions are evaluated the same way (``dg.evaluate_automation_conditions`` over
its selection), on an instance with no materialization; then again as Dagster's daemon evaluates them,
in a process holding only the repository snapshot (``daemon_automation.py``: the daemon's own asset
graph, heap and garbage collections, cursor compression included). The machine's load average is
recorded with the figures: on a shared host they vary with it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

import dagster as dg  # noqa: E402
import polars as pl  # noqa: E402
from dagster._core.remote_representation.external_data import RepositorySnap  # noqa: E402
from dagster._serdes import serialize_value  # noqa: E402
from deltalake import write_deltalake  # noqa: E402

from datacoolie_core import FileProvider  # noqa: E402
from datacoolie_core.watermark.serializer import serialize_watermark  # noqa: E402
from datacoolie_dagster import build_definitions  # noqa: E402

MONTHS = {"start": "2024-01-01", "chunk_interval": {"months": 1}, "chunk_column": "created_at"}
ROWS = pl.DataFrame(
    {
        "id": [1, 2, 3],
        "created_at": [datetime(2024, 1, 5), datetime(2024, 2, 5), datetime(2024, 3, 5)],
        "updated_at": [datetime(2024, 3, 6)] * 3,
    }
)


def _flow(name: str, source: tuple[str, str], destination: tuple[str, str], **extra: Any) -> dict[str, Any]:
    watermark = ["__file_modification_time"] if source[0] == "landing" else ["updated_at"]
    return {
        "name": name,
        "stage": "landing2bronze" if source[0] == "landing" else "bronze2silver",
        "source": {"connection_name": source[0], "table": source[1], "watermark_columns": watermark},
        "destination": {"connection_name": destination[0], "table": destination[1], "load_type": "append"},
    } | extra


def _partitioned(flow: dict[str, Any]) -> dict[str, Any]:
    flow["destination"] |= {"load_type": "merge_upsert", "merge_keys": ["id"]}
    return flow | {"configure": {"dagster": {"partitions": MONTHS}}}


def deploy(root: Path, n: int) -> Path:
    """Metadata, landing files, bronze Delta tables and watermarks for ``n`` dataflows under ``root``."""
    pairs, monthly = int(n * 0.45), max(1, int(n * 0.05))
    flows = []
    for i in range(pairs):
        flows.append(_flow(f"load_{i}", ("landing", f"t{i}"), ("bronze", f"t{i}")))
        flows.append(_flow(f"follow_{i}", ("bronze", f"t{i}"), ("silver", f"t{i}")))
    for i in range(monthly):
        flows.append(_partitioned(_flow(f"monthly_{i}", ("landing", f"m{i}"), ("bronze", f"m{i}"))))
        flows.append(_partitioned(_flow(f"exact_{i}", ("bronze", f"t{i}"), ("silver", f"x{i}"))))
    lake = {"connection_type": "lakehouse", "format": "delta"}
    document = {
        "connections": [
            {"name": "landing", "connection_type": "file", "format": "parquet",
             "configure": {"base_path": str(root / "landing")}},
            {"name": "bronze", **lake, "configure": {"base_path": str(root / "bronze")}},
            {"name": "silver", **lake, "configure": {"base_path": str(root / "silver")}},
        ],
        "dataflows": flows,
    }  # fmt: skip
    metadata = root / "metadata.json"
    metadata.write_text(json.dumps(document), encoding="utf-8")
    for name in [f"t{i}" for i in range(pairs)] + [f"m{i}" for i in range(monthly)]:
        (root / "landing" / name).mkdir(parents=True)
        ROWS.write_parquet(root / "landing" / name / "part-0.parquet")
    for i in range(pairs):
        write_deltalake(str(root / "bronze" / f"t{i}"), ROWS.to_arrow())
    provider = FileProvider(str(metadata), state_base_path=str(root / "state"))
    stored = serialize_watermark({"updated_at": datetime(2024, 3, 6, tzinfo=UTC)})
    for dataflow in provider.get_dataflows():
        provider.update_watermark(str(dataflow.dataflow_id), stored)
    return metadata


SENSING = ("datacoolie_sources", "datacoolie_watermarks", "datacoolie_partitions")


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def measure(n: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench_sensors_") as folder, dg.instance_for_test() as instance:
        root = Path(folder)
        metadata = deploy(root, n)
        load_s, defs = timed(lambda: build_definitions(metadata, state_base_path=root / "state"))
        figures: dict[str, Any] = {"dataflows": n, "load_s": round(load_s, 2), "loadavg_before": os.getloadavg()}
        for sensor in defs.sensors or []:
            if sensor.name in SENSING:

                def tick(cursor: str | None, s: Any = sensor) -> Any:
                    return s.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs))

                first_s, first = timed(lambda: tick(None))
                quiet = [timed(lambda c=first.cursor: tick(c)) for _ in range(rounds)]
                figures[sensor.name] = {
                    "first_tick_s": round(first_s, 2),
                    "first_tick_runs": len(first.run_requests),
                    "quiet_median_s": round(statistics.median(t for t, _ in quiet), 3),
                    "quiet_max_s": round(max(t for t, _ in quiet), 3),
                    "quiet_runs": sum(len(d.run_requests) for _, d in quiet),
                    "cursor_bytes": len(first.cursor or ""),
                }
        for sensor in defs.sensors or []:
            if isinstance(sensor, dg.AutomationConditionSensorDefinition):
                figures[sensor.name] = _automation_figures(defs, instance, sensor.asset_selection, rounds)
        figures["daemon_path"] = _daemon_path_figures(defs, root / "snapshot.json", rounds)
        figures["loadavg_after"] = os.getloadavg()
        return figures


def _automation_figures(
    defs: dg.Definitions, instance: dg.DagsterInstance, selection: dg.AssetSelection, rounds: int
) -> dict[str, Any]:
    """One automation sensor's evaluations (as its daemon tick makes them), Dagster's cursor included."""

    def evaluate(cursor: Any = None) -> Any:
        return dg.evaluate_automation_conditions(defs=defs, instance=instance, asset_selection=selection, cursor=cursor)

    first_s, result = timed(evaluate)
    quiet = [timed(lambda: evaluate(result.cursor)) for _ in range(rounds)]
    return {
        "first_tick_s": round(first_s, 2),
        "first_tick_runs": result.total_requested,
        "conditions": len(result.results),
        "quiet_median_s": round(statistics.median(t for t, _ in quiet), 3),
        "quiet_max_s": round(max(t for t, _ in quiet), 3),
        "quiet_runs": sum(r.total_requested for _, r in quiet),
    }


def _daemon_path_figures(defs: dg.Definitions, snapshot: Path, rounds: int) -> dict[str, Any]:
    """The automation sensors evaluated as the daemon evaluates them, in a process of their own."""
    snapshot.write_text(serialize_value(RepositorySnap.from_def(defs.get_repository_def())), encoding="utf-8")
    script = Path(__file__).with_name("daemon_automation.py")
    done = subprocess.run(
        [sys.executable, str(script), str(snapshot), "--rounds", str(rounds)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    figures: dict[str, Any] = {"snapshot_bytes": snapshot.stat().st_size}
    for line in lines:
        figures[line.pop("sensor", "load")] = line
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataflows", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "bench_sensors.json")
    args = parser.parse_args()
    results = []
    for n in args.dataflows:
        figures = measure(n, args.rounds)
        print(json.dumps(figures), flush=True)
        results.append(figures)
    args.out.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
