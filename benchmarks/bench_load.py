"""Code-location load time: ``build_definitions`` against a plain ``@multi_asset`` of hand-made specs.

    .venv/bin/python benchmarks/bench_load.py [--sizes 1000,3000] [--rounds 5]

Measured from the metadata file to resolved, serialized definitions (what a code server does
before the UI sees anything): ``build_definitions(path)`` -> repository -> ``RepositorySnap`` ->
``serialize_value``. "Plain" builds the same number of ``AssetSpec``s by hand (same keys, deps and
metadata sizes) in one ``multi_asset`` and resolves/serializes them the same way. Each measurement
runs in a fresh process after ``import dagster`` (import time excluded from both).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def metadata(count: int) -> dict[str, Any]:
    """``count`` dataflows in 10 stages; every 10th reads an earlier dataflow's table (lineage)."""
    dataflows = []
    for i in range(count):
        source: dict[str, Any] = {"connection_name": "landing", "schema_name": "raw", "table": f"t{i}",
                                  "watermark_columns": ["updated_at"]}  # fmt: skip
        if i % 10 == 9:
            source = {"connection_name": "lake", "schema_name": "s", "table": f"t{i - 1}"}
        dataflows.append({
            "name": f"flow_{i}", "stage": f"stage_{i % 10}", "description": f"dataflow {i}",
            "source": source,
            "destination": {"connection_name": "lake", "schema_name": "s", "table": f"t{i}",
                            "load_type": "merge_upsert" if i % 3 == 0 else "append",
                            **({"merge_keys": ["id"]} if i % 3 == 0 else {})},
        })  # fmt: skip
    return {
        "connections": [
            {"name": "landing", "format": "parquet", "configure": {"base_path": "/tmp/landing"}},
            {"name": "lake", "format": "delta", "configure": {"base_path": "/tmp/lake"}},
        ],
        "dataflows": dataflows,
    }


def load_ours(path: Path) -> int:
    from datacoolie_dagster import build_definitions

    return _resolve_and_serialize(build_definitions(path))


def load_plain(path: Path) -> int:
    import dagster as dg

    document = json.loads(path.read_text())
    produced = {f"s/{d['destination']['table']}" for d in document["dataflows"]}
    specs = []
    for d in document["dataflows"]:
        source = d["source"]
        upstream = f"{source['schema_name']}/{source['table']}"
        dep = (
            ["lake", *upstream.split("/")]
            if upstream in produced
            else [source["connection_name"], *upstream.split("/")]
        )
        specs.append(
            dg.AssetSpec(
                key=["lake", "s", d["destination"]["table"]],
                deps=[dep],
                description=d["description"],
                group_name=d["stage"],
                metadata={
                    "dagster/uri": f"/tmp/lake/s/{d['destination']['table']}",
                    "datacoolie/dataflow_ids": [d["name"]],
                    "datacoolie/load_type": d["destination"]["load_type"],
                },
                kinds={"polars", "delta"},
                skippable=True,
            )
        )

    @dg.multi_asset(specs=specs, can_subset=True)
    def tables(context):  # type: ignore[no-untyped-def]  # (a string annotation would not resolve here)
        raise NotImplementedError

    return _resolve_and_serialize(dg.Definitions(assets=[tables]))


def _resolve_and_serialize(defs: Any) -> int:
    from dagster._core.remote_representation.external_data import RepositorySnap
    from dagster_shared.serdes import serialize_value

    return len(serialize_value(RepositorySnap.from_def(defs.get_repository_def())))


def child(impl: str, path: Path) -> None:
    import dagster  # noqa: F401  (import time excluded from both)

    import datacoolie_dagster  # noqa: F401

    started = time.perf_counter()
    size = (load_ours if impl == "ours" else load_plain)(path)
    print(json.dumps({"seconds": time.perf_counter() - started, "bytes": size}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,3000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return
    print("| dataflows | ours s | plain s | ratio | ours s per 1,000 |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"metadata_{size}.json"
            path.write_text(json.dumps(metadata(size)))
            times: dict[str, list[float]] = {"ours": [], "plain": []}
            for round_ in range(args.rounds):
                for impl in ("ours", "plain") if round_ % 2 == 0 else ("plain", "ours"):
                    done = subprocess.run(
                        [sys.executable, __file__, "--child", impl, str(path)],
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    times[impl].append(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])
            ours, plain = statistics.median(times["ours"]), statistics.median(times["plain"])
            print(f"| {size} | {ours:.2f} | {plain:.2f} | {ours / plain:.2f} | {ours / size * 1000:.2f} |", flush=True)


if __name__ == "__main__":
    main()
