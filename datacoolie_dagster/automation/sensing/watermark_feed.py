"""What the watermark sensor reads: stored watermarks, who wrote them, and the windows they moved over.

:class:`WatermarkFeed` is the seam for stores: the file store today (:class:`FileWatermarkFeed`),
a PostgreSQL store later (its rows carry the writer's ``dataflow_run_id`` as a column, so its feed
needs no journal lookup).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Protocol

from datacoolie_core import FileProvider
from datacoolie_core.api import PendingCommit, WatermarkError, deserialize_watermark, is_metadata_url, url_provider
from datacoolie_dagster.location.partitions import TablePartitioning


@dataclass(frozen=True)
class WatermarkReading:
    """A stored watermark, as text (compared as is), and the dataflow run that wrote it if known."""

    text: str
    writer_run_id: str | None = None


class WatermarkFeed(Protocol):
    """Reads one dataflow's stored watermark for the sensor.

    ``read`` returns ``None`` when nothing is stored, and raises
    :class:`~datacoolie_core.errors.WatermarkError` when the stored value cannot be read. It must
    be cheap (the sensor calls it for every watched dataflow on every evaluation) and never write.
    """

    def read(self, dataflow_id: str) -> WatermarkReading | None: ...


class FileWatermarkFeed:
    """The file store's watermarks (``<state>/watermarks/<folder>/watermark_value.json``).

    The writer is the settled commit record beside the watermark when it holds the same watermark:
    the runner rewrites that record, naming its dataflow run, right after saving the watermark.
    """

    def __init__(
        self,
        metadata_path: str | os.PathLike[str],
        *,
        state_base_path: str | os.PathLike[str] | None = None,
        state_url: str | None = None,
    ) -> None:
        self._metadata_path = metadata_path
        self._state_base_path = state_base_path
        self._state_url = state_url
        self._provider: FileProvider | None = None

    def read(self, dataflow_id: str) -> WatermarkReading | None:
        provider = self._get_provider()
        text = provider.get_watermark(dataflow_id)
        if text is None:
            return None
        try:
            deserialize_watermark(text)  # a corrupt watermark is an error here too, not a change
            return WatermarkReading(text, _writer(provider, dataflow_id, text))
        except WatermarkError as e:
            path = provider.watermark_location(dataflow_id)
            raise WatermarkError(e.message, dataflow_id=dataflow_id, path=e.path or path) from e

    def _get_provider(self) -> FileProvider:
        if self._provider is None:  # built on first use: building the code location reads no state
            if is_metadata_url(self._metadata_path):  # the API's or the database's watermarks
                self._provider = url_provider(str(self._metadata_path), self._state_base_path, self._state_url)
            else:
                self._provider = FileProvider(
                    self._metadata_path, state_base_path=self._state_base_path, state_url=self._state_url
                )
        return self._provider


def _writer(provider: FileProvider, dataflow_id: str, text: str) -> str | None:
    record = provider.get_pending_commit(dataflow_id)
    if record is None:
        return None
    commit = PendingCommit.from_text(record, dataflow_id=dataflow_id)
    if not commit.settled or commit.watermark is None:
        return None
    return commit.dataflow_run_id if commit.watermark == deserialize_watermark(text) else None


def windows_between(partitioning: TablePartitioning, old: str | None, new: str) -> tuple[list[str], str | None]:
    """Partition keys whose windows hold values in ``(old, new]`` of the window column, and a problem.

    The window column is the reader's ``chunk_column``, looked up in the upstream's watermark (a
    watermark with a single column is used whatever its name). No old watermark: every window up to
    ``new``. A value that cannot be compared with the windows gives no key and says why.
    """
    column = partitioning.config.chunk_column
    before, after = (
        _value(deserialize_watermark(old) if old else None, column),
        _value(deserialize_watermark(new), column),
    )
    if after is None:
        return [], f"the watermark has no value for the window column '{column}' to map to windows"
    keys = []
    for key in partitioning.partitions_def.get_partition_keys():
        start, end = partitioning.window(key)
        try:
            if start <= after and (before is None or end > before):
                keys.append(key)
        except TypeError:
            return [], f"watermark value {after!r} cannot be compared with the windows ({start!r})"
    return keys, None


def _value(watermark: Mapping[str, Any] | None, column: str | None) -> Any:
    if not watermark:
        return None
    if column is not None and column in watermark:
        return _comparable(watermark[column])
    values = [v for k, v in watermark.items() if not k.startswith("__")]
    return _comparable(values[0]) if len(values) == 1 else None


def _comparable(value: Any) -> Any:
    """Datetimes in UTC (a naive one is taken as UTC, as the windows are), dates as midnight."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    return value
