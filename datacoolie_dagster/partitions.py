"""Replay chunking declared in a dataflow's ``configure.dagster`` -> a Dagster partitions definition.

    "configure": {"dagster": {"partitions": {"start": "2024-01-01", "end": null,
                  "chunk_interval": {"months": 1}, "chunk_column": "order_date"},
                  "max_partitions_per_run": 3}}

Calendar intervals become time-window partitions whose windows are exactly the driver's aligned
chunks (months:3 = calendar quarters, hours:6 = 00/06/12/18 …); an integer ``step`` range becomes
static keys in range order (Dagster has no integer partitions). Materializing a partition replays
exactly its window.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import dagster as dg
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from datacoolie_core import DataFlow, MetadataError, MetadataIssue
from datacoolie_core.orchestration.replay import Chunk, chunk_key, chunk_windows
from datacoolie_dagster.constants import CONFIGURE_KEY

_CRON = {"years": "0 0 1 1 *", "months": "0 0 1 {n} *", "days": "0 0 * * *", "hours": "0 {n} * * *",
         "minutes": "{n} * * * *", "weeks": "0 0 * * 1"}  # fmt: skip
_STEP_KEY = re.compile(r"(-?\d+)-(-?\d+)")
_FORMATS = {"years": "%Y", "months": "%Y-%m", "weeks": "%Y-%m-%d", "days": "%Y-%m-%d", "hours": "%Y-%m-%dT%H:%M",
            "minutes": "%Y-%m-%dT%H:%M"}  # fmt: skip


class PartitionsConfig(BaseModel):
    """``configure.dagster.partitions``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    start: int | date | datetime | str
    end: int | date | datetime | str | None = None
    chunk_interval: dict[str, int]
    chunk_column: str | None = None
    """Column a partition's window selects on; default the first watermark column."""
    timezone: str = "UTC"
    save_watermark: bool = False
    """Save the source-observed watermark after each partition (off: partitions never move state)."""


class DagsterConfig(BaseModel):
    """``configure.dagster`` of a dataflow (every key optional)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    partitions: PartitionsConfig | None = None
    max_partitions_per_run: int | None = Field(None, ge=1)


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
        if isinstance(self.partitions_def, dg.TimeWindowPartitionsDefinition):
            window = self.partitions_def.time_window_for_partition_key(partition_key)
            return window.start.astimezone(UTC), window.end.astimezone(UTC)
        match = _STEP_KEY.fullmatch(partition_key)  # "-200--100": negative bounds carry their own "-"
        if match is None:
            raise MetadataError(f"partition key '{partition_key}' is not an integer range 'start-end'")
        return int(match[1]), int(match[2])


def dagster_config(dataflow: DataFlow) -> DagsterConfig:
    """Parse ``configure.dagster`` of a dataflow; a bad value is a MetadataError naming the dataflow."""
    raw = dataflow.configure.get(CONFIGURE_KEY) or {}
    try:
        return DagsterConfig.model_validate(raw)
    except ValidationError as e:
        issues = [
            MetadataIssue(
                f"configure.{CONFIGURE_KEY}." + ".".join(str(p) for p in err["loc"]),
                err["msg"],
                subject=f"dataflow '{dataflow.name}'",
            )
            for err in e.errors(include_url=False)
        ]
        raise MetadataError(issues) from None


def dagster_option(dataflow: DataFlow, key: str, default: Any = None) -> Any:
    """An extra key of ``configure.dagster`` (``schedule``, ``sensor``, ``max_runs``), as written.

    Its owner checks the value (with the dataflow and the key in the error).
    """
    return (dagster_config(dataflow).model_extra or {}).get(key, default)


def table_partitioning(dataflows: list[DataFlow]) -> TablePartitioning | None:
    """The partitioning of a destination table; fan-in dataflows must agree."""
    configs = {d.name: dagster_config(d) for d in dataflows}
    declared = {name: c for name, c in configs.items() if c.partitions is not None}
    if not declared:
        return None
    if len(declared) != len(dataflows) or len({c.model_dump_json() for c in declared.values()}) > 1:
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
    name, config = next(iter(declared.items()))
    assert config.partitions is not None
    try:
        partitions_def = build_partitions_def(config.partitions)
    except MetadataError as e:  # name the dataflow: the bare config does not know it
        issues = [
            MetadataIssue(f"configure.{CONFIGURE_KEY}.partitions", i.message, subject=f"dataflow '{name}'")
            for i in e.issues
        ]
        raise MetadataError(issues) from None
    return TablePartitioning(config.partitions, partitions_def, config.max_partitions_per_run)


def build_partitions_def(config: PartitionsConfig) -> dg.PartitionsDefinition:
    """A partitions definition whose keys are the driver's chunks of ``config``."""
    if len(config.chunk_interval) != 1:
        raise MetadataError(
            f"configure.dagster.partitions.chunk_interval needs exactly one unit, got {config.chunk_interval}"
        )
    ((unit, amount),) = config.chunk_interval.items()
    if amount < 1:
        raise MetadataError(f"chunk_interval {{'{unit}': {amount}}} must be a positive integer")
    if unit == "step":
        return _static(config, amount)
    if unit not in _CRON:
        raise MetadataError(f"unknown chunk_interval unit '{unit}' (known: step, {', '.join(_CRON)})")
    if unit in ("days", "weeks", "years") and amount != 1:
        raise MetadataError(
            f"chunk_interval {{'{unit}': {amount}}} has no calendar alignment Dagster can express; "
            f"use {{'{unit}': 1}}, months, hours or minutes"
        )
    # "*/n" in the month or hour field gives months 1, 1+n, … and hours 0, n, …: the driver's grid
    cron = _CRON[unit].format(n="*" if amount == 1 else f"*/{amount}")
    fmt = _FORMATS[unit]
    start = _as_datetime(config.start)
    return dg.TimeWindowPartitionsDefinition(
        start=start.strftime(fmt),
        end=_as_datetime(config.end).strftime(fmt) if config.end is not None else None,
        fmt=fmt,
        cron_schedule=cron,
        timezone=config.timezone,
    )


def partition_chunks(partitioning: TablePartitioning, keys: list[str]) -> list[Chunk]:
    """The replay chunks of ``keys``, one per partition, in key order."""
    return [Chunk(i, *partitioning.window(key)) for i, key in enumerate(keys)]


def _static(config: PartitionsConfig, step: int) -> dg.StaticPartitionsDefinition:
    if config.end is None or not isinstance(config.start, int) or not isinstance(config.end, int):
        raise MetadataError("an integer 'step' partitioning needs integer start and end")
    return dg.StaticPartitionsDefinition(
        [chunk_key(c) for c in chunk_windows(config.start, config.end, {"step": step})]
    )


def _as_datetime(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            pass
    raise MetadataError(f"partition bound {value!r} is not a date or datetime")


def config_of(dataflow: DataFlow) -> Mapping[str, Any]:
    return dict(dataflow.configure.get(CONFIGURE_KEY) or {})
