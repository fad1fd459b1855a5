"""Per-dataflow overhead of the driver: many tiny dataflows, ours against a plain polars + deltalake loop.

    .venv/bin/python benchmarks/bench_many.py [--dataflows 200] [--rows 100] [--rounds 5] [--workers 2]
                                              [--existing] [--profile]

Each dataflow reads one small parquet file and appends it to its own Delta table. "Ours" is
``DataCoolieDriver(metadata_base_path=..., state_base_path=..., config=DataCoolieRunConfig(max_workers=2))``
then ``driver.run(stage=...)``, timed from constructing the driver to closing it; every dataflow
must succeed. "Plain" reads the same files, adds the same lineage and system columns and calls
``write_deltalake(..., frame, mode="append")`` (the Polars frame itself, as ours hands it over) from a ``ThreadPoolExecutor(max_workers=2)``. The harness is
bench.py's: each measured job in a fresh process, state prepared untimed, rounds alternating which
implementation goes first, medians; the time per dataflow is the job's wall time / dataflows.

By default every job creates its 200 tables (a first run); ``--existing`` appends to tables (and
state folders) left by one earlier untimed run of ours, the steady state of a scheduled job.
``--profile`` then runs each implementation once more under cProfile (all threads) and prints
where the time goes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dataset import orders
from harness import Sample, compile_sources, environment, profile_all_threads, ratios, rotated, run_child, spread
from plain_columns import system_columns  # beside this script (its folder is on sys.path)

IMPLS = ("ours", "plain")
STAGE = "bench_many"
TARGET_RATIO = 1.3


@dataclass(frozen=True)
class Job:
    """The shape of one measured job; the child process gets it back from :meth:`args`."""

    root: Path
    dataflows: int
    rows: int
    workers: int
    existing: bool

    def args(self) -> list[str]:
        flags = ["--existing"] if self.existing else []
        return [
            *("--workdir", str(self.root), "--dataflows", str(self.dataflows)),
            *("--rows", str(self.rows), "--workers", str(self.workers), *flags),
        ]

    @property
    def expected_rows(self) -> int:
        """Rows per target table after the job: one file's rows, twice when appending to an earlier run."""
        return self.rows * (2 if self.existing else 1)


def table_name(index: int) -> str:
    return f"t{index:04d}"


# --- data and state (untimed) -------------------------------------------------------------------


def prepare_data(job: Job) -> None:
    """One small parquet file per dataflow, in its own landing folder, and the metadata file."""
    shape = {"dataflows": job.dataflows, "rows": job.rows}
    marker = job.root / "shape.json"
    if not marker.exists() or json.loads(marker.read_text()) != shape:
        shutil.rmtree(job.root, ignore_errors=True)
        for index in range(job.dataflows):
            folder = job.root / "landing" / "sales" / table_name(index)
            folder.mkdir(parents=True)
            orders(job.rows, first_id=index * job.rows + 1, seed=index).write_parquet(folder / "part-00.parquet")
        marker.write_text(json.dumps(shape))
    (job.root / "meta").mkdir(exist_ok=True)
    (job.root / "meta" / "metadata.json").write_text(json.dumps(metadata(job), indent=2))
    shutil.rmtree(job.root / "templates", ignore_errors=True)
    if job.existing:  # one untimed run of ours leaves the tables and state every measured job starts from
        measure(Job(job.root, job.dataflows, job.rows, job.workers, existing=False), "ours")
        for name in ("work", "state"):
            shutil.copytree(job.root / name, job.root / "templates" / name)


def metadata(job: Job) -> dict[str, Any]:
    def dataflow(index: int) -> dict[str, Any]:
        name = table_name(index)
        return {
            "name": f"append_{name}",
            "stage": STAGE,
            "source": {"connection_name": "landing", "schema_name": "sales", "table": name},
            "destination": {"connection_name": "lake", "schema_name": "bench", "table": name, "load_type": "append"},
        }

    return {
        "connections": [
            {"name": "landing", "format": "parquet", "configure": {"base_path": str(job.root / "landing")}},
            {"name": "lake", "format": "delta", "configure": {"base_path": str(job.root / "work")}},
        ],
        "dataflows": [dataflow(index) for index in range(job.dataflows)],
    }


def prepare_state(job: Job) -> None:
    """Targets and state as the job expects them: none at all, or the templates of an earlier run."""
    for folder in ("work", "state"):
        shutil.rmtree(job.root / folder, ignore_errors=True)
        if job.existing:
            shutil.copytree(job.root / "templates" / folder, job.root / folder)
    (job.root / "work").mkdir(exist_ok=True)


# --- the two implementations --------------------------------------------------------------------


def run_ours(job: Job) -> dict[str, float]:
    """The driver end to end; returns its phases (construct, run = load metadata + execute, close)."""
    from datacoolie_core.models.run_config import DataCoolieRunConfig
    from datacoolie_core.orchestration.driver import DataCoolieDriver

    started = time.perf_counter()
    driver = DataCoolieDriver(
        metadata_base_path=job.root / "meta" / "metadata.json",
        state_base_path=job.root / "state",
        config=DataCoolieRunConfig(max_workers=job.workers),
    )
    constructed = time.perf_counter()
    result = driver.run(stage=STAGE)
    ran = time.perf_counter()
    driver.close()
    if result.total != job.dataflows or result.succeeded != job.dataflows:
        failures = "; ".join(
            f"{r.dataflow_name}: {r.error_message}" for r in result.runtimes if r.status != "succeeded"
        )
        raise SystemExit(f"ours: {result.succeeded}/{job.dataflows} succeeded ({result.total} ran): {failures[:2000]}")
    phases = {"construct": constructed - started, "run": ran - constructed, "close": time.perf_counter() - ran}
    return phases | _mean_phases([r.phase_seconds for r in result.runtimes])


def run_plain(job: Job) -> dict[str, float]:
    import polars as pl
    from deltalake import write_deltalake

    system = system_columns(pl)

    def one(index: int) -> dict[str, float]:
        started = time.perf_counter()
        folder = job.root / "landing" / "sales" / table_name(index)
        frames = [_scan_with_lineage(pl, path) for path in sorted(folder.glob("*.parquet"))]
        frame = pl.concat(frames, how="diagonal_relaxed").with_columns(system).collect()
        read = time.perf_counter()
        # deltalake 1.x reads the Polars frame as an Arrow C stream: what a user writes, no pyarrow import
        write_deltalake(str(job.root / "work" / "bench" / table_name(index)), frame, mode="append")
        return {"read+transform": read - started, "write": time.perf_counter() - read}

    with ThreadPoolExecutor(max_workers=job.workers) as pool:
        return _mean_phases(list(pool.map(one, range(job.dataflows))))  # list() re-raises the first failure


def _mean_phases(per_dataflow: list[dict[str, float]]) -> dict[str, float]:
    """Mean in-thread seconds of each phase of one dataflow, keyed ``df:<phase>``."""
    names = dict.fromkeys(name for phases in per_dataflow for name in phases)
    return {f"df:{name}": statistics.fmean(p.get(name, 0.0) for p in per_dataflow) for name in names}


def _scan_with_lineage(pl: Any, path: Path) -> Any:
    mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return pl.scan_parquet(path).with_columns(
        pl.lit(path.name).alias("__file_name"),
        pl.lit(str(path)).alias("__file_path"),
        pl.lit(mtime).alias("__file_modification_time"),
    )


# --- harness ------------------------------------------------------------------------------------


def child(job: Job, impl: str, profile_to: Path | None) -> None:
    import deltalake  # noqa: F401  (both implementations import the same libraries before timing)
    import polars  # noqa: F401

    if impl == "ours":
        import datacoolie_core.orchestration.driver  # noqa: F401
    run = run_ours if impl == "ours" else run_plain
    started = time.perf_counter()
    phases = run(job) if profile_to is None else _profiled(run, job, profile_to)
    seconds = time.perf_counter() - started
    _check_tables(job)
    print(json.dumps({"seconds": seconds, "phases": phases}))


def _profiled(run: Any, job: Job, profile_to: Path) -> dict[str, float]:
    """``run(job)`` under cProfile in every thread, the merged stats dumped to ``profile_to``."""
    phases, stats = profile_all_threads(run, job)
    stats.dump_stats(str(profile_to))
    return phases


def _check_tables(job: Job) -> None:
    """After timing: every target table holds exactly the rows the job should have left in it."""
    import polars as pl

    wrong = [
        name
        for name in map(table_name, range(job.dataflows))
        if pl.scan_delta(str(job.root / "work" / "bench" / name)).select(pl.len()).collect().item() != job.expected_rows
    ]
    if wrong:
        raise SystemExit(f"{len(wrong)} target tables do not hold {job.expected_rows} rows: {wrong[:10]}")


def measure(job: Job, impl: str, *extra: str) -> Sample:
    prepare_state(job)
    return run_child([sys.executable, __file__, "--child", impl, *job.args(), *extra], environment())


def profile(job: Job, top: int) -> None:
    """Each implementation once more under an all-threads cProfile (fresh process): where the time goes."""
    import pstats

    for impl in IMPLS:
        stats_file = job.root / f"{impl}.prof"
        measure(job, impl, "--profile-to", str(stats_file))
        stats = pstats.Stats(str(stats_file))
        print(f"\n--- {impl} under cProfile (all threads), top {top} by own time ---")
        stats.sort_stats("tottime").print_stats(top)
        if impl == "ours":
            print(f"\n--- ours, top {top} datacoolie_core functions by cumulative time ---")
            stats.sort_stats("cumulative").print_stats("datacoolie_core", top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataflows", type=int, default=200)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2, help="max_workers of ours, pool size of plain")
    parser.add_argument("--existing", action="store_true", help="append to tables left by an earlier run")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/datacoolie-bench-many"))
    parser.add_argument("--profile", action="store_true", help="also profile each implementation once")
    parser.add_argument("--top", type=int, default=40, help="functions to list with --profile")
    parser.add_argument("--out", type=Path, default=None, help="write the raw measurements as JSON")
    parser.add_argument("--child", choices=IMPLS, help=argparse.SUPPRESS)
    parser.add_argument("--profile-to", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    job = Job(args.workdir.resolve(), args.dataflows, args.rows, args.workers, args.existing)
    if args.child:
        child(job, args.child, args.profile_to)
        return
    compile_sources()  # as installed: no per-process compile of our sources (harness.compile_sources)
    prepare_data(job)
    results: dict[str, list[Sample]] = {impl: [] for impl in IMPLS}
    for round_ in range(args.rounds):
        for impl in rotated(IMPLS, round_):
            results[impl].append(measure(job, impl))
    print(_report(results, job), flush=True)
    if args.out:
        args.out.write_text(json.dumps({i: [asdict(s) for s in samples] for i, samples in results.items()}, indent=2))
    if args.profile:
        profile(job, args.top)


def _report(results: dict[str, list[Sample]], job: Job) -> str:
    def per_dataflow_ms(impl: str) -> list[float]:
        return [s.seconds * 1000 / job.dataflows for s in results[impl]]

    ours_ms, plain_ms = (statistics.median(per_dataflow_ms(impl)) for impl in IMPLS)
    ratio = ratios(results["ours"], results["plain"], "seconds")

    def phases(impl: str) -> str:
        names = results[impl][0].reported["phases"]
        medians = {n: statistics.median(s.reported["phases"][n] for s in results[impl]) for n in names}
        return ", ".join(f"{n} {value * 1000:.1f}" for n, value in medians.items())

    tables = "existing" if job.existing else "new"
    rss = {impl: spread([s.peak_rss_mib for s in results[impl]], 0) for impl in IMPLS}
    return "\n".join(
        [
            "| dataflows | workers | tables | ours ms/dataflow | plain ms/dataflow | ratio | overhead ms/dataflow "
            "| ours peak MiB | plain peak MiB |",
            "|---|---|---|---|---|---|---|---|---|",
            f"| {job.dataflows} | {job.workers} | {tables} | {spread(per_dataflow_ms('ours'), 1)} "
            f"| {spread(per_dataflow_ms('plain'), 1)} | {spread(ratio)} | {ours_ms - plain_ms:.1f} "
            f"| {rss['ours']} | {rss['plain']} |",
            "(medians, min-max over rounds; the ratio is taken per round)",
            f"ours phases, median ms (whole job; df: = mean per dataflow, in its thread): {phases('ours')}",
            f"plain phases, median ms (df: = mean per dataflow, in its thread): {phases('plain')}",
            f"process CPU ratio (imports and the table check included; steadier on a loaded machine): "
            f"{spread(ratios(results['ours'], results['plain'], 'cpu'))}",
            f"ratio {statistics.median(ratio):.2f}: "
            f"{'within' if statistics.median(ratio) <= TARGET_RATIO else 'ABOVE'} the {TARGET_RATIO}x target",
        ]
    )


if __name__ == "__main__":
    main()
