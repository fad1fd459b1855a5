"""Every reference in one command; the tables written into docs/benchmarks.md with the load average.

    .venv/bin/python benchmarks/run_all.py [--rows 1000000] [--rounds 5] [--dataflows 10000] [--rounds-10k 3]
                                           [--skip bench_many,bench_10k] [--doc docs/benchmarks.md]

Runs, one after the other, each in its own processes: ``bench.py`` (the five 1M-row jobs: bare,
plain, ours, DataCoolie 0.2.0 and dlt, outputs checked against the bare job's), ``bench_many.py``
(200 tiny dataflows against plain) and ``bench_10k.py`` (validate, dry-run and code-location load at
``--dataflows``). Their markdown reports replace the section between the ``latest run`` markers of
the doc, headed by the date, the library versions and the load average before and after each
script. A host whose load average exceeds its cores is said to be loaded: its wall-time ratios
are noisy and the CPU ratios are the ones to read.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
BEGIN, END = "<!-- latest run: begin (benchmarks/run_all.py writes this section) -->", "<!-- latest run: end -->"


def scripts(args: argparse.Namespace) -> dict[str, list[str]]:
    rounds = str(args.rounds)
    return {
        "bench": ["bench.py", "--rows", str(args.rows), "--rounds", rounds],
        "bench_many": ["bench_many.py", "--rounds", rounds],
        "bench_10k": ["bench_10k.py", "--dataflows", str(args.dataflows), "--rounds", str(args.rounds_10k)],
    }


def run(argv: list[str]) -> tuple[str, str, str]:
    """The script's markdown (from its first heading or table on), with the load average around it."""
    before = load()
    done = subprocess.run([sys.executable, *argv], cwd=HERE, capture_output=True, text=True, check=False)
    after = load()
    if done.returncode != 0:
        return before, after, f"**failed** (exit {done.returncode}):\n\n```\n{done.stderr[-2000:]}\n```"
    lines = done.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(("## ", "| "))), len(lines))
    notes = [line for line in lines[:start] if "skipped" in line or "dataflows," in line]
    body = [f"#{line}" if line.startswith("## ") else line for line in lines[start:]]  # under the script heading
    return before, after, "\n".join([*notes, *body])


def load() -> str:
    one, five, fifteen = os.getloadavg()
    busy = " (loaded host)" if one > (os.cpu_count() or 1) else ""
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f} on {os.cpu_count()} cores{busy}"


def versions() -> str:
    names = ("polars", "deltalake", "pyarrow", "dagster")
    return ", ".join(f"{n} {importlib.metadata.version(n)}" for n in names)


def write_section(doc: Path, section: str) -> None:
    text = doc.read_text(encoding="utf-8")
    block = f"{BEGIN}\n\n{section.strip()}\n\n{END}"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip() + "\n\n## Latest run\n\n" + block + "\n"
    doc.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dataflows", type=int, default=10_000)
    parser.add_argument("--rounds-10k", type=int, default=3, help="rounds of bench_10k (minutes each at 10,000)")
    parser.add_argument("--skip", default="", help="comma-separated: bench, bench_many, bench_10k")
    parser.add_argument("--doc", type=Path, default=HERE.parent / "docs" / "benchmarks.md")
    args = parser.parse_args()
    skipped = set(filter(None, args.skip.split(",")))
    parts = [
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {args.rounds} rounds ({versions()}, "
        f"`POLARS_MAX_THREADS={os.environ.get('POLARS_MAX_THREADS', '2')}`). Load average (1 / 5 / 15 min) "
        "before and after each script below; where the host was loaded, read the CPU columns."
    ]
    for name, argv in scripts(args).items():
        if name in skipped:
            continue
        print(f"running {' '.join(argv)} ...", flush=True)
        before, after, report = run(argv)
        parts.append(f"### `{' '.join(argv)}`\n\nload average before: {before}; after: {after}\n\n{report}")
        write_section(args.doc, "\n\n".join(parts))  # after each script: a later one may be stopped
    print(f"wrote {args.doc}")


if __name__ == "__main__":
    main()
