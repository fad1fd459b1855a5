"""The benchmark data, the one metadata file every metadata-driven implementation runs, and job state.

Data: a seeded orders set (order_id, customer_id, status, amount, quantity, created_at, updated_at,
note), landed as 4 files per format; a Delta table of the same rows with the seven lineage and
system columns, as an earlier load of the landed files leaves it (the merge target and the
incremental source); a merge batch of changed keys (10 % of the rows) and
new ones (2 %): 120k into 1M; the stored watermark of the incremental read (the newest 10 % are
past it).
"""

from __future__ import annotations

import json
import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SCENARIOS = ("parquet_append", "jsonl_append", "csv_append", "merge_upsert", "incremental_read")
STATUSES = ("new", "paid", "shipped", "delivered", "returned")
BASE_TIME = datetime(2025, 1, 1, tzinfo=UTC)
KEY = "order_id"


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
    """Landing files in every format, a ``rows``-row Delta table, the merge batch and the watermark (untimed)."""
    import polars as pl
    from deltalake import write_deltalake

    frame = orders(rows)
    for fmt in ("parquet", "jsonl", "csv"):
        folder = landing_folder(root, fmt)
        folder.mkdir(parents=True, exist_ok=True)
        for index, part in enumerate(frame.iter_slices(rows // 4)):
            path = folder / f"part-{index:02d}.{fmt}"
            {"parquet": part.write_parquet, "jsonl": part.write_ndjson, "csv": part.write_csv}[fmt](path)
    with_system = frame.with_columns(  # an earlier load of the landed parquet files, as DataCoolie writes it
        pl.lit("part-00.parquet").alias("__file_name"),
        pl.lit(str(landing_folder(root, "parquet") / "part-00.parquet")).alias("__file_path"),
        pl.lit(BASE_TIME).alias("__file_modification_time"),
        pl.lit(BASE_TIME).alias("__created_at"),
        pl.lit(BASE_TIME).alias("__updated_at"),
        pl.lit("DataCoolie").alias("__updated_by"),
        pl.lit("seed").alias("__dataflow_run_id"),
    )
    write_deltalake(str(root / "templates" / "orders_delta"), with_system.to_arrow(), mode="overwrite")
    changed = orders(rows // 10, seed=7, minutes_offset=10_000).with_columns(pl.col(KEY) * 10)  # every 10th key
    new = orders(rows // 50, first_id=rows + 1, seed=8)
    merge_file(root).parent.mkdir(parents=True, exist_ok=True)
    pl.concat([changed, new]).write_parquet(merge_file(root))
    watermark = frame["updated_at"].quantile(0.9, "nearest")
    (root / "templates" / "watermark.json").write_text(json.dumps({"updated_at": watermark.isoformat()}))


def data_code() -> str:
    """A digest of this module, which makes the data: data made by other code is made again."""
    import hashlib

    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def landing_folder(root: Path, fmt: str) -> Path:
    return root / "landing" / "sales" / f"orders_{fmt}"


def merge_file(root: Path) -> Path:
    return root / "landing" / "sales" / "order_changes" / "changes.parquet"


def incremental_source(root: Path) -> Path:
    return root / "work" / "sales" / "orders"


def target(root: Path, scenario: str) -> Path:
    """Where every implementation writes the scenario's output table."""
    return root / "work" / "bench" / scenario


def stored_watermark(root: Path) -> datetime:
    return datetime.fromisoformat(json.loads((root / "templates" / "watermark.json").read_text())["updated_at"])


def metadata(root: Path) -> dict[str, Any]:
    """DataCoolie metadata: one dataflow per scenario, each in its own stage (``driver.run(stage=scenario)``)."""

    def dataflow(name: str, conn: str, table: str, load: str = "append", **extra: Any) -> dict[str, Any]:
        source = {"connection_name": conn, "schema_name": "sales", "table": table} | extra.pop("source", {})
        destination = {"connection_name": "lake", "schema_name": "bench", "table": name, "load_type": load}
        return {"name": name, "stage": name, "source": source, "destination": destination | extra}

    landing = str(root / "landing")
    return {
        "connections": [
            {"name": "landing_parquet", "format": "parquet", "configure": {"base_path": landing}},
            {"name": "landing_jsonl", "format": "jsonl", "configure": {"base_path": landing}},
            {"name": "landing_csv", "format": "csv",
             "configure": {"base_path": landing, "read_options": {"header": "true"}}},
            {"name": "bronze", "format": "delta", "configure": {"base_path": str(root / "work")}},
            {"name": "lake", "format": "delta", "configure": {"base_path": str(root / "work")}},
        ],
        "dataflows": [
            dataflow("parquet_append", "landing_parquet", "orders_parquet"),
            dataflow("jsonl_append", "landing_jsonl", "orders_jsonl"),
            dataflow("csv_append", "landing_csv", "orders_csv"),
            dataflow("merge_upsert", "landing_parquet", "order_changes", "merge_upsert", merge_keys=[KEY]),
            dataflow("incremental_read", "bronze", "orders", source={"watermark_columns": ["updated_at"]}),
        ],
    }  # fmt: skip


def prepare_state(root: Path, scenario: str) -> None:
    """Fresh targets and state for one measured job (untimed): the same starting point for every implementation."""
    for folder in ("work", "state"):
        shutil.rmtree(root / folder, ignore_errors=True)
    (root / "work").mkdir(parents=True)
    if scenario == "merge_upsert":
        shutil.copytree(root / "templates" / "orders_delta", target(root, scenario))
    if scenario == "incremental_read":
        shutil.copytree(root / "templates" / "orders_delta", incremental_source(root))
        _store_watermark(root, scenario)


def _store_watermark(root: Path, name: str) -> None:
    """The stored watermark in DataCoolie's file layout (contract W-02, W-09), which ours shares.

    ``<state>/watermarks/{stage}_{name}_{dataflow_id}/watermark_value.json``; the id is the
    dataflow name's uuid5 (M-03). Written as a file so that both drivers find it where they look.
    """
    from datacoolie_core.models.coerce import name_to_uuid

    folder = root / "state" / "watermarks" / f"{name}_{name}_{name_to_uuid(name)}"
    folder.mkdir(parents=True)
    value = {"updated_at": {"__datetime__": stored_watermark(root).isoformat()}}
    (folder / "watermark_value.json").write_text(json.dumps(value, sort_keys=True))
