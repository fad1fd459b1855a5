"""Evaluate each automation sensor of a repository snapshot as Dagster's daemon does (used by bench_sensors.py).

    .venv/bin/python benchmarks/daemon_automation.py SNAPSHOT.json [--rounds 3]

The daemon never builds the definitions: it holds the code location's repository snapshot (sent by
the code server over gRPC) and the workspace asset graph built from it, and evaluates each
automation sensor's share of the conditions in its own process. This script does the same in a
process that imports only Dagster: it reads the snapshot (``serialize_value`` of
``RepositorySnap.from_def``), builds the workspace asset graph, and per automation sensor runs one
first evaluation and ``--rounds`` quiet ones, each one as the asset daemon's tick does it: the
stored cursor decompressed, ``AutomationTickEvaluationContext.evaluate`` over the sensor's
conditioned keys, the new cursor compressed (the instance's tick and cursor writes are left out).
Prints one JSON line per sensor: wall and CPU times, and the full garbage collections met.

These are Dagster internals (1.13.27), used as its asset daemon uses them; the instance is an
empty temporary one (no materialization: a quiet tick).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import dagster as dg
from dagster._core.definitions.assets.graph.remote_asset_graph import RemoteWorkspaceAssetGraph
from dagster._core.definitions.automation_tick_evaluation_context import AutomationTickEvaluationContext
from dagster._core.remote_representation.external import RemoteRepository
from dagster._core.remote_representation.external_data import RepositorySnap
from dagster._core.remote_representation.handle import RepositoryHandle
from dagster._daemon.asset_daemon import (
    asset_daemon_cursor_from_instigator_serialized_cursor,
    asset_daemon_cursor_to_instigator_serialized_cursor,
)
from dagster._serdes import deserialize_value


class FullCollections:
    """Counts the cyclic collector's full (generation 2) collections and the time they took."""

    def __init__(self) -> None:
        self.count, self.seconds, self._start = 0, 0.0, 0.0
        gc.callbacks.append(self._observe)

    def _observe(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.count += 1
            self.seconds += time.perf_counter() - self._start


def workspace_graph(snapshot: Path) -> tuple[RemoteRepository, RemoteWorkspaceAssetGraph]:
    snap = deserialize_value(snapshot.read_text(encoding="utf-8"), RepositorySnap)
    handle = RepositoryHandle.for_test(location_name="bench", repository_name=snap.name)
    repository = RemoteRepository(snap, handle, auto_materialize_use_sensors=True)
    location = SimpleNamespace(name="bench", get_repositories=lambda: {repository.name: repository})
    workspace = SimpleNamespace(code_location_entries={"bench": SimpleNamespace(code_location=location)})
    return repository, RemoteWorkspaceAssetGraph.build(workspace)  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("snapshot", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    start = time.perf_counter()
    repository, graph = workspace_graph(args.snapshot)
    print(json.dumps({"snapshot_load_s": round(time.perf_counter() - start, 2)}), flush=True)
    collections = FullCollections()
    logger = logging.getLogger("bench.automation")
    sensors = [s for s in repository.get_sensors() if s.sensor_type.is_handled_by_asset_daemon]
    with dg.instance_for_test() as instance:
        for sensor in sensors:
            selection = sensor.asset_selection
            assert selection is not None
            keys = {k for k in selection.resolve(repository.asset_graph) if graph.get(k).automation_condition}

            def tick(cursor: str | None, evaluation_id: int, keys: set[Any] = keys) -> tuple[float, float, int, str]:
                wall, cpu = time.perf_counter(), time.process_time()
                requests, new_cursor, _ = AutomationTickEvaluationContext(
                    evaluation_id=evaluation_id,
                    instance=instance,
                    asset_graph=graph,
                    cursor=asset_daemon_cursor_from_instigator_serialized_cursor(cursor, graph),
                    materialize_run_tags={},
                    observe_run_tags={},
                    auto_observe_asset_keys=set(),
                    asset_selection=dg.AssetSelection.keys(*keys),
                    logger=logger,
                    emit_backfills=False,
                ).evaluate()
                stored = asset_daemon_cursor_to_instigator_serialized_cursor(new_cursor)
                return time.perf_counter() - wall, time.process_time() - cpu, len(requests), stored

            first_s, _, first_runs, cursor = tick(None, 1)
            collections.count, collections.seconds = 0, 0.0
            quiet = []
            for index in range(args.rounds):
                wall, cpu, runs, cursor = tick(cursor, index + 2)
                quiet.append((wall, cpu, runs))
            print(
                json.dumps(
                    {
                        "sensor": sensor.name,
                        "conditions": len(keys),
                        "first_tick_s": round(first_s, 2),
                        "first_tick_runs": first_runs,
                        "quiet_s": [round(w, 3) for w, _, _ in quiet],
                        "quiet_cpu_s": [round(c, 3) for _, c, _ in quiet],
                        "quiet_runs": sum(r for _, _, r in quiet),
                        "full_collections": collections.count,
                        "full_collections_s": round(collections.seconds, 2),
                        "cursor_bytes": len(cursor),
                        "loadavg": os.getloadavg(),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
