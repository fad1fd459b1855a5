"""Speed and memory of datacoolie_core against the bare job, plain polars + deltalake, DataCoolie 0.2.0 and dlt.

    .venv/bin/python benchmarks/bench.py [--rows 1000000] [--rounds 5] [--workdir /tmp/datacoolie-bench]
                                         [--scenarios ...] [--impls bare,plain,ours,datacoolie,dlt] [--out FILE]

Every measured job runs in its own fresh Python process (jobs.py) with its state prepared
beforehand and untimed; rounds rotate which implementation goes first. Per job and implementation
the report gives the in-process time (the job after imports), the whole process (spawn to exit,
imports included), CPU time (user + system) and peak RSS, as ratios to the bare job (per round,
median and min-max over rounds). Outputs are kept and checked against the bare job's after the
timed rounds. ``ours`` and ``datacoolie`` run the same metadata file (dataset.py); ``datacoolie``
and ``dlt`` run in their own benchmark-only venvs (datacoolie_peer.py), created on first use.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from dataclasses import asdict
from pathlib import Path

from datacoolie_peer import DEFAULT_VENV, DLT_REQUIREMENT, DLT_VENV, REQUIREMENT, PeerUnavailable, ensure_peer
from dataset import SCENARIOS, data_code, metadata, prepare_data, prepare_state
from harness import METRICS, Sample, compile_sources, environment, ratios, rotated, run_child, spread
from verify import keep_output, verify

IMPLS = ("bare", "plain", "ours", "datacoolie", "dlt")
JOBS = Path(__file__).resolve().parent / "jobs.py"
Results = dict[str, dict[str, list[Sample]]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/datacoolie-bench"))
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--impls", default=",".join(IMPLS), help="bare is always measured (the baseline)")
    parser.add_argument("--datacoolie-venv", type=Path, default=DEFAULT_VENV, help="DataCoolie 0.2.0's own venv")
    parser.add_argument("--dlt-venv", type=Path, default=DLT_VENV, help="dlt's own venv")
    parser.add_argument("--out", type=Path, default=None, help="write the raw measurements as JSON")
    args = parser.parse_args()
    root = args.workdir.resolve()
    compile_sources()  # as installed: no per-process compile of our sources (harness.compile_sources)
    scenarios = args.scenarios.split(",")
    pythons = _pythons(args.impls.split(","), {"datacoolie": args.datacoolie_venv, "dlt": args.dlt_venv})
    _prepare(root, args.rows)
    print(f"load average before: {_load()}", flush=True)
    results: Results = {}
    for scenario in scenarios:
        results[scenario] = {impl: [] for impl in pythons}
        for round_ in range(args.rounds):
            for impl in rotated(list(pythons), round_):
                prepare_state(root, scenario)
                argv = [str(pythons[impl]), str(JOBS), impl, scenario, str(root)]
                results[scenario][impl].append(run_child(argv, environment()))
                keep_output(root, scenario, impl)
        print(f"measured {scenario}: {_seconds_line(results[scenario])}", flush=True)
    print(f"load average after: {_load()}")
    print("\n## Correctness (last timed round's outputs against the bare job's)\n")
    print("\n".join(verify(root, scenarios, list(pythons))))
    print(report(results, list(pythons)))
    if args.out:
        raw = {s: {i: [asdict(x) for x in xs] for i, xs in r.items()} for s, r in results.items()}
        args.out.write_text(json.dumps(raw, indent=2))


PEERS = {"datacoolie": ("DataCoolie 0.2.0", REQUIREMENT), "dlt": ("dlt 1.31", DLT_REQUIREMENT)}
"""The implementations that run in their own benchmark-only venv: their label and requirement."""


def _pythons(impls: list[str], venvs: dict[str, Path]) -> dict[str, Path]:
    """The interpreter of each implementation (bare first); a peer's only if its venv is usable."""
    pythons = {impl: Path(sys.executable) for impl in ["bare", *(i for i in impls if i != "bare")]}
    unknown = set(pythons) - set(IMPLS)
    if unknown:
        raise SystemExit(f"unknown implementation(s) {sorted(unknown)}; known: {', '.join(IMPLS)}")
    for peer, (label, requirement) in PEERS.items():
        if peer in pythons:
            try:
                pythons[peer] = ensure_peer(venvs[peer], requirement)
            except PeerUnavailable as error:
                print(f"{label} column skipped: {error}", flush=True)
                del pythons[peer]
    return pythons


def _prepare(root: Path, rows: int) -> None:
    """The data (once per row count and data code) and the metadata file (every run; it names this root's paths)."""
    marker = root / "rows.json"
    made = {"rows": rows, "code": data_code()}
    if not marker.exists() or json.loads(marker.read_text()) != made:
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        prepare_data(root, rows)
        marker.write_text(json.dumps(made))
    (root / "meta").mkdir(exist_ok=True)
    (root / "meta" / "metadata.json").write_text(json.dumps(metadata(root), indent=2))


def _load() -> str:
    return ", ".join(f"{value:.1f}" for value in os.getloadavg()) + f" on {os.cpu_count()} cores"


def _seconds_line(runs: dict[str, list[Sample]]) -> str:
    return ", ".join(f"{impl} {statistics.median(s.seconds for s in samples):.2f} s" for impl, samples in runs.items())


def report(results: Results, impls: list[str]) -> str:
    """Markdown: ratios to the bare job, ours to plain, then every median with its spread."""
    peers = [i for i in ("ours", "datacoolie", "dlt") if i in impls]
    head = "| job | " + " | ".join(f"{METRICS[m]}: {p}/bare" for m in METRICS for p in peers) + " |"
    lines = ["\n## Ratios to the bare job (median of per-round ratios, min-max)\n", head, _rule(head)]
    for scenario, runs in results.items():
        cells = [spread(ratios(runs[p], runs["bare"], m)) for m in METRICS for p in peers]
        lines.append(f"| {scenario} | " + " | ".join(cells) + " |")
    if "plain" in impls:
        lines += _ratio_table(
            results, "plain", "bare", "What DataCoolie's seven columns cost by themselves: plain / bare"
        )
    if "plain" in impls and "ours" in impls:
        lines += _ratio_table(results, "ours", "plain", "Ours / plain (the bare job plus the same columns, by hand)")
    for peer, label in (("datacoolie", "DataCoolie 0.2.0"), ("dlt", "dlt 1.31")):
        if peer in impls and "ours" in impls:
            lines += _ratio_table(results, "ours", peer, f"Ours / {label}")
    head = "| job | implementation | " + " | ".join(METRICS.values()) + " | imports s |"
    lines += ["\n## Medians (min-max)\n", head, _rule(head)]
    for scenario, runs in results.items():
        for impl, samples in runs.items():
            cells = [spread([s.get(m) for s in samples], 0 if m == "peak_rss_mib" else 2) for m in METRICS]
            lines.append(
                f"| {scenario} | {impl} | " + " | ".join(cells) + f" | {spread([s.imports for s in samples])} |"
            )
    return "\n".join(lines)


def _ratio_table(results: Results, impl: str, baseline: str, title: str) -> list[str]:
    head = "| job | " + " | ".join(METRICS.values()) + " |"
    lines = [f"\n## {title}\n", head, _rule(head)]
    for scenario, runs in results.items():
        cells = [spread(ratios(runs[impl], runs[baseline], m)) for m in METRICS]
        lines.append(f"| {scenario} | " + " | ".join(cells) + " |")
    return lines


def _rule(head: str) -> str:
    return "|" + "---|" * (head.count("|") - 1)


if __name__ == "__main__":
    main()
