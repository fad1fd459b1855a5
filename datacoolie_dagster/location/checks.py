"""Asset checks derived from the metadata, evaluated right after each load.

- ``unique_merge_keys`` (merge_upsert / merge_overwrite / scd2 current rows), blocking: the declared
  ``merge_keys`` are unique in the table, so downstream never double counts. Declared, not the keys
  the writer merges on (extended with the partition columns): a key whose partition value changed
  has a row in each partition, and the check names them.
- ``load_consistent``, blocking: the load wrote at most the rows it read, and the stored watermark
  is not behind the one the load started from. (One check for both keeps a 3,000-table code location
  fast to load: every check spec costs load time.)
- ``watermark_lag`` (tables with ``freshness.max_watermark_lag``), not blocking: the newest stored
  watermark is at most that old. The data can be old although the run was recent (a source that
  stopped delivering): Dagster's freshness policy judges the run, this check judges the data.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import dagster as dg

from datacoolie_core.api import (
    DataFlowRuntimeInfo,
    Destination,
    WatermarkError,
    delta_storage_options,
    is_object_store,
    merge_watermarks,
    table_uri,
)
from datacoolie_core.columns import IS_CURRENT
from datacoolie_dagster.constants import MAX_WATERMARK_LAG
from datacoolie_dagster.location.freshness import format_duration, watermark_ages

if TYPE_CHECKING:
    import polars as pl

    from datacoolie_dagster.location.assets import TableAsset

UNIQUE_KEYS = "unique_merge_keys"
LOAD_CONSISTENT = "load_consistent"
WATERMARK_LAG = "watermark_lag"
MERGE_LOADS = ("merge_upsert", "merge_overwrite", "scd2")


def check_specs(asset: TableAsset) -> list[dg.AssetCheckSpec]:
    key = asset.spec.key
    specs = [
        dg.AssetCheckSpec(
            LOAD_CONSISTENT,
            asset=key,
            blocking=True,
            description="The load wrote at most the rows it read; the stored watermark did not move back.",
        )
    ]
    destination = asset.table.first.destination
    if destination.load_type in MERGE_LOADS and destination.connection.format == "delta":
        specs.append(
            dg.AssetCheckSpec(
                UNIQUE_KEYS,
                asset=key,
                blocking=True,
                description="The declared merge keys are unique after the load (each key in one partition).",
            )
        )
    lag = max_watermark_lag(asset)
    if lag is not None:
        specs.append(
            dg.AssetCheckSpec(
                WATERMARK_LAG,
                asset=key,
                description=f"The newest stored watermark is at most {format_duration(lag)} old.",
            )
        )
    return specs


def max_watermark_lag(asset: TableAsset) -> timedelta | None:
    """The table's declared ``freshness.max_watermark_lag`` (kept in its spec's metadata)."""
    seconds = asset.spec.metadata.get(MAX_WATERMARK_LAG)
    return timedelta(seconds=seconds) if isinstance(seconds, int) else None


def check_results(
    asset: TableAsset, runtimes: Sequence[DataFlowRuntimeInfo], stored: Mapping[str, Mapping[str, Any] | None]
) -> list[dg.AssetCheckResult]:
    """Results of every check of ``asset``; ``stored`` = watermarks now stored, by dataflow id."""
    results = [_load_consistent(asset, runtimes, stored)]
    names = {spec.name for spec in check_specs(asset)}
    if UNIQUE_KEYS in names:
        results.append(_unique_keys(asset))
    if WATERMARK_LAG in names:
        results.append(watermark_lag_result(asset, stored, datetime.now(UTC)))
    return results


def watermark_lag_result(
    asset: TableAsset, stored: Mapping[str, Mapping[str, Any] | None], now: datetime
) -> dg.AssetCheckResult:
    """Fails when the newest time watermark of the table is older than its ``max_watermark_lag``.

    The newest over the table's dataflows and watermark columns: one writer of a fan-in table that
    still delivers keeps the table's data new. No time watermark stored (never loaded, or only
    numeric watermarks) fails too: the age of the data is unknown.
    """
    limit = max_watermark_lag(asset) or timedelta(0)
    ages = watermark_ages(stored, now)
    known = {column: age for column, age in ages.items() if age is not None}
    metadata: dict[str, Any] = {
        "max_watermark_lag": format_duration(limit),
        "watermark_ages": dg.MetadataValue.json({c: format_duration(a) if a else None for c, a in ages.items()}),
    }
    if not known:
        what = "no watermark is stored yet" if not ages else "no stored watermark is a date or time"
        return dg.AssetCheckResult(
            asset_key=asset.spec.key,
            check_name=WATERMARK_LAG,
            passed=False,
            metadata=metadata,
            description=f"{what}: the age of the data is unknown.",
        )
    column, age = min(known.items(), key=lambda item: item[1])
    metadata["lag"] = format_duration(age)
    metadata["newest_watermark"] = column
    passed = age <= limit
    verdict = "within" if passed else "older than"
    return dg.AssetCheckResult(
        asset_key=asset.spec.key,
        check_name=WATERMARK_LAG,
        passed=passed,
        metadata=metadata,
        description=f"The newest watermark ({column}) is {format_duration(age)} old, {verdict} {format_duration(limit)}.",
    )


def _load_consistent(
    asset: TableAsset, runtimes: Sequence[DataFlowRuntimeInfo], stored: Mapping[str, Mapping[str, Any] | None]
) -> dg.AssetCheckResult:
    read, written = _rows(asset, runtimes)
    behind = _watermarks_behind(runtimes, stored)
    return dg.AssetCheckResult(
        asset_key=asset.spec.key,
        check_name=LOAD_CONSISTENT,
        passed=written <= read and not behind,
        metadata={"rows_read": read, "rows_written": written, "watermarks_behind": behind or "none"},
    )


def _rows(asset: TableAsset, runtimes: Sequence[DataFlowRuntimeInfo]) -> tuple[int, int]:
    read = sum(r.source.rows_read for r in runtimes)
    if asset.table.first.destination.load_type == "scd2":  # closing a version is not a new row
        return read, sum(r.destination.rows_inserted for r in runtimes)
    return read, sum(r.destination.rows_inserted + r.destination.rows_updated for r in runtimes)


def _watermarks_behind(
    runtimes: Sequence[DataFlowRuntimeInfo], stored: Mapping[str, Mapping[str, Any] | None]
) -> list[str]:
    """Columns whose stored watermark is now behind the one the load started from."""
    behind: list[str] = []
    for runtime in runtimes:
        before, now = dict(runtime.source.watermark_before or {}), dict(stored.get(runtime.dataflow_id) or {})
        try:
            merged = merge_watermarks(now, before)
        except WatermarkError as e:
            behind.append(f"{runtime.dataflow_name}: {e}")
            continue
        behind += [f"{runtime.dataflow_name}.{col}" for col in before if merged.get(col) != now.get(col)]
    return behind


def _unique_keys(asset: TableAsset) -> dg.AssetCheckResult:
    """The keys the user declared (``merge_keys``) are unique among the table's (current) rows.

    The writer merges on the keys extended with the partition columns (as DataCoolie does), so a
    row whose partition column changed is inserted into its new partition beside the old row: unique
    on the extended keys, a duplicate business key all the same. The check counts declared keys and
    names, for a duplicated key, the partitions it lives in.
    """
    import polars as pl  # the checks run in a step: a code server never loads Polars for them

    destination = asset.table.first.destination
    path = table_uri(destination.path or "")
    if not _table_exists(path):
        return dg.AssetCheckResult(
            asset_key=asset.spec.key,
            check_name=UNIQUE_KEYS,
            passed=True,
            metadata={"rows": 0, "distinct_keys": 0, "merge_keys": list(destination.merge_keys)},
            description="The table does not exist yet: no rows, no duplicate keys.",
        )
    frame, keys, partitions = _keyed_rows(destination, path)
    counts: Any = frame.select(pl.len().alias("rows"), pl.struct(keys).n_unique().alias("keys")).collect().row(0)
    rows, unique = counts
    metadata: dict[str, Any] = {"rows": rows, "distinct_keys": unique, "merge_keys": keys}
    if partitions:
        metadata["partition_columns"] = partitions
    if rows == unique:
        return dg.AssetCheckResult(asset_key=asset.spec.key, check_name=UNIQUE_KEYS, passed=True, metadata=metadata)
    duplicates = _duplicate_keys(frame, keys, partitions)  # a second scan, only when there are duplicates
    metadata["duplicate_keys"] = duplicates.height
    metadata["examples"] = dg.MetadataValue.json(duplicates.head(MAX_EXAMPLES).to_dicts())
    return dg.AssetCheckResult(
        asset_key=asset.spec.key,
        check_name=UNIQUE_KEYS,
        passed=False,
        metadata=metadata,
        description=_duplicates_description(duplicates, keys, partitions),
    )


def _table_exists(path: str) -> bool:
    if not is_object_store(path):
        return os.path.isdir(os.path.join(path, "_delta_log"))
    from deltalake import DeltaTable  # only for a table on object storage: a local one is a folder check

    return bool(DeltaTable.is_deltatable(path, storage_options=delta_storage_options(path)))


def _keyed_rows(destination: Destination, path: str) -> tuple[pl.LazyFrame, list[str], list[str]]:
    """The rows the keys must be unique in (scd2: current ones), the declared keys and the partition
    columns not among them, spelled as the table has them."""
    import polars as pl

    from datacoolie_core.api import final_names

    frame = pl.scan_delta(path, storage_options=delta_storage_options(path))
    names = frame.collect_schema().names()
    # metadata may name raw source columns; the table has the sanitized names (the resource runs in lower mode)
    keys = final_names(names, destination.merge_keys)
    partitions = [c for c in final_names(names, [p.column for p in destination.partition_columns]) if c not in keys]
    if destination.load_type == "scd2":
        frame = frame.filter(pl.col(IS_CURRENT))
    return frame, keys, partitions


MAX_EXAMPLES = 5
"""Duplicate keys named in a failed check's description and metadata."""


def _duplicate_keys(frame: pl.LazyFrame, keys: list[str], partitions: list[str]) -> pl.DataFrame:
    """One row per duplicated key: the key, its row count and, per partition column, its sorted values."""
    import polars as pl

    return (
        frame.group_by(keys)
        .agg(pl.len().alias("rows"), *(pl.col(p).unique().sort().alias(p) for p in partitions))
        .filter(pl.col("rows") > 1)
        .sort(keys)
        .collect()
    )


def _duplicates_description(duplicates: pl.DataFrame, keys: list[str], partitions: list[str]) -> str:
    """Which keys are duplicated, where, and why (a moved partition value, or a true duplicate)."""
    import polars as pl

    moved = duplicates.filter(pl.any_horizontal([pl.col(p).list.len() > 1 for p in partitions])) if partitions else None
    lines = [f"{duplicates.height} value(s) of the merge keys ({', '.join(keys)}) occur in more than one row:"]
    for row in duplicates.head(MAX_EXAMPLES).iter_rows(named=True):
        key = ", ".join(f"{k}={row[k]!r}" for k in keys)
        where = "; ".join(f"{p} in {', '.join(str(v) for v in row[p])}" for p in partitions)
        lines.append(f"- {key}: {row['rows']} rows" + (f" ({where})" if where else ""))
    if duplicates.height > MAX_EXAMPLES:
        lines.append(f"- … and {duplicates.height - MAX_EXAMPLES} more")
    if moved is not None and moved.height:
        lines.append(
            f"{moved.height} of them live in more than one partition: the partition column "
            f"({', '.join(partitions)}) changed for these keys, and because the merge keys are extended with "
            "the partition columns the new row was inserted instead of updating the old one. Derive the "
            "partition column from a value that never changes for a key (e.g. the creation date), or "
            "overwrite the table to remove the stale rows."
        )
    return "\n".join(lines)
