"""The ``iceberg`` writer: a destination's load strategy on an Iceberg table of a pyiceberg catalog (D-16).

Exactly once, as the Delta writer: every write is ONE catalog commit carrying the write's
:class:`~datacoolie_core.destinations.base.CommitMarker` twice —

* in the summary of each snapshot it adds (``datacoolie.app_id``, ``datacoolie.sequence``,
  ``datacoolie.dataflow_run_id``, ``datacoolie.watermark``): the history a repair reads;
* in the table property ``datacoolie.commit.<app id>`` (sequence, run id, watermark): the one read
  that answers "did write N land?" before every write, which expiring snapshots does not erase
  (Delta keeps its ``txn`` actions through log cleanup the same way).

A write whose sequence the table already holds is not repeated (``recovered=True``); the journal
and :mod:`~datacoolie_core.orchestration.state_check` settle a crash between commit and watermark
save from it. The first write creates the table in the same commit as its rows (a create-table
transaction), partitioned by identity on the destination's partition columns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from datacoolie_core.destinations.base import AppCommit, CommitMarker, LogState, ReplaceWindow, next_marker
from datacoolie_core.destinations.iceberg_load import ICEBERG_STRATEGIES, KEYED, IcebergTarget, iceberg_frame
from datacoolie_core.errors import DestinationError
from datacoolie_core.models.dataflow import Destination
from datacoolie_core.models.runtime import DestinationRuntimeInfo
from datacoolie_core.platform import iceberg_catalog as ic
from datacoolie_core.suggestions import did_you_mean

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table, Transaction

COMMIT_PROPERTY = "datacoolie.commit."
"""Prefix of the table property holding an app id's last commit (``datacoolie.commit.<app id>``)."""
META_APP_ID, META_SEQUENCE = "datacoolie.app_id", "datacoolie.sequence"
META_RUN_ID, META_WATERMARK = "datacoolie.dataflow_run_id", "datacoolie.watermark"


class IcebergWriter:
    """Writes Iceberg tables with pyiceberg; see :class:`~datacoolie_core.destinations.base.Writer`."""

    format = "iceberg"

    def committed_sequence(self, destination: Destination, app_id: str) -> int | None:
        return self.log_state(destination, app_id).sequence

    def log_state(self, destination: Destination, app_id: str) -> LogState:
        """One load of the table's metadata: does it exist, and the app id's last sequence."""
        catalog, ident = _locate(destination)
        with ic.translate_errors(ident):
            table = ic.load_table(catalog, ident)
        if table is None:
            return LogState(exists=False, sequence=None)
        record = last_commit(table, app_id)
        return LogState(True, None if record is None else int(record["sequence"]))

    def app_commits(self, destination: Destination, app_id: str) -> list[AppCommit]:
        """The app id's commits, newest first: the snapshot history, and the property for expired ones."""
        catalog, ident = _locate(destination)
        with ic.translate_errors(ident):
            table = ic.load_table(catalog, ident)
        return [] if table is None else app_commits(table, app_id)

    def write(
        self,
        frame: pl.DataFrame,
        destination: Destination,
        *,
        marker: CommitMarker,
        window: ReplaceWindow | None = None,
    ) -> DestinationRuntimeInfo:
        strategy = _strategy(destination.load_type)
        catalog, ident = _locate(destination)
        with ic.translate_errors(ident):
            table = ic.load_table(catalog, ident)
            record = None if table is None else last_commit(table, marker.app_id)
            marker = next_marker(marker, None if record is None else int(record["sequence"]))
            assert marker.sequence is not None
            if table is not None and record is not None and int(record["sequence"]) >= marker.sequence:
                return _recovered(destination, table, int(record["sequence"]))
            rows = iceberg_frame(frame)
            tx = fail_fast(table).transaction() if table is not None else _create(catalog, ident, rows, destination)
            target = _target(rows, destination, table, tx, marker, window)
            info = strategy(rows, target)
            tx.set_properties({COMMIT_PROPERTY + marker.app_id: _record(marker)})
            before = None if table is None or table.current_snapshot() is None else table.current_snapshot()
            committed = tx.commit_transaction()
        _add_commit_metrics(info, committed, None if before is None else before.snapshot_id)
        info.operation_type = destination.load_type
        info.commit_sequence = marker.sequence
        return info


def _locate(destination: Destination) -> tuple[Catalog, tuple[str, ...]]:
    ident = ic.identifier(destination.connection, destination.schema_name, destination.table, what="destination")
    return ic.get_catalog(destination.connection), ident


def _strategy(load_type: str) -> Any:
    try:
        return ICEBERG_STRATEGIES[load_type]
    except KeyError:
        raise DestinationError(
            f"unknown load_type '{load_type}'{did_you_mean(load_type, ICEBERG_STRATEGIES)} "
            f"(known: {', '.join(ICEBERG_STRATEGIES)})"
        ) from None


def fail_fast(table: Table) -> Table:
    """``table`` whose commits fail on a concurrent commit instead of being rebased onto it.

    pyiceberg 0.12 retries a conflicting commit by rebuilding its snapshots on the new head. That is
    wrong here: a merge's rows were computed from the snapshot read (``__created_at``, the scd2 plan)
    and the exactly-once check ran against it. The retry count is read from the metadata the
    transaction starts from, so it is set to 0 there, in memory only: commits send explicit updates,
    and the catalog applies them to its own current metadata (nothing of this reaches the table).
    """
    from pyiceberg.table import Table as IcebergTable
    from pyiceberg.table import TableProperties

    properties = {**table.metadata.properties, TableProperties.COMMIT_NUM_RETRIES: "0"}
    metadata = table.metadata.model_copy(update={"properties": properties})
    return IcebergTable(table.name(), metadata, table.metadata_location, table.io, table.catalog)


def _create(catalog: Catalog, ident: tuple[str, ...], rows: pl.DataFrame, destination: Destination) -> Transaction:
    """A create-table transaction: the table appears with the write's rows in one commit."""
    ic.ensure_namespace(catalog, ident[:-1])
    location = ic.table_uri(destination.connection, destination.schema_name, destination.table)
    tx = catalog.create_table_transaction(
        ident, schema=rows.to_arrow().schema, location=ic.file_uri(location) if location else None
    )
    partitions = resolve_columns(rows, [p.column for p in destination.partition_columns], "partition", destination)
    if partitions:
        with tx.update_spec() as spec:
            for name in partitions:
                spec.add_identity(name)
    return tx


def _target(
    rows: pl.DataFrame,
    destination: Destination,
    table: Table | None,
    tx: Transaction,
    marker: CommitMarker,
    window: ReplaceWindow | None,
) -> IcebergTarget:
    keyed = destination.load_type in KEYED
    keys = resolve_columns(rows, destination.merge_keys_extended, "merge key", destination) if keyed else ()
    if window is not None and destination.load_type != "merge_overwrite":
        raise DestinationError(
            f"destination table '{destination.table}': a replace window needs load_type 'merge_overwrite', "
            f"not '{destination.load_type}'; drop configure.replace_by_watermark or change the load type"
        )
    if window is not None:
        names = resolve_columns(rows, list(window.bounds), "replace window", destination)
        window = ReplaceWindow(dict(zip(names, window.bounds.values(), strict=True)))
    return IcebergTarget(str(destination.table), table, tx, snapshot_properties(marker), keys, window)


def resolve_columns(frame: pl.DataFrame, names: Sequence[str], what: str, destination: Destination) -> tuple[str, ...]:
    """``names`` as spelled in the frame, matched case-insensitively; a missing one raises."""
    by_lower = {c.lower(): c for c in frame.columns}
    resolved = []
    for name in names:
        if name.lower() not in by_lower:
            raise DestinationError(
                f"destination table '{destination.table}': {what} column '{name}' is not in the data"
                f"{did_you_mean(name, frame.columns)} (columns: {', '.join(frame.columns)}); "
                f"fix the destination's {what} columns or add the column upstream"
            )
        resolved.append(by_lower[name.lower()])
    return tuple(resolved)


def snapshot_properties(marker: CommitMarker) -> dict[str, str]:
    """The marker as snapshot summary properties (every snapshot the write adds carries them)."""
    return {
        **marker.metadata,
        META_APP_ID: marker.app_id,
        META_SEQUENCE: str(marker.sequence),
        META_RUN_ID: marker.dataflow_run_id,
    }


def _record(marker: CommitMarker) -> str:
    record = {"sequence": marker.sequence, "dataflow_run_id": marker.dataflow_run_id}
    if META_WATERMARK in marker.metadata:
        record["watermark"] = marker.metadata[META_WATERMARK]
    return json.dumps(record, sort_keys=True)


def last_commit(table: Table, app_id: str) -> dict[str, Any] | None:
    """The app id's last commit as the table property records it (``None``: it never wrote here)."""
    text = table.properties.get(COMMIT_PROPERTY + app_id)
    if text is None:
        return None
    try:
        record = json.loads(text)
        int(record["sequence"])
    except (ValueError, KeyError, TypeError) as e:
        raise DestinationError(
            f"Iceberg table '{table.name()}': property {COMMIT_PROPERTY + app_id} is damaged ({text!r}); "
            "restore it from the newest snapshot summary carrying datacoolie.sequence"
        ) from e
    return dict(record)


def app_commits(table: Table, app_id: str) -> list[AppCommit]:
    """``app_id``'s commits along the current snapshot's ancestry, newest first (one per sequence)."""
    from pyiceberg.table.snapshots import ancestors_of

    commits: dict[int, AppCommit] = {}
    for snapshot in ancestors_of(table.current_snapshot(), table.metadata):
        summary = snapshot.summary
        text = None if summary is None or summary.get(META_APP_ID) != app_id else summary.get(META_SEQUENCE)
        if summary is None or text is None:
            continue
        sequence = int(text)
        commits.setdefault(sequence, AppCommit(sequence, snapshot.sequence_number or 0, summary.get(META_WATERMARK)))
    record = last_commit(table, app_id)
    if record is not None and int(record["sequence"]) not in commits:  # its snapshots were expired
        sequence = int(record["sequence"])
        current = table.current_snapshot()
        version = 0 if current is None else current.sequence_number or 0
        commits[sequence] = AppCommit(sequence, version, record.get("watermark"))
    return sorted(commits.values(), key=lambda c: c.sequence, reverse=True)


def _add_commit_metrics(info: DestinationRuntimeInfo, table: Table, previous: int | None) -> None:
    """Files and bytes from the summaries of the snapshots this commit added."""
    from pyiceberg.table.snapshots import ancestors_of

    for snapshot in ancestors_of(table.current_snapshot(), table.metadata):
        if snapshot.snapshot_id == previous:
            break
        summary = snapshot.summary
        if summary is None:
            continue
        info.files_added += int(summary.get("added-data-files") or 0)
        info.files_removed += int(summary.get("deleted-data-files") or 0)
        info.bytes_added += int(summary.get("added-files-size") or 0)
        info.bytes_removed += int(summary.get("removed-files-size") or 0)
    current = table.current_snapshot()
    info.table_version = None if current is None else current.sequence_number


def _recovered(destination: Destination, table: Table, sequence: int) -> DestinationRuntimeInfo:
    current = table.current_snapshot()
    return DestinationRuntimeInfo(
        operation_type=destination.load_type,
        table_version=None if current is None else current.sequence_number,
        commit_sequence=sequence,
        recovered=True,
    )
