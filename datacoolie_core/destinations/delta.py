"""Thin wrappers over delta-rs: open, create, write, merge, commit properties, checkpoint, metrics.

Every function here commits at most once and stamps that commit with the write's
:class:`~datacoolie_core.destinations.base.CommitMarker` (an app transaction plus commit metadata), so
``DeltaTable.transaction_version(app_id)`` answers "did this write land?" after a crash. Foreign
exceptions are translated once, in :func:`translate_errors`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlparse

import polars as pl
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import CommitFailedError, TableNotFoundError
from deltalake.table import TableMerger

from datacoolie_core.destinations.base import AppCommit, CommitMarker, LogState
from datacoolie_core.destinations.predicates import SOURCE, TARGET
from datacoolie_core.destinations.stream import BatchStream, arrow_exportable
from datacoolie_core.errors import CommitConflictError, DataCoolieError, DestinationError
from datacoolie_core.models.runtime import DestinationRuntimeInfo
from datacoolie_core.platform.storage import delta_storage_options

logger = logging.getLogger(__name__)

CHECKPOINT_INTERVAL = 10
META_APP_ID = "datacoolie.app_id"
META_SEQUENCE = "datacoolie.sequence"
META_RUN_ID = "datacoolie.dataflow_run_id"
META_WATERMARK = "datacoolie.watermark"

Rows = pl.DataFrame | BatchStream
"""What a plain write takes: rows in memory, or rows streamed while delta-rs writes them."""


def open_table(path: str) -> DeltaTable | None:
    """The table at ``path`` at its latest version, or ``None`` when no Delta table is there."""
    try:
        return DeltaTable(path, storage_options=delta_storage_options(path))
    except TableNotFoundError:
        return None


def committed_sequence(path: str, app_id: str) -> int | None:
    """The last sequence ``app_id`` committed to the table at ``path`` (``None``: no table or no commit)."""
    with translate_errors(path):
        table = open_table(path)
        return None if table is None else table.transaction_version(app_id)


def log_state(path: str, app_id: str) -> LogState:
    """Whether the table exists and ``app_id``'s last sequence there: one read of the log."""
    with translate_errors(path):
        table = open_table(path)
        return (
            LogState(exists=False, sequence=None)
            if table is None
            else LogState(True, table.transaction_version(app_id))
        )


def app_commits(path: str, app_id: str) -> list[AppCommit]:
    """The commits ``app_id`` made to the table at ``path``, newest first (reads the whole history).

    A commit is ``app_id``'s when its ``commitInfo`` carries our metadata: delta-rs writes the
    commit's custom metadata there, beside the ``txn`` action with the same sequence.
    """
    with translate_errors(path):
        table = open_table(path)
        if table is None:
            return []
        commits = []
        for entry in table.history():
            if entry.get(META_APP_ID) != app_id or entry.get(META_SEQUENCE) is None:
                continue
            commits.append(AppCommit(int(entry[META_SEQUENCE]), int(entry["version"]), entry.get(META_WATERMARK)))
        return sorted(commits, key=lambda c: c.version, reverse=True)


def commit_properties(marker: CommitMarker) -> CommitProperties:
    """The marker as delta-rs commit properties: one app transaction plus ``datacoolie.*`` metadata."""
    if marker.sequence is None:
        raise ValueError("the commit marker's sequence must be resolved before the commit")
    metadata = {
        **marker.metadata,
        META_APP_ID: marker.app_id,
        META_SEQUENCE: str(marker.sequence),
        META_RUN_ID: marker.dataflow_run_id,
    }
    return CommitProperties(app_transactions=[Transaction(marker.app_id, marker.sequence)], custom_metadata=metadata)


def create_table(path: str, frame: Rows, *, partition_by: Sequence[str], marker: CommitMarker) -> None:
    """Create the table with ``frame`` as version 0 (``mode="error"``: a concurrent creator conflicts).

    Returns nothing: the commit is version 0, and :func:`created_metrics` reads it without opening
    the table again (~3 ms a table, most of a tiny dataflow's extra write time).
    """
    write_deltalake(
        path,
        arrow_data(frame),
        mode="error",
        partition_by=list(partition_by) or None,
        commit_properties=commit_properties(marker),
        storage_options=delta_storage_options(path),
    )


def write_table(
    table: DeltaTable,
    frame: Rows,
    *,
    mode: Literal["append", "overwrite"],
    partition_by: Sequence[str],
    marker: CommitMarker,
) -> DeltaTable:
    """Append (``schema_mode="merge"``) or overwrite (``schema_mode="overwrite"``) in one commit.

    ``table`` is advanced in place to the new version, so ``table.version()`` is this commit's.
    """
    write_deltalake(
        table,
        arrow_data(frame),
        mode=mode,
        schema_mode="merge" if mode == "append" else "overwrite",
        partition_by=list(partition_by) or None,
        commit_properties=commit_properties(marker),
    )
    return table


def arrow_data(frame: Rows) -> Any:
    """What delta-rs reads: an Arrow C stream, of the collected frame or of the streamed batches.

    No ``frame.to_arrow()``: that would load pyarrow for a conversion delta-rs does not need, except
    for the columns :func:`~datacoolie_core.destinations.stream.arrow_exportable` names.
    """
    return frame if isinstance(frame, BatchStream) else arrow_exportable(frame)


def start_merge(table: DeltaTable, source: pl.DataFrame, predicate: str, marker: CommitMarker) -> TableMerger:
    """A MERGE of ``source`` (alias ``source``) into ``table`` (alias ``target``) that evolves the schema."""
    return table.merge(
        arrow_data(source),
        predicate=predicate,
        source_alias=SOURCE,
        target_alias=TARGET,
        merge_schema=True,
        commit_properties=commit_properties(marker),
    )


def execute_merge(table: DeltaTable, merger: TableMerger, marker: CommitMarker) -> DestinationRuntimeInfo:
    """Run the MERGE; when it changed nothing (delta-rs then skips the commit) commit the marker alone."""
    before = table.version()
    metrics = merger.execute()
    if table.version() == before:
        return commit_marker_only(table, marker)
    return merge_metrics(table, metrics)


def commit_marker_only(table: DeltaTable, marker: CommitMarker) -> DestinationRuntimeInfo:
    """An empty append: a commit that adds no data but records the marker (a no-op write still counts)."""
    empty = pl.scan_delta(table).limit(0).collect()
    write_deltalake(table, arrow_data(empty), mode="append", commit_properties=commit_properties(marker))
    return write_metrics(table)


def write_metrics(table: DeltaTable) -> DestinationRuntimeInfo:
    """Metrics of a ``write_deltalake`` commit, from that version's commit file (read once)."""
    return _write_metrics(table.table_uri, table.version(), lambda: table)


def created_metrics(path: str) -> DestinationRuntimeInfo:
    """Metrics of :func:`create_table`'s commit (version 0); a remote table is opened for its history."""
    return _write_metrics(path, 0, lambda: DeltaTable(path, version=0, storage_options=delta_storage_options(path)))


def _write_metrics(uri: str, version: int, table: Callable[[], DeltaTable]) -> DestinationRuntimeInfo:
    metrics, bytes_added, bytes_removed = _commit_summary(uri, version)
    if metrics is None:  # not a local table: one history entry instead
        entry = next((h for h in table().history(1) if h.get("version") == version), {})
        metrics = entry.get("operationMetrics", {})
    rows = int(metrics.get("num_added_rows", 0))
    return DestinationRuntimeInfo(
        rows_written=rows,
        rows_inserted=rows,
        files_added=int(metrics.get("num_added_files", 0)),
        files_removed=int(metrics.get("num_removed_files", 0)),
        bytes_added=bytes_added,
        bytes_removed=bytes_removed,
        table_version=version,
    )


def merge_metrics(table: DeltaTable, metrics: Mapping[str, Any]) -> DestinationRuntimeInfo:
    """Metrics of a MERGE commit, from the metrics the MERGE returned.

    ``rows_written`` counts rows the commit inserted or changed; rows copied unchanged into
    rewritten files are not counted (unlike DataCoolie's ``num_output_rows``).
    """
    inserted = int(metrics.get("num_target_rows_inserted", 0))
    updated = int(metrics.get("num_target_rows_updated", 0))
    version = table.version()
    bytes_added, bytes_removed = _commit_bytes(table, version)
    return DestinationRuntimeInfo(
        rows_written=inserted + updated,
        rows_inserted=inserted,
        rows_updated=updated,
        rows_deleted=int(metrics.get("num_target_rows_deleted", 0)),
        files_added=int(metrics.get("num_target_files_added", 0)),
        files_removed=int(metrics.get("num_target_files_removed", 0)),
        bytes_added=bytes_added,
        bytes_removed=bytes_removed,
        table_version=version,
    )


def _commit_bytes(table: DeltaTable, version: int) -> tuple[int, int]:
    """Bytes added and removed by the commit (local tables; else 0)."""
    _, added, removed = _commit_summary(table.table_uri, version)
    return added, removed


def _commit_summary(uri: str, version: int) -> tuple[dict[str, Any] | None, int, int]:
    """``(operationMetrics, bytes added, bytes removed)`` of a local commit file; ``(None, 0, 0)`` otherwise.

    ``uri``: a table's ``file://`` URI (percent-encoded) or a plain local path (taken as written).
    """
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file"):
        return None, 0, 0
    root = Path(unquote(parsed.path)) if parsed.scheme == "file" else Path(uri)
    log_file = root / "_delta_log" / f"{version:020d}.json"
    sizes = {"add": 0, "remove": 0}
    metrics: dict[str, Any] = {}
    try:
        for line in log_file.read_text(encoding="utf-8").splitlines():
            action = json.loads(line) if line.strip() else {}
            for kind in sizes:
                sizes[kind] += int((action.get(kind) or {}).get("size") or 0)
            if "commitInfo" in action:
                metrics = action["commitInfo"].get("operationMetrics") or {}
    except (OSError, ValueError) as e:  # metrics are observational: never fail a committed write
        logger.debug("cannot read commit sizes from %s: %s", log_file, e)
        return None, 0, 0
    return metrics, sizes["add"], sizes["remove"]


def checkpoint_if_due(table: DeltaTable) -> None:
    """Checkpoint every :data:`CHECKPOINT_INTERVAL` versions; a failure is logged, never raised."""
    version = table.version()
    if version > 0 and version % CHECKPOINT_INTERVAL == 0:
        try:
            table.create_checkpoint()
        except Exception as e:  # housekeeping: the data is committed already
            logger.warning("checkpoint of %s at version %s failed: %s", table.table_uri, version, e)


@contextmanager
def translate_errors(path: str, table_name: str | None = None) -> Iterator[None]:
    """Turn delta-rs failures into :class:`DestinationError`; a concurrent commit is transient."""
    name = f"Delta table '{table_name}' at {path}" if table_name else f"Delta table at {path}"
    try:
        yield
    except DataCoolieError:
        raise
    except CommitFailedError as e:
        raise CommitConflictError(
            f"{name}: another writer committed concurrently ({e}); nothing was written, retry the write"
        ) from e
    except Exception as e:
        if "table already exists" in str(e).lower():  # two first writes raced to create the table
            raise CommitConflictError(f"{name}: created concurrently by another writer; retry the write") from e
        raise DestinationError(
            f"{name}: write failed: {type(e).__name__}: {e}. Check the table's schema and partitioning"
        ) from e
