"""Code-location load time: ``build_definitions`` against a plain ``@multi_asset`` of hand-made specs.

    .venv/bin/python benchmarks/bench_load.py [--sizes 1000,3000] [--rounds 5]

Measured from the metadata file to resolved, serialized definitions (what a code server does
before the UI sees anything): ``build_definitions(path)`` -> repository -> ``RepositorySnap`` ->
``serialize_value``. "Plain" builds the same tables by hand, like for like: one ``multi_asset`` of
``AssetSpec``s (same keys, deps and metadata sizes) with the same asset checks (``load_consistent``
on every table, ``unique_merge_keys`` on merge tables) and one external ``AssetSpec`` per landing
source table, resolved and serialized the same way. Each measurement runs in a fresh process after
``import dagster`` (import time excluded from both); the import of our package after it (what a
code server also pays, plain imports nothing more) is timed apart and given with a second CPU ratio.
The report gives medians with the spread (min-max) over rounds, the ratio per round (of wall and of
CPU time: the CPU ratio is the steadier on a loaded machine), and the size of the serialized snapshot.
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

from harness import compile_sources, spread  # beside this script (its folder is on sys.path)


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
    specs, checks, sources = [], [], {}
    for d in document["dataflows"]:
        source, table = d["source"], d["destination"]["table"]
        upstream = f"{source['schema_name']}/{source['table']}"
        if upstream in produced:
            dep = ["lake", *upstream.split("/")]
        else:
            dep = [source["connection_name"], *upstream.split("/")]
            sources[tuple(dep)] = dg.AssetSpec(key=dep, group_name="sources", kinds={"parquet"})
        key = dg.AssetKey(["lake", "s", table])
        specs.append(
            dg.AssetSpec(
                key=key,
                deps=[dep],
                description=d["description"],
                group_name=d["stage"],
                metadata={
                    "dagster/uri": f"/tmp/lake/s/{table}",
                    "datacoolie/dataflow_ids": [d["name"]],
                    "datacoolie/load_type": d["destination"]["load_type"],
                },
                kinds={"polars", "delta"},
                skippable=True,
            )
        )
        checks.append(dg.AssetCheckSpec("load_consistent", asset=key, blocking=True, description="rows and watermark"))
        if d["destination"]["load_type"] == "merge_upsert":
            checks.append(dg.AssetCheckSpec("unique_merge_keys", asset=key, blocking=True, description="unique keys"))

    @dg.multi_asset(specs=specs, check_specs=checks, can_subset=True)
    def tables(context):  # type: ignore[no-untyped-def]  # (a string annotation would not resolve here)
        raise NotImplementedError

    return _resolve_and_serialize(dg.Definitions(assets=[tables, *sources.values()]))


def _resolve_and_serialize(defs: Any) -> int:
    from dagster._core.remote_representation.external_data import RepositorySnap
    from dagster_shared.serdes import serialize_value

    return len(serialize_value(RepositorySnap.from_def(defs.get_repository_def())))


def child(impl: str, path: Path) -> None:
    import dagster  # noqa: F401  (import time excluded from both)

    cpu, started = time.process_time(), time.perf_counter()
    if impl == "ours":
        from datacoolie_dagster import build_definitions  # noqa: F401  (what a code server loads after Dagster)
    imports = {"import_seconds": time.perf_counter() - started, "import_cpu": time.process_time() - cpu}
    started, cpu = time.perf_counter(), time.process_time()
    size = (load_ours if impl == "ours" else load_plain)(path)
    measured = {"seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu, "bytes": size}
    print(json.dumps(measured | imports))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,3000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return
    compile_sources()  # as installed: no per-process compile of our sources (harness.compile_sources)
    print(
        "| dataflows | ours s | plain s | ratio ours/plain | CPU ratio ours/plain | ours s per 1,000 "
        "| ours MB snapshot | plain MB snapshot | ours import CPU s | CPU ratio with the import |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"metadata_{size}.json"
            path.write_text(json.dumps(metadata(size)))
            runs: dict[str, list[dict[str, float]]] = {"ours": [], "plain": []}
            for round_ in range(args.rounds):
                for impl in ("ours", "plain") if round_ % 2 == 0 else ("plain", "ours"):
                    done = subprocess.run(
                        [sys.executable, __file__, "--child", impl, str(path)],
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    runs[impl].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(_row(size, runs), flush=True)


def _row(size: int, runs: dict[str, list[dict[str, float]]]) -> str:
    ours, plain = ([r["seconds"] for r in runs[impl]] for impl in ("ours", "plain"))
    ratio = [o / p for o, p in zip(ours, plain, strict=True)]
    cpu = [o["cpu"] / p["cpu"] for o, p in zip(runs["ours"], runs["plain"], strict=True)]  # steadier under load
    # with the import of our package after Dagster's (a code server pays it; plain imports nothing more)
    with_import = [
        (o["cpu"] + o["import_cpu"]) / (p["cpu"] + p["import_cpu"])
        for o, p in zip(runs["ours"], runs["plain"], strict=True)
    ]
    per_1000 = statistics.median(ours) / size * 1000
    megabytes = [runs[impl][0]["bytes"] / 1e6 for impl in ("ours", "plain")]
    return (
        f"| {size} | {spread(ours)} | {spread(plain)} | {spread(ratio)} | {spread(cpu)} | {per_1000:.2f} "
        f"| {megabytes[0]:.1f} | {megabytes[1]:.1f} | {spread([r['import_cpu'] for r in runs['ours']])} "
        f"| {spread(with_import)} |"
    )


if __name__ == "__main__":
    main()
