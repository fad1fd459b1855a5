"""Asset checks derived from the metadata, evaluated right after each load.

- ``unique_merge_keys`` (merge_upsert / merge_overwrite / scd2 current rows), blocking: duplicate keys
  after a merge mean downstream would double count.
- ``load_consistent``, blocking: the load wrote at most the rows it read, and the stored watermark
  is not behind the one the load started from. (One check for both keeps a 3,000-table code location
  fast to load: every check spec costs load time.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import dagster as dg
import polars as pl

from datacoolie_core.columns import IS_CURRENT
from datacoolie_core.errors import WatermarkError
from datacoolie_core.models.runtime import DataFlowRuntimeInfo
from datacoolie_core.transforms.resolve import final_names
from datacoolie_core.watermark.merge import merge_watermarks

if TYPE_CHECKING:
    from datacoolie_dagster.assets import TableAsset

UNIQUE_KEYS = "unique_merge_keys"
LOAD_CONSISTENT = "load_consistent"
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
                UNIQUE_KEYS, asset=key, blocking=True, description="Merge keys are unique after the load."
            )
        )
    return specs


def check_results(
    asset: TableAsset, runtimes: Sequence[DataFlowRuntimeInfo], stored: Mapping[str, Mapping[str, Any] | None]
) -> list[dg.AssetCheckResult]:
    """Results of every check of ``asset``; ``stored`` = watermarks now stored, by dataflow id."""
    results = [_load_consistent(asset, runtimes, stored)]
    if any(spec.name == UNIQUE_KEYS for spec in check_specs(asset)):
        results.append(_unique_keys(asset))
    return results


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
    destination = asset.table.first.destination
    frame = pl.scan_delta(os.path.abspath(destination.path or ""))
    # metadata may name raw source columns; the table has the sanitized names (the resource runs in lower mode)
    keys = final_names(frame.collect_schema().names(), destination.merge_keys_extended)
    if destination.load_type == "scd2":
        frame = frame.filter(pl.col(IS_CURRENT))
    counts: Any = frame.select(pl.len().alias("rows"), pl.struct(keys).n_unique().alias("keys")).collect().row(0)
    rows, unique = counts
    return dg.AssetCheckResult(
        asset_key=asset.spec.key,
        check_name=UNIQUE_KEYS,
        passed=rows == unique,
        metadata={"rows": rows, "distinct_keys": unique, "merge_keys": keys},
    )
