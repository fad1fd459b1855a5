"""One measured job in a fresh process: ``python jobs.py IMPL SCENARIO ROOT`` (run by bench.py).

Prints ``{"imports": s, "seconds": s, "job_cpu": s}``: the time to import the libraries the
implementation needs, then the job itself (in-process time) and the CPU time of the job (all the
process's threads, ``time.process_time``), steadier than wall time on a shared machine. The parent measures the whole process (interpreter
start to exit), its CPU time and peak RSS. Only the standard library is imported at the top:
the ``datacoolie`` implementation runs in DataCoolie's own virtualenv, where our package is absent.

The four implementations of each job, all writing ``<root>/work/bench/<scenario>``:

- ``bare``: what a user writes by hand: ``scan -> sink_delta``; ``scan -> filter -> sink_delta``
  for the incremental read; a delta-rs MERGE for the upsert. No lineage or system columns.
- ``plain``: the bare job plus the same lineage and system columns we add, written by hand with
  polars + deltalake: per-file scans with the three lineage literals, the four system literals, one
  streamed ``sink_delta``; JSON lines typed over every line (``infer_schema_length=None``), as the
  contract types them (bare lets Polars look at the first 100 lines); for the incremental read the count and new watermark are aggregated
  before the write, as any job that keeps a watermark must; the merge passes ``merge_schema=True`` as
  ours does (a batch column the table lacks joins it: without it delta-rs drops it silently; the
  target, an earlier load of the landed files, already has all seven). The gap between bare and plain is the
  cost of the columns DataCoolie writes on every row; the gap between plain and ours is ours.
- ``ours``: ``datacoolie_core``'s driver on the metadata file, ``driver.run(stage=scenario)``.
- ``datacoolie``: DataCoolie 0.2.0's driver on the same metadata file, set up as its README's
  quick start does (``PolarsEngine(platform=LocalPlatform())``).
- ``dlt``: dlt 1.31's documented fastest Arrow path: the bare job's frames, as Arrow tables (one per
  landing file; JSON lines typed over every line, as ours and plain type them, so all three parse alike), handed to ``pipeline.run(..., table_format="delta")`` on the ``filesystem``
  destination (``write_disposition="append"``; ``merge`` with the ``upsert`` strategy on the key for
  merge_upsert). dlt's ``direct`` naming keeps the column names as they are. Its pipeline working
  folder lives in the job's state folder, so every run starts fresh, as the other jobs do.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dataset import KEY, incremental_source, landing_folder, merge_file, stored_watermark, target

LIBRARIES = ("polars", "deltalake")
IMPORTS = {
    "bare": LIBRARIES,
    "plain": LIBRARIES,
    "ours": (*LIBRARIES, "datacoolie_core.orchestration.driver"),
    "datacoolie": (
        *LIBRARIES,
        "datacoolie.engines.polars_engine",
        "datacoolie.platforms.local_platform",
        "datacoolie.orchestration.driver",
    ),
    "dlt": (*LIBRARIES, "dlt"),
}


def run_bare(root: Path, scenario: str) -> None:
    import polars as pl
    from deltalake import DeltaTable

    out = str(target(root, scenario))
    if scenario.endswith("_append"):
        fmt = scenario.split("_")[0]
        files = sorted(landing_folder(root, fmt).glob(f"*.{fmt}"))
        # CSV columns as text: what the metadata asks for (a header, no inferSchema, as Spark reads it)
        scanners: dict[str, Callable[[Any], pl.LazyFrame]] = {
            "parquet": pl.scan_parquet,
            "jsonl": pl.scan_ndjson,
            "csv": _scan_csv_text,
        }
        scanners[fmt](files).sink_delta(out, mode="append")
    elif scenario == "merge_upsert":
        (
            DeltaTable(out)
            .merge(
                pl.read_parquet(merge_file(root)), predicate=f"t.{KEY} = s.{KEY}", source_alias="s", target_alias="t"
            )
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
    else:  # incremental_read
        scan = pl.scan_delta(str(incremental_source(root)))
        scan.filter(pl.col("updated_at") > stored_watermark(root)).sink_delta(out, mode="append")


def run_plain(root: Path, scenario: str) -> None:
    import polars as pl
    from deltalake import DeltaTable
    from plain_columns import system_columns

    system = system_columns(pl)
    out = str(target(root, scenario))
    if scenario.endswith("_append"):
        fmt = scenario.split("_")[0]
        files = sorted(landing_folder(root, fmt).glob(f"*.{fmt}"))
        frame = pl.concat([_scan_with_lineage(pl, fmt, f) for f in files], how="diagonal_relaxed")
        frame.with_columns(system).sink_delta(out, mode="append")
    elif scenario == "merge_upsert":
        source = _scan_with_lineage(pl, "parquet", merge_file(root))
        batch = source.with_columns(system).collect().unique(KEY, keep="last", maintain_order=True)
        columns = [c for c in batch.columns if c not in (KEY, "__created_at")]
        (
            DeltaTable(out)
            .merge(  # merge_schema: a column the table lacks is added, as ours adds it
                batch.to_arrow(), predicate=f"t.{KEY} = s.{KEY}", source_alias="s", target_alias="t", merge_schema=True
            )
            .when_matched_update({c: f"s.{c}" for c in columns})
            .when_not_matched_insert_all()
            .execute()
        )
    else:  # incremental_read
        scan = pl.scan_delta(str(incremental_source(root)))
        rows = scan.filter(pl.col("updated_at") > stored_watermark(root))
        rows.select(pl.len(), pl.col("updated_at").max()).collect()  # the count and the new watermark
        rows.with_columns(system).sink_delta(out, mode="append")


def run_ours(root: Path, scenario: str) -> None:
    from datacoolie_core.orchestration.driver import DataCoolieDriver

    with DataCoolieDriver(metadata_base_path=root / "meta", state_base_path=root / "state") as driver:
        _succeeded(driver.run(stage=scenario), scenario)


def run_datacoolie(root: Path, scenario: str) -> None:
    from datacoolie.engines.polars_engine import PolarsEngine
    from datacoolie.orchestration.driver import DataCoolieDriver
    from datacoolie.platforms.local_platform import LocalPlatform

    engine = PolarsEngine(platform=LocalPlatform())
    meta, state = str(root / "meta"), str(root / "state")
    with DataCoolieDriver(engine=engine, metadata_base_path=meta, state_base_path=state) as driver:
        _succeeded(driver.run(stage=scenario), scenario)


def run_dlt(root: Path, scenario: str) -> None:
    import os

    os.environ["SCHEMA__NAMING"] = "direct"  # dlt's config: keep column names (``__created_at``) as they are
    import dlt
    import polars as pl

    out = target(root, scenario)
    pipeline = dlt.pipeline(
        pipeline_name=f"bench_{scenario}",
        pipelines_dir=str(root / "state" / "dlt"),
        destination=dlt.destinations.filesystem(bucket_url=str(out.parent.parent)),
        dataset_name=out.parent.name,
    )
    disposition: Any = "append"
    hints: dict[str, Any] = {}
    if scenario.endswith("_append"):
        fmt = scenario.split("_")[0]
        files = sorted(landing_folder(root, fmt).glob(f"*.{fmt}"))
        scanners = {"parquet": pl.scan_parquet, "jsonl": _scan_every_line, "csv": _scan_csv_text}
        data: Any = (scanners[fmt](path).collect().to_arrow() for path in files)
    elif scenario == "merge_upsert":
        data = pl.read_parquet(merge_file(root)).to_arrow()
        disposition, hints = {"disposition": "merge", "strategy": "upsert"}, {"primary_key": KEY}
    else:  # incremental_read
        scan = pl.scan_delta(str(incremental_source(root)))
        data = scan.filter(pl.col("updated_at") > stored_watermark(root)).collect().to_arrow()
    resource = dlt.resource(data, name=out.name, table_format="delta", write_disposition=disposition, **hints)
    info = pipeline.run(resource)
    info.raise_on_failed_jobs()


RUNNERS = {"bare": run_bare, "plain": run_plain, "ours": run_ours, "datacoolie": run_datacoolie, "dlt": run_dlt}


def _succeeded(result: Any, scenario: str) -> None:
    if (result.total, result.succeeded) != (1, 1):
        raise SystemExit(f"{scenario}: {result.succeeded}/{result.total} dataflows succeeded: {result}")


def _scan_csv_text(files: Any) -> Any:
    import polars as pl

    return pl.scan_csv(files, infer_schema=False)


def _scan_every_line(path: Any) -> Any:
    import polars as pl

    return pl.scan_ndjson(path, infer_schema_length=None)  # typed over every line, as Spark (and ours) types them


def _scan_with_lineage(pl: Any, fmt: str, path: Path) -> Any:
    scan = {"parquet": pl.scan_parquet, "jsonl": _scan_every_line, "csv": _scan_csv_text}[fmt](path)
    mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return scan.with_columns(
        pl.lit(path.name).alias("__file_name"),
        pl.lit(str(path)).alias("__file_path"),
        pl.lit(mtime).alias("__file_modification_time"),
    )


def prepare_dlt(root: Path, scenario: str) -> None:
    """Untimed: mark the merge target's folder as a dataset dlt created (its ``init`` file).

    dlt's filesystem destination creates its dataset folder on first load and fails when the
    folder exists without that marker; the merge target was copied there as the job's start.
    """
    dataset = target(root, scenario).parent
    if dataset.is_dir() and not (dataset / "init").exists():
        (dataset / "init").write_text(json.dumps({"initial_version": 2, "current_version": 2}))


def main() -> None:
    impl, scenario, root = sys.argv[1:4]
    if impl == "dlt":
        prepare_dlt(Path(root), scenario)
    started = time.perf_counter()
    for module in IMPORTS[impl]:
        importlib.import_module(module)
    imported = time.perf_counter()
    cpu = time.process_time()
    RUNNERS[impl](Path(root), scenario)
    seconds, cpu = time.perf_counter() - imported, time.process_time() - cpu  # all the process's threads
    print(json.dumps({"imports": imported - started, "seconds": seconds, "job_cpu": cpu}))


if __name__ == "__main__":
    main()
