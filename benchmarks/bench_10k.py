"""10,000 dataflows: ``datacoolie validate``, ``datacoolie run --dry-run`` and the code-location load.

    .venv/bin/python benchmarks/bench_10k.py [--dataflows 10000] [--rounds 3] [--out FILE]

One metadata file of ``--dataflows`` dataflows (bench_load.metadata: 10 stages, a third merges,
every 10th reads an earlier table). Each measurement is a fresh process started by the harness's
launcher (wall, CPU and peak RSS of that process alone), in rotated rounds:

- ``validate``: ``datacoolie validate FILE``, the whole process;
- ``dry_run``: ``datacoolie run --metadata FILE --dry-run``, the whole process (every stage);
- ``definitions``: a process that imports Dagster, then ``datacoolie_dagster.definitions`` on the
  file (``DATACOOLIE_METADATA``): "in-process" is that import, the ``Definitions`` built; then the
  repository is resolved and its snapshot serialized, as a code server does before the UI sees it
  (``snapshot_s``);
- ``code_server``: ``dagster api grpc -m datacoolie_dagster.definitions`` from spawn until it
  answers a ping (the server listens only after loading the location), with its RSS then (VmRSS;
  VmHWM is the peak). The server is stopped right after.

The load average is printed at the start and the end: on a shared machine read the CPU seconds
alongside the wall times.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_load import _resolve_and_serialize, metadata
from harness import compile_sources, environment, rotated, run_child, spread

REPOSITORY = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
COMMANDS = ("validate", "dry_run", "definitions", "code_server")


def child_definitions() -> None:
    """Import Dagster (untimed), then build the location's ``Definitions`` and serialize its snapshot."""
    import dagster  # noqa: F401

    started = time.perf_counter()
    from datacoolie_dagster import definitions

    built = time.perf_counter()
    size = _resolve_and_serialize(definitions.defs)
    done = time.perf_counter()
    print(json.dumps({"seconds": built - started, "snapshot_s": done - built, "bytes": size}))


def measure(command: str, path: Path, env: dict[str, str], code: Path) -> dict[str, Any]:
    if command == "code_server":
        return code_server(env, code)
    argv = {
        "validate": [str(BIN / "datacoolie"), "validate", str(path)],
        "dry_run": [str(BIN / "datacoolie"), "run", "--metadata", str(path), "--dry-run"],
        "definitions": [sys.executable, __file__, "--child-definitions"],
    }[command]
    if command != "definitions":  # the whole process is the measure: a wrapper reports no in-process time
        argv = [sys.executable, "-c", _TIMED, *argv]
    sample = run_child(argv, env)
    return {"seconds": sample.seconds, "wall": sample.wall, "cpu": sample.cpu, "rss_mib": sample.peak_rss_mib,
            **sample.reported}  # fmt: skip


_TIMED = (
    "import json, subprocess, sys, time; s = time.perf_counter(); "
    "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
    "assert done.returncode in (0, 1), done.returncode; "  # validate exits 1 on warnings only
    "print(json.dumps({'seconds': time.perf_counter() - s}))"
)
"""Runs the command (the launcher's peak RSS is then the larger of this wrapper and the command)."""


def code_server(env: dict[str, str], code: Path) -> dict[str, Any]:
    """Spawn to the first answered ping of ``dagster api grpc``; its RSS then; the server is stopped.

    The server's working directory is ``code``: Dagster puts it first on ``sys.path``, before
    ``PYTHONPATH``, so it decides which checkout the server imports.
    """
    from dagster._grpc.client import DagsterGrpcClient

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [str(BIN / "dagster"), "api", "grpc", "-m", "datacoolie_dagster.definitions", "-p", str(port), "-h", "127.0.0.1", "-d", str(code)]  # fmt: skip
    started = time.perf_counter()
    server = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    client = DagsterGrpcClient(port=port, host="127.0.0.1")
    try:
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"code server exited {server.returncode}: {server.stderr.read()[-2000:]}")  # type: ignore[union-attr]
            try:
                client.ping("ready")
                break
            except Exception:  # not listening yet: the location is still loading
                time.sleep(0.05)
        ready = time.perf_counter() - started
        status = Path(f"/proc/{server.pid}/status").read_text()
        memory = {k: int(v.split()[0]) / 1024 for k, v in (line.split(":", 1) for line in status.splitlines()) if k in ("VmRSS", "VmHWM")}  # fmt: skip
        cpu = _cpu_seconds(server.pid)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:  # still shutting down gracefully: not measured any more
            server.kill()
            server.wait()
    return {"seconds": ready, "wall": ready, "cpu": cpu, "rss_mib": memory["VmRSS"], "peak_rss_mib": memory["VmHWM"]}


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _load() -> str:
    return ", ".join(f"{value:.1f}" for value in os.getloadavg()) + f" on {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataflows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--code", type=Path, default=REPOSITORY, help="the checkout to measure (e.g. an older one)")
    parser.add_argument("--child-definitions", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_definitions:
        child_definitions()
        return
    compile_sources()
    commands = args.commands.split(",")
    results: dict[str, list[dict[str, Any]]] = {c: [] for c in commands}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "metadata.json"
        path.write_text(json.dumps(metadata(args.dataflows)))
        env = environment() | {
            "PYTHONPATH": os.pathsep.join([str(args.code.resolve()), str(Path(__file__).parent)]),
            "DATACOOLIE_METADATA": str(path),
            "DATACOOLIE_HOME": str(Path(tmp) / "home"),
        }
        before = _load()
        for round_ in range(args.rounds):
            for command in rotated(commands, round_):
                results[command].append(measure(command, path, env, args.code.resolve()))
                print(f"round {round_} {command}: {json.dumps(results[command][-1])}", flush=True)
        after = _load()
    print(f"\n{args.dataflows} dataflows, {args.rounds} rounds; load average before: {before}; after: {after}\n")
    print(table(results))
    if args.out:
        args.out.write_text(json.dumps({"load_average": [before, after], "results": results}, indent=1))


def table(results: dict[str, list[dict[str, Any]]]) -> str:
    lines = ["| what | in-process s | whole process s | CPU s | RSS MiB | snapshot s |", "|---|---|---|---|---|---|"]
    for command, runs in results.items():
        cell = {k: spread([r[k] for r in runs if k in r]) if any(k in r for r in runs) else "" for k in
                ("seconds", "wall", "cpu", "rss_mib", "snapshot_s")}  # fmt: skip
        lines.append(f"| {command} | " + " | ".join(cell.values()) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
