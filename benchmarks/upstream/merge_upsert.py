"""Minimal reproduction: delta-rs's MERGE against the same upsert done by hand.

A target Delta table of ``--rows`` rows (8 business columns and 4 audit columns, one key) is
upserted with a source of ``rows / 10`` changed keys (every 10th key, spread over every file) and
``rows / 50`` new keys: ``when_matched_update_all().when_not_matched_insert_all()``. The same
result is then produced by hand -- read the target with Polars, drop the matched rows
(anti-join), append the source, ``write_deltalake(mode="overwrite")`` -- which rewrites every row,
as the MERGE does here (every file holds a matched key). Both results are checked equal (same
rows, same values, sorted by key).

Variants: the MERGE's documented knobs in deltalake 1.6.6 (``streamed_exec``, ``writer_properties``,
a key-range hint in the predicate) and ``merge_schema=True`` with a source that carries three
columns the target lacks (the same done by hand: a diagonal concat and ``schema_mode="overwrite"``).

Self-contained: stdlib + polars + deltalake + pyarrow; the data is generated in a temporary
directory that is removed at the end. Each variant runs on a fresh copy of the target, ``--rounds``
times, interleaved and rotated; the median CPU (``time.process_time``, all threads of this process)
and wall time are printed, with the MERGE's own metrics. ``--peak-rss`` runs the default MERGE and
the by-hand upsert each in a fresh process instead, for their peak memory (Linux: ``VmHWM``).

    python benchmarks/upstream/merge_upsert.py --rows 500000 --rounds 3
    python benchmarks/upstream/merge_upsert.py --rows 1000000 --files 1 --rounds 3 --peak-rss
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
from deltalake import ColumnProperties, DeltaTable, WriterProperties, write_deltalake

KEY = "order_id"
LINEAGE = ("__file_path", "__file_name", "__file_modification_time")


def orders(first_id: int, rows: int, step: int, minutes: int) -> pl.DataFrame:
    """Eight business columns and four audit columns; ``order_id`` = first_id, first_id + step, ..."""
    index = pl.int_range(0, rows, dtype=pl.Int64, eager=False)
    base = datetime(2025, 1, 1, tzinfo=UTC)
    stamp = datetime(2026, 12, 6, 12, minutes % 60, tzinfo=UTC)
    return pl.select(
        order_id=first_id + index * step,
        customer_id=(index * 7_919 + minutes) % 50_000,
        status=pl.lit(pl.Series(["new", "paid", "shipped", "delivered", "returned"])).gather((index + minutes) % 5),
        amount=((index * 37 + minutes) % 200_000) / 100.0,
        quantity=(index * 13 + minutes) % 99 + 1,
        created_at=pl.lit(base) + pl.duration(minutes=(index * 104_729) % 525_600),
        updated_at=pl.lit(base) + pl.duration(minutes=(index * 104_729) % 525_600 + minutes),
        note=pl.format("order note {}", (index * 31 + minutes) % 1_000),
        __created_at=pl.lit(stamp),
        __updated_at=pl.lit(stamp),
        __updated_by=pl.lit("etl-service"),
        __dataflow_run_id=pl.lit(f"run-{minutes}"),
    )


def source_batch(rows: int, *, lineage: bool) -> pl.DataFrame:
    """``rows / 10`` changed keys (every 10th) and ``rows / 50`` new ones; optionally 3 more columns."""
    changed = orders(10, rows // 10, 10, minutes=7)
    new = orders(rows + 1, rows // 50, 1, minutes=8)
    batch = pl.concat([changed, new])
    if lineage:
        batch = batch.with_columns(
            pl.lit("s3://landing/sales/order_changes/changes.parquet").alias("__file_path"),
            pl.lit("changes.parquet").alias("__file_name"),
            pl.lit(datetime(2026, 12, 6, 11, 58, tzinfo=UTC)).alias("__file_modification_time"),
        )
    return batch


def merge(
    target: Path,
    source: pl.DataFrame,
    *,
    predicate: str = f"t.{KEY} = s.{KEY}",
    **options: Any,
) -> dict[str, Any]:
    """The upsert as one delta-rs MERGE: update every column of a matched row, insert the rest."""
    return (
        DeltaTable(str(target))
        .merge(source, predicate=predicate, source_alias="s", target_alias="t", **options)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )


def by_hand(target: Path, source: pl.DataFrame, *, new_columns: bool = False) -> dict[str, Any]:
    """The same upsert as read, anti-join, concat and one overwrite of the whole table."""
    kept = pl.read_delta(str(target)).join(source.select(KEY), on=KEY, how="anti")
    result = pl.concat([kept, source], how="diagonal" if new_columns else "vertical")
    write_deltalake(str(target), result, mode="overwrite", schema_mode="overwrite" if new_columns else None)
    return {}


def variants(rows: int) -> dict[str, Callable[[Path], dict[str, Any]]]:
    source = source_batch(rows, lineage=False)
    widened = source_batch(rows, lineage=True)
    low, high = int(source[KEY].min()), int(source[KEY].max())  # type: ignore[arg-type]
    hint = f"t.{KEY} = s.{KEY} AND t.{KEY} >= {low} AND t.{KEY} <= {high}"
    no_stats = WriterProperties(
        compression="SNAPPY", default_column_properties=ColumnProperties(statistics_enabled="NONE")
    )
    return {
        "merge (defaults: streamed_exec=True)": lambda t: merge(t, source),
        "merge streamed_exec=False": lambda t: merge(t, source, streamed_exec=False),
        "merge, source as pyarrow.Table": lambda t: merge(t, source.to_arrow()),
        "merge, key-range hint in predicate": lambda t: merge(t, source, predicate=hint),
        "merge, writer: no statistics": lambda t: merge(t, source, writer_properties=no_stats),
        "by hand: read, anti-join, overwrite": lambda t: by_hand(t, source),
        "merge_schema=True, +3 columns": lambda t: merge(t, widened, merge_schema=True),
        "by hand, +3 columns": lambda t: by_hand(t, widened, new_columns=True),
    }


def table_rows(target: Path) -> pl.DataFrame:
    frame = pl.read_delta(str(target))
    return frame.select(sorted(frame.columns)).sort(KEY)


def check_equal(root: Path, template: Path, table: dict[str, Callable[[Path], dict[str, Any]]]) -> None:
    """Untimed: each MERGE and its by-hand counterpart leave the same rows and values."""
    for merged, manual in (
        ("merge (defaults: streamed_exec=True)", "by hand: read, anti-join, overwrite"),
        ("merge_schema=True, +3 columns", "by hand, +3 columns"),
    ):
        results = []
        for name in (merged, manual):
            target = root / f"t{len(list(root.glob('t*')))}" if root.exists() else root / "t0"
            shutil.copytree(template, target)
            table[name](target)
            results.append(table_rows(target))
        assert results[0].equals(results[1]), f"{merged} and {manual} differ"
        print(f"checked: '{merged}' and '{manual}' leave equal tables ({results[0].height} rows)")


ISOLATED = ("merge (defaults: streamed_exec=True)", "by hand: read, anti-join, overwrite")


def high_water_kib() -> int:
    """This process's peak RSS (Linux ``VmHWM``; ``ru_maxrss`` would carry the parent's peak across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status: --peak-rss needs Linux")


def run_child(name: str, target: Path, rows: int) -> None:
    """One variant in this fresh process: its CPU and the process's peak RSS before and after it."""
    table = variants(rows)
    before = high_water_kib()
    started = time.process_time()
    table[name](target)
    spent = time.process_time() - started
    print(json.dumps({"cpu": spent, "before": before, "peak": high_water_kib()}))


def peak_rss(root: Path, template: Path, rows: int, rounds: int) -> None:
    """The default MERGE and the by-hand upsert, each in a fresh process, alternated; peak RSS in MiB."""
    seen: dict[str, list[dict[str, float]]] = {name: [] for name in ISOLATED}
    for round_index in range(rounds):
        for name in ISOLATED[round_index % 2 :] + ISOLATED[: round_index % 2]:
            target = root / "target"
            shutil.copytree(template, target)
            command = [sys.executable, __file__, "--child", name, "--target", str(target), "--rows", str(rows)]
            done = subprocess.run(command, check=True, capture_output=True, text=True)
            seen[name].append(json.loads(done.stdout.splitlines()[-1]))
            shutil.rmtree(target)
    print(f"target rows={rows}, one process per variant, rounds={rounds}, load={os.getloadavg()[0]:.2f}")
    for name, runs in seen.items():
        cpu = statistics.median(run["cpu"] for run in runs)
        before = statistics.median(run["before"] / 1024 for run in runs)
        peaks = [run["peak"] / 1024 for run in runs]
        print(
            f"{name:40} CPU {cpu:.3f} s, peak RSS {statistics.median(peaks):.0f} MiB"
            f" ({min(peaks):.0f}-{max(peaks):.0f}; {before:.0f} before the upsert)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=4, help="files of the target table (one append each)")
    parser.add_argument(
        "--peak-rss",
        action="store_true",
        help="instead: the default MERGE and the by-hand upsert, each in a fresh process",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(args.child, Path(args.target), args.rows)
        return

    root = Path(tempfile.mkdtemp(prefix="merge-upsert-"))
    try:
        template = root / "template"
        target_frame = orders(1, args.rows, 1, minutes=0)
        # several files, as a table grown by appends has
        for part in target_frame.iter_slices(-(-args.rows // args.files)):
            write_deltalake(str(template), part, mode="append")
        if args.peak_rss:
            peak_rss(root, template, args.rows, args.rounds)
            return
        table = variants(args.rows)
        check_equal(root / "check", template, table)
        names = list(table)
        cpu: dict[str, list[float]] = {name: [] for name in names}
        wall: dict[str, list[float]] = {name: [] for name in names}
        metrics: dict[str, dict[str, Any]] = {}
        for round_index in range(args.rounds):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                target = root / "target"
                shutil.copytree(template, target)
                started_cpu, started_wall = time.process_time(), time.perf_counter()
                metrics[name] = table[name](target)
                cpu[name].append(time.process_time() - started_cpu)
                wall[name].append(time.perf_counter() - started_wall)
                shutil.rmtree(target)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    import deltalake

    print(
        f"target rows={args.rows} in {args.files} files, source rows={args.rows // 10 + args.rows // 50},"
        f" rounds={args.rounds}"
    )
    print(f"load={os.getloadavg()[0]:.2f} (1-min, at the end)")
    print(f"polars {pl.__version__}, pyarrow {pa.__version__}, deltalake {deltalake.__version__}")
    print(f"{'variant':40} {'CPU s':>7} {'wall s':>7}  CPU / by hand (min-max)")
    for name in names:
        baseline = "by hand, +3 columns" if "+3" in name else "by hand: read, anti-join, overwrite"
        ratio = [c / b for c, b in zip(cpu[name], cpu[baseline], strict=True)]
        print(
            f"{name:40} {statistics.median(cpu[name]):7.3f} {statistics.median(wall[name]):7.3f}"
            f"  {statistics.median(ratio):.2f} ({min(ratio):.2f}-{max(ratio):.2f})"
        )
    shown = [
        *("num_target_files_scanned", "num_target_files_skipped_during_scan", "num_target_rows_copied"),
        *("num_target_rows_updated", "num_output_rows", "execution_time_ms", "scan_time_ms", "rewrite_time_ms"),
    ]
    print("\nthe MERGE's own metrics (last round):")
    for name in names:
        if metrics[name]:
            print(f"  {name}: " + ", ".join(f"{k}={metrics[name].get(k)}" for k in shown))


if __name__ == "__main__":
    main()
