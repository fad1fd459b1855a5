"""The ``delta`` writer: a destination's load strategy on a Delta table addressed by path (D-04)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from datacoolie_core.destinations import delta
from datacoolie_core.destinations.base import AppCommit, CommitMarker, LogState, ReplaceWindow, next_marker
from datacoolie_core.destinations.drift import check_no_lossy_casts
from datacoolie_core.destinations.load_strategies import (
    KEYED_STRATEGIES,
    STREAMED_STRATEGIES,
    DeltaTarget,
    Strategy,
    StreamedStrategy,
    get_strategy,
)
from datacoolie_core.destinations.stream import BatchStream
from datacoolie_core.errors import DestinationError
from datacoolie_core.models.dataflow import Destination
from datacoolie_core.models.runtime import DestinationRuntimeInfo
from datacoolie_core.suggestions import did_you_mean


class DeltaWriter:
    """Writes Delta tables with delta-rs; see :class:`~datacoolie_core.destinations.base.Writer`.

    Every write is one commit carrying the marker. A write whose marker sequence is already
    committed for its app id is not repeated: it returns ``recovered=True``.
    """

    format = "delta"

    def committed_sequence(self, destination: Destination, app_id: str) -> int | None:
        return delta.committed_sequence(table_path(destination), app_id)

    def log_state(self, destination: Destination, app_id: str) -> LogState:
        return delta.log_state(table_path(destination), app_id)

    def app_commits(self, destination: Destination, app_id: str) -> list[AppCommit]:
        return delta.app_commits(table_path(destination), app_id)

    def write(
        self,
        frame: delta.Rows,
        destination: Destination,
        *,
        marker: CommitMarker,
        window: ReplaceWindow | None = None,
    ) -> DestinationRuntimeInfo:
        path = table_path(destination)
        strategy = _strategy(frame, destination)
        with delta.translate_errors(path, destination.table):
            table = delta.open_table(path)
            done = table.transaction_version(marker.app_id) if table is not None else None
            marker = next_marker(marker, done)
            assert marker.sequence is not None
            if table is not None and done is not None and done >= marker.sequence:
                return _recovered(destination, table.version(), done)
            if table is not None and destination.load_type != "overwrite":  # overwrite replaces the schema
                check_no_lossy_casts(frame.schema, table, table_name=destination.table)
            target = _target(frame, destination, path, table, marker, window)
            info = strategy(frame, target)
        if table is not None:  # advanced in place to this write's version; a new table is at version 0
            delta.checkpoint_if_due(table)
        info.operation_type = destination.load_type
        info.commit_sequence = marker.sequence
        return info


def _strategy(frame: delta.Rows, destination: Destination) -> StreamedStrategy:
    if not isinstance(frame, BatchStream):
        strategy: Strategy = get_strategy(destination.load_type)
        return cast(StreamedStrategy, strategy)  # given a collected frame, as every strategy takes
    if destination.load_type not in STREAMED_STRATEGIES:
        raise DestinationError(
            f"destination table '{destination.table}': load_type '{destination.load_type}' needs the batch "
            f"collected, not streamed (streamed: {', '.join(STREAMED_STRATEGIES)})"
        )
    return STREAMED_STRATEGIES[destination.load_type]


def table_path(destination: Destination) -> str:
    """The table's path (``base_path/schema_name/table``); the Polars engine addresses Delta by path only."""
    path = destination.path
    if not path:
        raise DestinationError(
            f"destination table '{destination.table}' has no path: connection "
            f"'{destination.connection.name}' needs configure.base_path"
        )
    return path


def resolve_columns(frame: delta.Rows, names: Sequence[str], *, what: str, table: str) -> tuple[str, ...]:
    """``names`` as spelled in the frame, matched case-insensitively; a missing one raises."""
    by_lower = {c.lower(): c for c in frame.columns}
    resolved = []
    for name in names:
        match = by_lower.get(name.lower())
        if match is None:
            raise DestinationError(
                f"destination table '{table}': {what} column '{name}' is not in the data"
                f"{did_you_mean(name, frame.columns)} (columns: {', '.join(frame.columns)}); "
                f"fix the destination's {what} columns or add the column upstream"
            )
        resolved.append(match)
    return tuple(resolved)


def _target(
    frame: delta.Rows,
    destination: Destination,
    path: str,
    table: delta.DeltaTable | None,
    marker: CommitMarker,
    window: ReplaceWindow | None,
) -> DeltaTarget:
    name = destination.table
    keyed = destination.load_type in KEYED_STRATEGIES
    keys = resolve_columns(frame, destination.merge_keys_extended, what="merge key", table=name) if keyed else ()
    partitions = resolve_columns(frame, [p.column for p in destination.partition_columns], what="partition", table=name)
    if window is not None and destination.load_type != "merge_overwrite":
        raise DestinationError(
            f"destination table '{name}': a replace window needs load_type 'merge_overwrite', "
            f"not '{destination.load_type}'; drop configure.replace_by_watermark or change the load type"
        )
    if window is not None:
        window_columns = resolve_columns(frame, list(window.bounds), what="replace window", table=name)
        window = ReplaceWindow(dict(zip(window_columns, window.bounds.values(), strict=True)))
    return DeltaTarget(path=path, table=table, marker=marker, merge_keys=keys, partition_by=partitions, window=window)


def _recovered(destination: Destination, version: int, sequence: int) -> DestinationRuntimeInfo:
    return DestinationRuntimeInfo(
        operation_type=destination.load_type, table_version=version, commit_sequence=sequence, recovered=True
    )
