"""Speed and memory of datacoolie_core against plain polars + deltalake doing the same job by hand.

    .venv/bin/python benchmarks/bench.py [--rows 1000000] [--rounds 5] [--workdir /tmp/dc-bench]

Every measured job runs in its own fresh Python process (so peak RSS is per job), with state
prepared beforehand and untimed. "Plain" adds the same columns as we do (file lineage and system
columns), so the ratio shows the engine's overhead, not extra features. Rounds alternate which
implementation goes first; the report gives medians and the ratio ours/plain.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from plain_columns import system_columns  # beside this script (its folder is on sys.path)

SCENARIOS = ("parquet_append", "jsonl_append", "csv_append", "merge_upsert", "incremental_read")
IMPLS = ("ours", "plain")
STATUSES = ("new", "paid", "shipped", "delivered", "returned")
BASE_TIME = datetime(2025, 1, 1, tzinfo=UTC)
MERGE_ROWS = 120_000
NEW_IN_MERGE = 20_000


# --- data ---------------------------------------------------------------------------------------


def orders(rows: int, *, first_id: int = 1, seed: int = 42, minutes_offset: int = 0) -> Any:
    """A seeded orders frame: ids, a status string, amount, quantity, created/updated timestamps, a note."""
    import polars as pl

    rng = random.Random(seed)
    created = [BASE_TIME + timedelta(minutes=rng.randrange(0, 525_600)) for _ in range(rows)]
    return pl.DataFrame(
        {
            "order_id": range(first_id, first_id + rows),
            "customer_id": [rng.randrange(1, 50_000) for _ in range(rows)],
            "status": [rng.choice(STATUSES) for _ in range(rows)],
            "amount": [round(rng.uniform(1, 2_000), 2) for _ in range(rows)],
            "quantity": [rng.randrange(1, 100) for _ in range(rows)],
            "created_at": created,
            "updated_at": [c + timedelta(minutes=rng.randrange(0, 4_000) + minutes_offset) for c in created],
            "note": [f"order note {rng.randrange(0, 1_000)}" for _ in range(rows)],
        },
        schema_overrides={"created_at": pl.Datetime("us", "UTC"), "updated_at": pl.Datetime("us", "UTC")},
    )


def prepare_data(root: Path, rows: int) -> None:
    """Landing files in every format, a 1M-row Delta table, and the merge batch (untimed)."""
    import polars as pl
    from deltalake import write_deltalake

    frame = orders(rows)
    shards = 4
    for fmt in ("parquet", "jsonl", "csv"):
        folder = root / "landing" / "sales" / f"orders_{fmt}"
        folder.mkdir(parents=True, exist_ok=True)
        for index, part in enumerate(frame.iter_slices(rows // shards)):
            path = folder / f"part-{index:02d}.{fmt}"
            {"parquet": part.write_parquet, "jsonl": part.write_ndjson, "csv": part.write_csv}[fmt](path)
    with_system = frame.with_columns(
        pl.lit(BASE_TIME).alias("__created_at"),
        pl.lit(BASE_TIME).alias("__updated_at"),
        pl.lit("DataCoolie").alias("__updated_by"),
        pl.lit("seed").alias("__dataflow_run_id"),
    )
    write_deltalake(str(root / "templates" / "orders_delta"), with_system.to_arrow(), mode="overwrite")
    changed = orders(MERGE_ROWS - NEW_IN_MERGE, seed=7, minutes_offset=10_000).with_columns(
        pl.col("order_id") * (rows // (MERGE_ROWS - NEW_IN_MERGE))
    )
    new = orders(NEW_IN_MERGE, first_id=rows + 1, seed=8)
    merge_folder = root / "landing" / "sales" / "order_changes"
    merge_folder.mkdir(parents=True, exist_ok=True)
    pl.concat([changed, new]).write_parquet(merge_folder / "changes.parquet")
    watermark = frame["updated_at"].quantile(0.9, "nearest")
    (root / "templates" / "watermark.json").write_text(json.dumps({"updated_at": watermark.isoformat()}))


def metadata(root: Path) -> dict[str, Any]:
    def dataflow(
        name: str, fmt_conn: str, table: str, target: str, load: str = "append", **extra: Any
    ) -> dict[str, Any]:
        source = {"connection_name": fmt_conn, "schema_name": "sales", "table": table} | extra.pop("source", {})
        destination = {"connection_name": "lake", "schema_name": "bench", "table": target, "load_type": load}
        return {"name": name, "stage": "bench", "source": source, "destination": destination | extra}

    return {
        "connections": [
            {"name": "landing_parquet", "format": "parquet", "configure": {"base_path": str(root / "landing")}},
            {"name": "landing_jsonl", "format": "jsonl", "configure": {"base_path": str(root / "landing")}},
            {"name": "landing_csv", "format": "csv",
             "configure": {"base_path": str(root / "landing"), "read_options": {"header": "true"}}},
            {"name": "bronze", "format": "delta", "configure": {"base_path": str(root / "work")}},
            {"name": "lake", "format": "delta", "configure": {"base_path": str(root / "work")}},
        ],
        "dataflows": [
            dataflow("parquet_append", "landing_parquet", "orders_parquet", "parquet_append"),
            dataflow("jsonl_append", "landing_jsonl", "orders_jsonl", "jsonl_append"),
            dataflow("csv_append", "landing_csv", "orders_csv", "csv_append"),
            dataflow("merge_upsert", "landing_parquet", "order_changes", "merge_upsert", "merge_upsert",
                     merge_keys=["order_id"]),
            dataflow("incremental_read", "bronze", "orders", "incremental_read",
                     source={"schema_name": "sales", "watermark_columns": ["updated_at"]}),
        ],
    }  # fmt: skip


def prepare_state(root: Path, scenario: str) -> None:
    """Fresh targets for one measured job (untimed)."""
    work = root / "work"
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(root / "meta" / "watermarks", ignore_errors=True)
    work.mkdir(parents=True)
    if scenario == "merge_upsert":
        shutil.copytree(root / "templates" / "orders_delta", work / "bench" / "merge_upsert")
    if scenario == "incremental_read":
        shutil.copytree(root / "templates" / "orders_delta", work / "sales" / "orders")


# --- the two implementations of each job -------------------------------------------------------


def run_ours(root: Path, scenario: str) -> None:
    from datacoolie_core import FileProvider, WatermarkManager
    from datacoolie_core.orchestration.dataflow_runner import DataflowRun, run_dataflow
    from datacoolie_core.orchestration.state_check import check_state
    from datacoolie_core.watermark import CommitJournal

    provider = FileProvider(root / "meta" / "metadata.json")
    (dataflow,) = [d for d in provider.get_dataflows() if d.name == scenario]
    watermarks = WatermarkManager(provider)
    if scenario == "incremental_read":
        stored = json.loads((root / "templates" / "watermark.json").read_text())
        watermarks.save_watermark(
            str(dataflow.dataflow_id), {"updated_at": datetime.fromisoformat(stored["updated_at"])}
        )
    journal = CommitJournal(provider, watermarks)
    state = check_state(dataflow, watermarks, journal)  # as the driver does: one log read numbers the write
    run = DataflowRun(watermarks=watermarks, journal=journal, baseline=state.watermark, state=state)
    result = run_dataflow(dataflow, run)
    if result.status != "succeeded":
        raise SystemExit(f"{scenario}: {result.status}: {result.error_message}")


def run_plain(root: Path, scenario: str) -> None:
    import polars as pl
    from deltalake import DeltaTable, write_deltalake

    system = system_columns(pl)
    target = root / "work" / "bench" / scenario
    if scenario.endswith("_append"):
        fmt = scenario.split("_")[0]
        files = sorted((root / "landing" / "sales" / f"orders_{fmt}").glob(f"*.{fmt}"))
        frame = pl.concat([_scan_with_lineage(pl, fmt, f) for f in files], how="diagonal_relaxed")
        write_deltalake(str(target), frame.with_columns(system).collect().to_arrow(), mode="append")
    elif scenario == "merge_upsert":
        source = _scan_with_lineage(pl, "parquet", root / "landing" / "sales" / "order_changes" / "changes.parquet")
        batch = source.with_columns(system).collect().unique("order_id", keep="last", maintain_order=True)
        columns = [c for c in batch.columns if c not in ("order_id", "__created_at")]
        (
            DeltaTable(str(target))
            .merge(batch.to_arrow(), predicate="t.order_id = s.order_id", source_alias="s", target_alias="t")
            .when_matched_update({c: f"s.{c}" for c in columns})
            .when_not_matched_insert_all()
            .execute()
        )
    else:  # incremental_read
        stored = datetime.fromisoformat(json.loads((root / "templates" / "watermark.json").read_text())["updated_at"])
        rows = pl.scan_delta(str(root / "work" / "sales" / "orders")).filter(pl.col("updated_at") > stored).collect()
        rows.select(pl.len(), pl.col("updated_at").max())  # what the engine computes for the new watermark
        write_deltalake(str(target), rows.with_columns(system).to_arrow(), mode="append")


def _scan_with_lineage(pl: Any, fmt: str, path: Path) -> Any:
    # CSV columns are text, as Spark (and so DataCoolie) reads a CSV without inferSchema or hints
    csv = lambda p: pl.scan_csv(p, infer_schema=False)  # noqa: E731
    scan = {"parquet": pl.scan_parquet, "jsonl": pl.scan_ndjson, "csv": csv}[fmt](path)
    mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return scan.with_columns(
        pl.lit(path.name).alias("__file_name"),
        pl.lit(str(path)).alias("__file_path"),
        pl.lit(mtime).alias("__file_modification_time"),
    )


# --- harness ------------------------------------------------------------------------------------


def child(root: Path, scenario: str, impl: str) -> None:
    import deltalake  # noqa: F401  (both implementations import the same libraries before timing)
    import polars  # noqa: F401

    if impl == "ours":
        import datacoolie_core.orchestration.dataflow_runner  # noqa: F401
    started = time.perf_counter()
    (run_ours if impl == "ours" else run_plain)(root, scenario)
    seconds = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "peak_rss_mib": peak_kib / 1024}))


def measure(root: Path, scenario: str, impl: str) -> dict[str, float]:
    prepare_state(root, scenario)
    done = subprocess.run(
        [sys.executable, __file__, "--child", scenario, impl, "--workdir", str(root)],
        capture_output=True, text=True, check=False, env=os.environ | {"POLARS_MAX_THREADS": os.environ.get("POLARS_MAX_THREADS", "2")},
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{scenario}/{impl} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/datacoolie-bench"))
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--out", type=Path, default=None, help="write the raw measurements as JSON")
    parser.add_argument("--child", nargs=2, metavar=("SCENARIO", "IMPL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    root = args.workdir.resolve()
    if args.child:
        child(root, *args.child)
        return
    if not (root / "templates").exists() or json.loads((root / "rows.json").read_text()) != args.rows:
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        prepare_data(root, args.rows)
        (root / "rows.json").write_text(json.dumps(args.rows))
    (root / "meta").mkdir(exist_ok=True)
    (root / "meta" / "metadata.json").write_text(json.dumps(metadata(root), indent=2))
    results: dict[str, dict[str, list[dict[str, float]]]] = {}
    for scenario in args.scenarios.split(","):
        results[scenario] = {impl: [] for impl in IMPLS}
        for round_ in range(args.rounds):
            for impl in IMPLS if round_ % 2 == 0 else tuple(reversed(IMPLS)):
                results[scenario][impl].append(measure(root, scenario, impl))
        print(_row(scenario, results[scenario]), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


def _row(scenario: str, runs: dict[str, list[dict[str, float]]]) -> str:
    ours_s = statistics.median(r["seconds"] for r in runs["ours"])
    plain_s = statistics.median(r["seconds"] for r in runs["plain"])
    ours_m = statistics.median(r["peak_rss_mib"] for r in runs["ours"])
    plain_m = statistics.median(r["peak_rss_mib"] for r in runs["plain"])
    return (
        f"| {scenario} | {ours_s:.2f} | {plain_s:.2f} | {ours_s / plain_s:.2f} | "
        f"{ours_m:.0f} | {plain_m:.0f} | {ours_m / plain_m:.2f} |"
    )


if __name__ == "__main__":
    main()
