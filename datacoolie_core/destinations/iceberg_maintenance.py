"""Maintenance of Iceberg destinations with what pyiceberg 0.12 offers (DataCoolie Z-02).

* ``cleanup``: expire the snapshots older than the retention (never the current one, nor a branch or
  tag head). pyiceberg 0.12 removes them from the table metadata only: their data and manifest
  files stay on storage (it has no orphan-file removal), so ``bytes_removed`` is 0.
* ``compact``: pyiceberg 0.12 has no data-file rewrite; the operation is recorded as skipped.

The commit record of every app id (:mod:`~datacoolie_core.destinations.iceberg_writer`) is a table
property, which expiring snapshots keeps: exactly-once bookkeeping survives a cleanup.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import TYPE_CHECKING

from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.models.runtime import DataFlowRuntimeInfo, utc_now
from datacoolie_core.platform import iceberg_catalog as ic

if TYPE_CHECKING:
    from pyiceberg.table import Table

logger = logging.getLogger("datacoolie.maintenance")

COMPACT_UNSUPPORTED = "pyiceberg 0.12 cannot rewrite data files; compact Iceberg tables with Spark or another engine"


def run_iceberg_maintenance(
    dataflow: DataFlow, runtime: DataFlowRuntimeInfo, *, do_compact: bool, do_cleanup: bool, retention_hours: float
) -> DataFlowRuntimeInfo:
    """Expire old snapshots of the Iceberg table ``dataflow`` writes; never raises."""
    destination = dataflow.destination
    try:
        ident = ic.identifier(destination.connection, destination.schema_name, destination.table, what="destination")
        with ic.translate_errors(ident):
            table = ic.load_table(ic.get_catalog(destination.connection), ident)
            if table is None:
                runtime.finish("skipped", reason=f"Iceberg table '{'.'.join(ident)}' does not exist yet")
                return runtime
            if do_compact:
                logger.warning("Iceberg table '%s': compact skipped: %s", ".".join(ident), COMPACT_UNSUPPORTED)
            if do_cleanup:
                _expire(table, runtime, retention_hours)
    except Exception as e:
        runtime.exception = e
        runtime.finish("failed", error=e)
        return runtime
    if not do_cleanup:
        reason = f"compact skipped: {COMPACT_UNSUPPORTED}" if do_compact else "no maintenance operation requested"
        runtime.finish("skipped", reason=reason)
        return runtime
    runtime.destination.operation_type = "cleanup"
    runtime.finish("succeeded")
    return runtime


def _expire(table: Table, runtime: DataFlowRuntimeInfo, retention_hours: float) -> None:
    started = time.perf_counter()
    cutoff = utc_now() - timedelta(hours=retention_hours)
    current = table.current_snapshot()
    old = [
        s.snapshot_id
        for s in table.snapshots()
        if s.timestamp_ms < cutoff.timestamp() * 1000 and (current is None or s.snapshot_id != current.snapshot_id)
    ]
    if old:
        table.maintenance.expire_snapshots().by_ids(old).commit()
    runtime.phase_seconds["cleanup"] = time.perf_counter() - started
    runtime.operations["cleanup"] = {"snapshots_expired": len(old), "files_removed": 0, "bytes_removed": 0}
    refreshed = table.refresh().current_snapshot()
    runtime.destination.table_version = None if refreshed is None else refreshed.sequence_number
