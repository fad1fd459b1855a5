"""Minimal reproduction: constant columns cost delta-rs's parquet writer far more than the data they hold.

A narrow 8-column frame is written with ``deltalake.write_deltalake``, alone and with seven more
columns that hold one value each over the whole frame (two timestamps, five strings: the kind of
lineage and audit columns an ETL tool stamps on every row). The same two tables are written with
``pyarrow.parquet.write_table`` (dictionary and statistics on and off) and with Polars'
``write_parquet``, to separate what encoding constant columns costs a parquet writer from what the
delta-rs writer spends on them. Then the delta-rs writer settings that could matter
(``WriterProperties`` and per-column ``ColumnProperties``) are tried on the seven columns. Last,
the seven columns are written alone (as Arrow ``string``, as Arrow dictionary arrays, one row), where
their cost is the whole write and the noise of a shared machine matters least.

Self-contained: stdlib + polars + deltalake + pyarrow; the data is generated; every file goes to a
temporary directory that is removed at the end. Each variant runs ``--rounds`` times, the variants
interleaved in every round (order rotated), and the median is printed: CPU (``time.process_time``,
all threads of this process) and wall time, and the written bytes.

    python benchmarks/upstream/constant_columns.py --rows 500000 --rounds 7
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import ColumnProperties, WriterProperties, write_deltalake

CONSTANT_COLUMNS = (
    "__created_at",
    "__updated_at",
    "__updated_by",
    "__dataflow_run_id",
    "__file_path",
    "__file_name",
    "__file_modification_time",
)


def business_frame(rows: int) -> pl.DataFrame:
    """Eight ordinary columns (ids, a low-cardinality string, numbers, two timestamps, a note)."""
    index = pl.int_range(0, rows, dtype=pl.Int64, eager=False)
    base = datetime(2025, 1, 1, tzinfo=UTC)
    return pl.select(
        order_id=index + 1,
        customer_id=(index * 7_919) % 50_000,
        status=pl.lit(pl.Series(["new", "paid", "shipped", "delivered", "returned"])).gather(index % 5),
        amount=((index * 37) % 200_000) / 100.0,
        quantity=(index * 13) % 99 + 1,
        created_at=pl.lit(base) + pl.duration(minutes=(index * 104_729) % 525_600),
        updated_at=pl.lit(base) + pl.duration(minutes=(index * 104_729) % 525_600 + 60),
        note=pl.format("order note {}", (index * 31) % 1_000),
    )


def with_constants(frame: pl.DataFrame) -> pl.DataFrame:
    """The same rows plus seven columns, each holding one value on every row."""
    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    return frame.with_columns(
        pl.lit(now).alias("__created_at"),
        pl.lit(now).alias("__updated_at"),
        pl.lit("etl-service").alias("__updated_by"),
        pl.lit("0d6f4c1e-2b1a-4f7e-9a53-8c1de0f2a771").alias("__dataflow_run_id"),
        pl.lit("s3://landing/sales/orders/2026/12/06/part-00000-orders.parquet").alias("__file_path"),
        pl.lit("part-00000-orders.parquet").alias("__file_name"),
        pl.lit(datetime(2026, 12, 6, 11, 58, tzinfo=UTC)).alias("__file_modification_time"),
    )


def timed(action: Callable[[], None]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    action()
    return time.process_time() - cpu, time.perf_counter() - wall


def folder_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*.parquet"))


def snappy(**writer: Any) -> WriterProperties:
    """``WriterProperties`` with SNAPPY named: ``write_deltalake``'s default, which any properties object
    without ``compression`` replaces by UNCOMPRESSED (files ~40 % larger)."""
    return WriterProperties(compression="SNAPPY", **writer)


def per_column(props: ColumnProperties) -> WriterProperties:
    """Writer properties that apply ``props`` to the seven constant columns only."""
    return snappy(column_properties=dict.fromkeys(CONSTANT_COLUMNS, props))


def variants(narrow: pl.DataFrame, wide: pl.DataFrame) -> dict[str, Callable[[Path], None]]:
    """Each variant writes one table to ``target``; the names say what is written how."""
    narrow_arrow, wide_arrow = narrow.to_arrow(), wide.to_arrow()
    # the same tables with plain `string` instead of Polars' `string_view`
    wide_utf8 = wide_arrow.cast(
        pa.schema([pa.field(f.name, pa.string() if f.type == pa.string_view() else f.type) for f in wide_arrow.schema])
    )
    narrow_utf8 = narrow_arrow.cast(
        pa.schema(
            [pa.field(f.name, pa.string() if f.type == pa.string_view() else f.type) for f in narrow_arrow.schema]
        )
    )

    # (d) the seven columns alone: as Arrow `string`, as Arrow dictionary arrays, and one row (the floor)
    alone = wide_utf8.select(list(CONSTANT_COLUMNS))
    alone_dict = pa.table({name: alone[name].dictionary_encode() for name in alone.column_names})
    no_stats = snappy(default_column_properties=ColumnProperties(statistics_enabled="NONE"))

    def delta(data: Any, **kwargs: Any) -> Callable[[Path], None]:
        return lambda target: write_deltalake(str(target), data, mode="overwrite", **kwargs)

    def arrow_parquet(data: pa.Table, **kwargs: Any) -> Callable[[Path], None]:
        return lambda target: pq.write_table(data, str(target) + ".parquet", **kwargs)

    return {
        # (a) delta-rs, as an ETL job writes today
        "delta  8 cols": delta(narrow),
        "delta 15 cols": delta(wide),
        "delta 8 + 3 timestamps": delta(wide.drop([c for c in CONSTANT_COLUMNS if wide[c].dtype == pl.String])),
        "delta 8 + 4 strings": delta(wide.drop([c for c in CONSTANT_COLUMNS if wide[c].dtype != pl.String])),
        "delta  8 cols, pa.string": delta(narrow_utf8),
        "delta 15 cols, pa.string": delta(wide_utf8),
        # (c) delta-rs settings on the seven columns (15 columns written)
        "delta 15, 7: stats NONE": delta(
            wide, writer_properties=per_column(ColumnProperties(statistics_enabled="NONE"))
        ),
        "delta 15, 7: stats CHUNK": delta(
            wide, writer_properties=per_column(ColumnProperties(statistics_enabled="CHUNK"))
        ),
        "delta 15, 7: no dict": delta(wide, writer_properties=per_column(ColumnProperties(dictionary_enabled=False))),
        "delta 15, 7: no dict, no stats": delta(
            wide, writer_properties=per_column(ColumnProperties(dictionary_enabled=False, statistics_enabled="NONE"))
        ),
        "delta 15, all: stats NONE": delta(
            wide, writer_properties=snappy(default_column_properties=ColumnProperties(statistics_enabled="NONE"))
        ),
        "delta 15, write_batch_size 65536": delta(wide, writer_properties=snappy(write_batch_size=65_536)),
        "delta 15, data_page_size 8 MiB": delta(wide, writer_properties=snappy(data_page_size_limit=8 << 20)),
        "delta 15, WriterProperties()": delta(wide, writer_properties=WriterProperties()),
        "delta 15, UNCOMPRESSED": delta(wide, writer_properties=WriterProperties(compression="UNCOMPRESSED")),
        "delta  8, UNCOMPRESSED": delta(narrow, writer_properties=WriterProperties(compression="UNCOMPRESSED")),
        # the Delta log's statistics of the 8 columns only (the parquet statistics are still taken)
        "delta 15, log stats 8 cols": delta(wide, configuration={"delta.dataSkippingNumIndexedCols": "8"}),
        # (b) the parquet encoders alone, no Delta log
        "pyarrow  8 cols": arrow_parquet(narrow_utf8),
        "pyarrow 15 cols": arrow_parquet(wide_utf8),
        "pyarrow 15, 7: no dict": arrow_parquet(
            wide_utf8, use_dictionary=[c for c in wide_utf8.column_names if c not in CONSTANT_COLUMNS]
        ),
        "pyarrow 15, 7: no stats": arrow_parquet(
            wide_utf8, write_statistics=[c for c in wide_utf8.column_names if c not in CONSTANT_COLUMNS]
        ),
        "polars  8 cols": lambda target: narrow.write_parquet(str(target) + ".parquet"),
        "polars 15 cols": lambda target: wide.write_parquet(str(target) + ".parquet"),
        "alone: delta": delta(alone),
        "alone: delta, stats NONE": delta(alone, writer_properties=no_stats),
        "alone: delta, Arrow dictionary": delta(alone_dict),
        "alone: delta, dictionary, stats NONE": delta(alone_dict, writer_properties=no_stats),
        "alone: delta, 1 row": delta(alone.slice(0, 1)),
        "alone: pyarrow": arrow_parquet(alone),
        "alone: pyarrow, no stats": arrow_parquet(alone, write_statistics=False),
        "alone: pyarrow, Arrow dictionary": arrow_parquet(alone_dict),
        "alone: pyarrow, dictionary, no stats": arrow_parquet(alone_dict, write_statistics=False),
        "alone: polars": lambda target: wide.select(CONSTANT_COLUMNS).write_parquet(str(target) + ".parquet"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    narrow = business_frame(args.rows)
    wide = with_constants(narrow)
    table = variants(narrow, wide)
    names = list(table)
    cpu: dict[str, list[float]] = {name: [] for name in names}
    wall: dict[str, list[float]] = {name: [] for name in names}
    size: dict[str, int] = {}
    root = Path(tempfile.mkdtemp(prefix="constant-columns-"))
    try:
        for name in names:  # warm-up, untimed: first-call costs of each library
            table[name](root / "warm")
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir()
        for round_index in range(args.rounds):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                target = root / "t"
                spent = timed(functools.partial(table[name], target))
                cpu[name].append(spent[0])
                wall[name].append(spent[1])
                size[name] = folder_bytes(target if target.exists() else Path(str(target) + ".parquet"))
                shutil.rmtree(root)
                root.mkdir()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print(f"rows={args.rows} rounds={args.rounds} load={os.getloadavg()[0]:.2f} (1-min, at the end)")
    print(f"polars {pl.__version__}, pyarrow {pa.__version__}, deltalake {_deltalake_version()}")
    print(f"{'variant':36} {'CPU s':>7} {'wall s':>7} {'MiB':>6}")
    for name in names:
        print(
            f"{name:36} {statistics.median(cpu[name]):7.3f} {statistics.median(wall[name]):7.3f}"
            f" {size[name] / 2**20:6.2f}"
        )
    pairs = [
        ("delta 15 cols", "delta  8 cols"),
        ("delta 8 + 3 timestamps", "delta  8 cols"),
        ("delta 8 + 4 strings", "delta  8 cols"),
        ("delta 15 cols, pa.string", "delta  8 cols, pa.string"),
        ("delta 15, UNCOMPRESSED", "delta  8, UNCOMPRESSED"),
        ("pyarrow 15 cols", "pyarrow  8 cols"),
        ("polars 15 cols", "polars  8 cols"),
    ]
    print("\nthe seven constant columns, median of per-round CPU differences and ratios:")
    for wide_name, narrow_name in pairs:
        extra = [w - n for w, n in zip(cpu[wide_name], cpu[narrow_name], strict=True)]
        ratio = [w / n for w, n in zip(cpu[wide_name], cpu[narrow_name], strict=True)]
        print(
            f"  {wide_name:28} - {narrow_name:26} +{statistics.median(extra):.3f} s CPU,"
            f" x{statistics.median(ratio):.2f} ({min(ratio):.2f}-{max(ratio):.2f})"
        )
    _settings_summary(cpu)


def _settings_summary(cpu: dict[str, list[float]]) -> None:
    """Each delta-rs setting against the default write of the same 15 columns, per round."""
    print("\ndelta-rs settings, median of per-round CPU differences to 'delta 15 cols' (min-max):")
    for name, spent in cpu.items():
        if name.startswith("delta 15,"):
            extra = [s - d for s, d in zip(spent, cpu["delta 15 cols"], strict=True)]
            print(f"  {name:36} {statistics.median(extra):+.3f} s ({min(extra):+.3f} to {max(extra):+.3f})")


def _deltalake_version() -> str:
    import deltalake

    return str(deltalake.__version__)


if __name__ == "__main__":
    main()
