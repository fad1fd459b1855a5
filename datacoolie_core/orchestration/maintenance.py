"""Table maintenance: compact (OPTIMIZE) and cleanup (VACUUM) of Delta destinations (DataCoolie O-17 … O-19).

The driver picks one representative dataflow per physical destination
(:func:`select_maintenance_targets`) so fan-in topologies never maintain the same table twice at
once, then runs :func:`run_maintenance_target` for each. A target run never raises: the outcome,
per-operation metrics and the error of a failed operation are in the returned runtime.

Unlike DataCoolie 0.1.7 (which left delta-rs's ``dry_run=True`` on), cleanup really deletes the
files older than the retention.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError, TableNotFoundError

from datacoolie_core.errors import CommitConflictError, DestinationError, TerminalError
from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.models.runtime import DataFlowRuntimeInfo
from datacoolie_core.platform.storage import StorageConfigError, bind_storage, delta_storage_options
from datacoolie_core.secrets import SecretError, SecretProvider, resolve_connection_secrets

logger = logging.getLogger("datacoolie.maintenance")

MaintenanceOp = Literal["compact", "cleanup"]
MAINTAINABLE_FORMATS = ("delta",)


class MaintenanceNotSupportedError(DestinationError, TerminalError):
    """The destination's format has no table maintenance (flat files)."""


@dataclass(frozen=True)
class OperationResult:
    """One maintenance operation on one table."""

    operation: MaintenanceOp
    seconds: float
    files_added: int = 0
    files_removed: int = 0
    bytes_added: int = 0
    bytes_removed: int = 0
    error: BaseException | None = None


def maintenance_block_reason(dataflow: DataFlow) -> str | None:
    """Why ``dataflow`` cannot represent its destination in a maintenance run, or ``None``."""
    if not dataflow.is_active:
        return f"dataflow '{dataflow.name}' is inactive"
    connection = dataflow.destination.connection
    if not connection.is_active:
        return f"destination connection '{connection.name}' is inactive"
    try:
        dataflow.destination.destination_key  # noqa: B018 - raises when the destination has no identity
    except ValueError as e:
        return str(e)
    return None


def select_maintenance_targets(dataflows: Sequence[DataFlow]) -> tuple[list[DataFlow], list[DataFlow]]:
    """One representative dataflow per destination, and the blocked candidates.

    Candidates are taken in ``dataflow_id`` order (stable whatever the input order); the first
    eligible one represents its ``destination_key`` and later ones are dropped (they get no row).
    Inactive dataflows, dataflows on an inactive destination connection and destinations without an
    identity are *blocked*: returned apart (the driver records them as skipped, see
    :func:`maintenance_block_reason`) and never displacing an active representative.

    Returns:
        ``(representatives, blocked)``, each in ``dataflow_id`` order.
    """
    representatives: dict[str, DataFlow] = {}
    blocked: list[DataFlow] = []
    for dataflow in sorted(dataflows, key=lambda d: str(d.dataflow_id)):
        if maintenance_block_reason(dataflow) is not None:
            blocked.append(dataflow)
            continue
        representatives.setdefault(dataflow.destination.destination_key, dataflow)
    return list(representatives.values()), blocked


def run_maintenance_target(
    dataflow: DataFlow,
    *,
    do_compact: bool,
    do_cleanup: bool,
    retention_hours: float,
    dataflow_run_id: str | None = None,
    secrets: SecretProvider | None = None,
) -> DataFlowRuntimeInfo:
    """Compact and/or vacuum the Delta table ``dataflow`` writes; never raises.

    Status: ``failed`` (with ``.exception``) if any operation failed or the format has no
    maintenance; ``skipped`` when the table does not exist yet or no operation was requested;
    otherwise ``succeeded``. ``runtime.destination`` sums the files and bytes added/removed,
    ``runtime.phase_seconds`` holds each operation's wall time.
    """
    runtime = DataFlowRuntimeInfo(
        dataflow_id=str(dataflow.dataflow_id), dataflow_name=str(dataflow.name), operation_type="maintenance"
    )
    if dataflow_run_id is not None:
        runtime.dataflow_run_id = dataflow_run_id
    runtime.status = "running"
    if dataflow.destination.connection.format == "iceberg":  # expire snapshots only (pyiceberg 0.12)
        from datacoolie_core.destinations.iceberg_maintenance import run_iceberg_maintenance

        return run_iceberg_maintenance(
            dataflow, runtime, do_compact=do_compact, do_cleanup=do_cleanup, retention_hours=retention_hours
        )
    try:
        if secrets is not None:  # only the destination's secrets (DataCoolie O-17): its store's credentials
            bind_storage(resolve_connection_secrets(dataflow.destination.connection, secrets))
        table = _open_supported_table(dataflow)
    except (DestinationError, SecretError, StorageConfigError) as e:
        return _fail(runtime, e)
    if table is None:
        runtime.finish("skipped", reason=f"Delta table at {dataflow.destination.path} does not exist yet")
        return runtime
    operations = _requested(do_compact=do_compact, do_cleanup=do_cleanup, retention_hours=retention_hours)
    if not operations:
        runtime.finish("skipped", reason="no maintenance operation requested (do_compact and do_cleanup are off)")
        return runtime
    label = f"Delta table '{dataflow.destination.table}' at {dataflow.destination.path}"
    results = [_run_operation(name, run, table, label) for name, run in operations]
    return _record(runtime, results, table)


def _open_supported_table(dataflow: DataFlow) -> DeltaTable | None:
    destination = dataflow.destination
    fmt = destination.connection.format
    if fmt not in MAINTAINABLE_FORMATS:
        raise MaintenanceNotSupportedError(
            f"dataflow '{dataflow.name}': maintenance is not supported for {fmt} destinations "
            f"(table '{destination.table}'); only Delta tables are compacted and vacuumed"
        )
    path = destination.path
    if path is None:
        raise DestinationError(f"dataflow '{dataflow.name}': destination '{destination.table}' has no path")
    try:
        return DeltaTable(path, storage_options=delta_storage_options(path))
    except TableNotFoundError:
        return None
    except Exception as e:
        raise DestinationError(f"Delta table at {path}: cannot open for maintenance: {type(e).__name__}: {e}") from e


Operation = Callable[[DeltaTable], OperationResult]


def _requested(*, do_compact: bool, do_cleanup: bool, retention_hours: float) -> list[tuple[MaintenanceOp, Operation]]:
    operations: list[tuple[MaintenanceOp, Operation]] = []
    if do_compact:
        operations.append(("compact", _compact))
    if do_cleanup:
        operations.append(("cleanup", lambda table: _cleanup(table, retention_hours)))
    return operations


def _run_operation(name: MaintenanceOp, run: Operation, table: DeltaTable, label: str) -> OperationResult:
    """Run one operation; a failure is translated and kept in the result, never raised."""
    started = time.perf_counter()
    try:
        result = run(table)
    except Exception as e:
        error = _translate(e, f"{label}: {name}")
        logger.warning("%s", error)
        return OperationResult(operation=name, seconds=time.perf_counter() - started, error=error)
    logger.info("%s: %s done: %s", label, name, result)
    return result


def _translate(error: Exception, what: str) -> DestinationError:
    translated = (
        CommitConflictError(f"{what} conflicted with a concurrent commit ({error}); retry maintenance")
        if isinstance(error, CommitFailedError)
        else DestinationError(f"{what} failed: {type(error).__name__}: {error}; check the table and retry")
    )
    translated.__cause__ = error
    return translated


def _compact(table: DeltaTable) -> OperationResult:
    started = time.perf_counter()
    metrics = table.optimize.compact()
    return OperationResult(
        operation="compact",
        seconds=time.perf_counter() - started,
        files_added=int(metrics.get("numFilesAdded", 0)),
        files_removed=int(metrics.get("numFilesRemoved", 0)),
        bytes_added=_total_size(metrics.get("filesAdded")),
        bytes_removed=_total_size(metrics.get("filesRemoved")),
    )


def _total_size(stats: Any) -> int:
    """``totalSize`` of delta-rs's file statistics (a JSON string in deltalake 1.x, a dict in some)."""
    if isinstance(stats, str):
        stats = json.loads(stats)
    return int(stats.get("totalSize", 0)) if isinstance(stats, dict) else 0


def _cleanup(table: DeltaTable, retention_hours: float) -> OperationResult:
    started = time.perf_counter()
    before = table.version()
    # enforce_retention_duration=False: the run config's retention is the policy, not the table's default.
    # delta-rs takes whole hours: round up, so a fractional retention never deletes younger files.
    hours = math.ceil(retention_hours)
    removed = table.vacuum(retention_hours=hours, enforce_retention_duration=False, dry_run=False)
    return OperationResult(
        operation="cleanup",
        seconds=time.perf_counter() - started,
        files_removed=len(removed),
        bytes_removed=_vacuumed_bytes(table, before),
    )


def _vacuumed_bytes(table: DeltaTable, before: int) -> int:
    """Bytes the vacuum deleted, from its ``VACUUM START`` commit (none when nothing was deleted)."""
    for entry in table.history(4):
        if entry.get("version", -1) > before and entry.get("operation") == "VACUUM START":
            return int(entry.get("operationMetrics", {}).get("sizeOfDataToDelete", 0))
    return 0


def _record(runtime: DataFlowRuntimeInfo, results: list[OperationResult], table: DeltaTable) -> DataFlowRuntimeInfo:
    destination = runtime.destination
    destination.operation_type = "+".join(r.operation for r in results)
    for result in results:
        runtime.phase_seconds[result.operation] = result.seconds
        runtime.operations[result.operation] = {
            "files_added": result.files_added,
            "files_removed": result.files_removed,
            "bytes_added": result.bytes_added,
            "bytes_removed": result.bytes_removed,
        }
        destination.files_added += result.files_added
        destination.files_removed += result.files_removed
        destination.bytes_added += result.bytes_added
        destination.bytes_removed += result.bytes_removed
    destination.table_version = table.version()
    errors = [r.error for r in results if r.error is not None]
    if not errors:
        runtime.finish("succeeded")
        return runtime
    if len(errors) == 1:
        return _fail(runtime, errors[0])
    combined = DestinationError("; ".join(str(e) for e in errors))
    combined.__cause__ = errors[0]
    return _fail(runtime, combined)


def _fail(runtime: DataFlowRuntimeInfo, error: BaseException) -> DataFlowRuntimeInfo:
    runtime.exception = error
    runtime.finish("failed", error=error)
    return runtime
