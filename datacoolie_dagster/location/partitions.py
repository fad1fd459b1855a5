"""Replay chunking declared in a dataflow's ``configure.dagster`` -> a Dagster partitions definition.

    "configure": {"dagster": {"partitions": {"start": "2024-01-01", "end": null,
                  "chunk_interval": {"months": 1}, "chunk_column": "order_date"},
                  "max_partitions_per_run": 3}}

Calendar intervals become time-window partitions whose windows are exactly the driver's aligned
chunks (months:3 = calendar quarters, hours:6 = 00/06/12/18 …); an integer ``step`` range becomes
static keys in range order (Dagster has no integer partitions). Materializing a partition replays
exactly its window. The settings are typed and checked in :mod:`datacoolie_dagster.location.dataflow_settings`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import dagster as dg

from datacoolie_core import DataFlow, MetadataError, MetadataIssue
from datacoolie_core.api import Chunk, chunk_key, chunk_windows
from datacoolie_dagster.constants import CONFIGURE_KEY
from datacoolie_dagster.location.dataflow_settings import PartitionsSettings, as_datetime, dagster_settings

_CRON = {"years": "0 0 1 1 *", "months": "0 0 1 {n} *", "days": "0 0 * * *", "hours": "0 {n} * * *",
         "minutes": "{n} * * * *", "weeks": "0 0 * * 1"}  # fmt: skip
_STEP_KEY = re.compile(r"(-?\d+)-(-?\d+)")
_FORMATS = {"years": "%Y", "months": "%Y-%m", "weeks": "%Y-%m-%d", "days": "%Y-%m-%d", "hours": "%Y-%m-%dT%H:%M",
            "minutes": "%Y-%m-%dT%H:%M"}  # fmt: skip


PartitionsConfig = PartitionsSettings
"""The former name of :class:`~datacoolie_dagster.location.dataflow_settings.PartitionsSettings`."""
dagster_config = dagster_settings
"""The former name of :func:`~datacoolie_dagster.location.dataflow_settings.dagster_settings`."""


def dagster_option(dataflow: DataFlow, key: str, default: Any = None) -> Any:
    """A key of the typed ``configure.dagster`` by name; prefer ``dagster_settings(dataflow).<key>``."""
    value = getattr(dagster_settings(dataflow), key, None)
    return default if value is None else value


@dataclass(frozen=True)
class TablePartitioning:
    """How one destination table is partitioned."""

    config: PartitionsConfig
    partitions_def: dg.PartitionsDefinition
    max_partitions_per_run: int | None

    @property
    def group_key(self) -> tuple[Any, ...]:
        """Tables with the same key share one multi_asset."""
        return (self.config.model_dump_json(), self.max_partitions_per_run)

    @property
    def backfill_policy(self) -> dg.BackfillPolicy:
        if self.max_partitions_per_run:
            return dg.BackfillPolicy.multi_run(self.max_partitions_per_run)
        return dg.BackfillPolicy.single_run()

    def window(self, partition_key: str) -> tuple[Any, Any]:
        """``[start, end)`` the partition replays, in the source's terms (datetimes in UTC or ints)."""
        return partition_window(self.partitions_def, partition_key)


def partition_window(partitions_def: dg.PartitionsDefinition, partition_key: str) -> tuple[Any, Any]:
    """``[start, end)`` of a partition of a table's ``partitions_def``: datetimes in UTC or ints.

    Only the partitions definition is needed, so a reader that knows a table by its asset (the IO
    manager) finds the same window its replay wrote.
    """
    if isinstance(partitions_def, dg.TimeWindowPartitionsDefinition):
        window = partitions_def.time_window_for_partition_key(partition_key)
        return window.start.astimezone(UTC), window.end.astimezone(UTC)
    match = _STEP_KEY.fullmatch(partition_key)  # "-200--100": negative bounds carry their own "-"
    if match is None:
        raise MetadataError(f"partition key '{partition_key}' is not an integer range 'start-end'")
    return int(match[1]), int(match[2])


def table_partitioning(dataflows: list[DataFlow]) -> TablePartitioning | None:
    """The partitioning of a destination table; fan-in dataflows must agree."""
    settings = [dagster_settings(d) for d in dataflows]
    declared = [s for s in settings if s.partitions is not None]
    if not declared:
        return None
    # the other keys (schedule, sensor, max_runs) are read per dataflow or per stage, not per table
    shapes = {(s.partitions.model_dump_json() if s.partitions else "", s.max_partitions_per_run) for s in declared}
    if len(declared) != len(dataflows) or len(shapes) > 1:
        names = ", ".join(f"'{d.name}'" for d in dataflows)
        raise MetadataError(
            [
                MetadataIssue(
                    f"configure.{CONFIGURE_KEY}",
                    "every dataflow writing one table must declare the same partitions and max_partitions_per_run",
                    subject=f"dataflows {names}",
                )
            ]
        )
    config = declared[0]
    assert config.partitions is not None
    return TablePartitioning(config.partitions, build_partitions_def(config.partitions), config.max_partitions_per_run)


def build_partitions_def(config: PartitionsSettings) -> dg.PartitionsDefinition:
    """A partitions definition whose keys are the driver's chunks of ``config`` (checked by its model)."""
    ((unit, amount),) = config.chunk_interval.items()
    if unit == "step":
        assert isinstance(config.start, int)
        assert isinstance(config.end, int)
        return dg.StaticPartitionsDefinition(
            [chunk_key(c) for c in chunk_windows(config.start, config.end, {"step": amount})]
        )
    # "*/n" in the month or hour field gives months 1, 1+n, … and hours 0, n, …: the driver's grid
    cron = _CRON[unit].format(n="*" if amount == 1 else f"*/{amount}")
    fmt = _FORMATS[unit]
    return dg.TimeWindowPartitionsDefinition(
        start=as_datetime(config.start).strftime(fmt),
        end=as_datetime(config.end).strftime(fmt) if config.end is not None else None,
        fmt=fmt,
        cron_schedule=cron,
        timezone=config.timezone,
    )


def partition_chunks(partitioning: TablePartitioning, keys: list[str]) -> list[Chunk]:
    """The replay chunks of ``keys``, one per partition, in key order."""
    return [Chunk(i, *partitioning.window(key)) for i, key in enumerate(keys)]


def contiguous_chunks(every: Sequence[str], todo: Sequence[str], size: int | None) -> list[list[str]]:
    """``todo`` cut into runs: contiguous in ``every`` (a gap starts a new run), at most ``size`` each."""
    position = {k: i for i, k in enumerate(every)}
    chunks: list[list[str]] = []
    for key in todo:
        last = chunks[-1] if chunks else None
        if last and position[key] == position[last[-1]] + 1 and (size is None or len(last) < size):
            last.append(key)
        else:
            chunks.append([key])
    return chunks
