"""Where a code server's load goes, phase by phase, optionally under cProfile.

    .venv/bin/python benchmarks/profile_location.py [--dataflows 10000] [--profile PHASES] [--top 30]

The phases a code server (``dagster api grpc``) runs before it answers, then what the webserver
asks of it right after, in one process after ``import dagster`` (not timed), on
``bench_load.metadata(N)``:

- ``build``: import ``datacoolie_dagster.definitions`` (``DATACOOLIE_METADATA``): the ``Definitions``;
- ``repository``: ``Definitions.get_repository_def()`` (the implicit asset job, the jobs resolved);
- ``load_all``: ``RepositoryDefinition.load_all_definitions()`` — the server answers pings after it;
- ``snapshot``: ``RepositorySnap.from_def(defer_snapshots=True)`` and one ``JobDataSnap`` per job
  (what the webserver fetches on connecting);
- ``serialize``: ``serialize_value`` of those.

Each phase prints its wall and CPU seconds; the RSS is read after ``load_all`` (what the code server
holds when it starts answering) and at the end, with the peak. ``--profile build,repository``
profiles those phases (cProfile; times are inflated by the profiler) and prints the top functions by
own time and by cumulative time. ``--digest`` adds the sha256 of the serialized snapshots: two
checkouts given the same ``--workdir`` (the metadata path and the state folder appear in the
snapshot) compare what the UI is served, byte for byte. The load average is printed at the start
and the end.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import os
import pstats
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_load import metadata
from harness import compile_sources

PHASES = ("build", "repository", "load_all", "snapshot", "serialize")


def _memory() -> dict[str, float]:
    status = Path("/proc/self/status").read_text()
    fields = (line.split(":", 1) for line in status.splitlines())
    return {k: int(v.split()[0]) / 1024 for k, v in fields if k in ("VmRSS", "VmHWM")}


def _load() -> str:
    return ", ".join(f"{value:.1f}" for value in os.getloadavg())


def run(profiled: set[str], top: int, digest: bool = False) -> dict[str, Any]:
    import dagster  # noqa: F401  (not timed: every process of Dagster pays it)
    from dagster._core.remote_representation.external_data import JobDataSnap, RepositorySnap
    from dagster_shared.serdes import serialize_value

    state: dict[str, Any] = {}

    def build() -> None:
        from datacoolie_dagster import definitions

        state["defs"] = definitions.defs

    def repository() -> None:
        state["repo"] = state["defs"].get_repository_def()

    def load_all() -> None:
        state["repo"].load_all_definitions()

    def snapshot() -> None:
        repo = state["repo"]
        state["snaps"] = [
            RepositorySnap.from_def(repo, defer_snapshots=True),
            *(
                JobDataSnap.from_job_def(j, include_parent_snapshot=True)
                for j in sorted(repo.get_all_jobs(), key=_name)
            ),
        ]

    def serialize() -> None:
        serialized = [serialize_value(snap).encode() for snap in state["snaps"]]
        state["bytes"] = sum(map(len, serialized))
        state["digest"] = hashlib.sha256(b"".join(serialized)).hexdigest()

    steps: dict[str, Callable[[], None]] = {
        "build": build,
        "repository": repository,
        "load_all": load_all,
        "snapshot": snapshot,
        "serialize": serialize,
    }
    report: dict[str, Any] = {"load_before": _load()}
    for name, step in steps.items():
        profiler = cProfile.Profile() if name in profiled else None
        wall, cpu = time.perf_counter(), time.process_time()
        if profiler:
            profiler.runcall(step)
        else:
            step()
        report[name] = {"wall": round(time.perf_counter() - wall, 2), "cpu": round(time.process_time() - cpu, 2)}
        print(f"{name}: {json.dumps(report[name])}", flush=True)
        if profiler:
            _print_profile(name, profiler, top)
        if name == "load_all":
            report["rss_ready_mib"] = round(_memory()["VmRSS"], 1)
    memory = _memory()
    report |= {"snapshot_bytes": state["bytes"], "rss_end_mib": round(memory["VmRSS"], 1)}
    if digest:
        report["snapshot_sha256"] = state["digest"]
    report |= {"peak_rss_mib": round(memory["VmHWM"], 1), "load_after": _load()}
    return report


def _name(job: Any) -> str:
    return str(job.name)


def _print_profile(name: str, profiler: cProfile.Profile, top: int) -> None:
    for order in ("tottime", "cumulative"):
        print(f"\n--- {name}: top {top} by {order} ---")
        pstats.Stats(profiler).sort_stats(order).print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataflows", type=int, default=10_000)
    parser.add_argument("--profile", default="", help=f"comma list of phases to profile: {', '.join(PHASES)}")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--digest", action="store_true", help="print the sha256 of the serialized snapshots")
    parser.add_argument("--workdir", type=Path, help="where the metadata and state go (default: a temporary folder)")
    args = parser.parse_args()
    profiled = {p for p in args.profile.split(",") if p}
    if unknown := profiled - set(PHASES):
        parser.error(f"unknown phase(s) {', '.join(sorted(unknown))}; known: {', '.join(PHASES)}")
    compile_sources()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.workdir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "metadata.json"
        path.write_text(json.dumps(metadata(args.dataflows)))
        os.environ["DATACOOLIE_METADATA"] = str(path)
        os.environ["DATACOOLIE_HOME"] = str(folder / "home")
        print(json.dumps({"dataflows": args.dataflows} | run(profiled, args.top, args.digest)))


if __name__ == "__main__":
    main()
