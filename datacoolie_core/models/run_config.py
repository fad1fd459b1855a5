"""Run configuration: :class:`DataCoolieRunConfig` (M-47) and :class:`ReplayConfig` (M-48, replay seed)."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from datacoolie_core.models.base import Bool, StrList

CALENDAR_UNITS = ("years", "months", "weeks", "days", "hours", "minutes")
CHUNK_UNITS = (*CALENDAR_UNITS, "step")

ReplayBound = int | date | datetime
"""A replay bound: an integer sequence value, a date or a datetime."""


class _RunModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)  # no attribute docstrings: see MetadataModel


class WindowSpec(_RunModel):
    """Which windows of a column a write touched: ``[origin + k*every, origin + (k+1)*every)``.

    The caller (an orchestrator that partitions tables by this column) names the column; the
    runner reports the touched windows and their row counts in ``DestinationRuntimeInfo.touched``.
    """

    column: str
    """The column, as metadata names it (resolved like every metadata column name)."""
    every: str | int = "1d"
    """Window width: a polars duration (``"1h"``, ``"1d"``, ``"1mo"``) for date/datetime columns,
    a positive step for integer columns."""
    origin: int = 0
    """Integer windows start at ``origin + k * every`` (calendar windows align as polars truncates)."""

    @field_validator("every")
    @classmethod
    def _positive_width(cls, every: str | int) -> str | int:
        if isinstance(every, int) and every < 1:
            raise ValueError(f"a window step must be a positive integer, got {every}")
        if isinstance(every, str) and not every.strip():
            raise ValueError("a window width must be a polars duration such as '1h', '1d' or '1mo'")
        return every


class DataCoolieRunConfig(_RunModel):
    """How one driver invocation runs: sharding, concurrency, retries, dry run."""

    job_id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    job_num: int = Field(1, ge=1)
    """Number of shards the external orchestrator launches (indexes ``0..job_num-1``)."""
    job_index: int = Field(0, ge=0)
    """This shard's index."""
    max_workers: int = Field(4, ge=1)
    """Global cap on concurrently running dataflows in one executor invocation. The one default of
    the CLI, the Dagster resource, ``build_definitions`` and the component (they read it here)."""
    stop_on_error: Bool = False
    retry_count: int = Field(1, ge=0)
    """Retries after the first attempt; one by default, for commit conflicts with concurrent runs."""
    retry_delay: float = Field(5.0, ge=0)
    """Base delay in seconds; doubles on each retry, capped at 60 s."""
    dry_run: Bool = False
    retention_hours: float = Field(168, ge=0)
    """VACUUM retention of maintenance runs."""
    allowed_function_prefixes: StrList = Field(default_factory=list)
    """Dotted prefixes a ``python_function`` source may come from; empty allows all."""
    column_name_mode: Literal["lower", "snake"] = "lower"
    """Column-name sanitizer mode (transformer slot 90)."""
    run_attributes: dict[str, Any] = Field(default_factory=dict)
    """Free JSON object copied into the job's execution log."""
    touched_windows: dict[str, WindowSpec] = Field(default_factory=dict)
    """``dataflow_id -> WindowSpec``: report which windows each write of that dataflow touched."""

    @model_validator(mode="after")
    def _index_in_range(self) -> DataCoolieRunConfig:
        if self.job_index >= self.job_num:
            raise ValueError(f"job_index {self.job_index} must be below job_num {self.job_num}")
        return self


def _parse_bound(value: Any) -> Any:
    """``int`` stays; ``"2024-01-01"`` -> date; other ISO text -> datetime; digit text -> int."""
    if isinstance(value, bool):
        raise ValueError("a replay bound cannot be a boolean")
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.lstrip("+-").isdigit():
        return int(text)
    try:
        return date.fromisoformat(text) if len(text) == 10 else datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"replay bound '{value}' is not an integer, an ISO date or an ISO datetime") from None


Bound = Annotated[ReplayBound, BeforeValidator(_parse_bound)]


class ReplayConfig(_RunModel):
    """A bounded historical re-run ``[start, end)``, optionally in calendar or integer chunks."""

    start: Bound
    """Inclusive lower bound."""
    end: Bound
    """Exclusive upper bound."""
    chunk_interval: dict[str, int] | None = None
    """One unit: ``{"months": 1}``, ``{"days": 7}``, ``{"step": 100000}``; ``None`` = one bounded read."""
    save_watermark: Bool = False
    """Save the reader's observed watermark after each successful chunk (never a replay checkpoint)."""
    chunk_column: str | None = None
    """Column the range selects on; default ``source.watermark_columns[0]``."""

    @field_validator("chunk_interval")
    @classmethod
    def _one_positive_unit(cls, interval: dict[str, int] | None) -> dict[str, int] | None:
        if interval is None:
            return None
        if len(interval) != 1:
            raise ValueError(f"chunk_interval takes exactly one unit of {', '.join(CHUNK_UNITS)}; got {interval}")
        ((unit, amount),) = interval.items()
        if unit not in CHUNK_UNITS:
            raise ValueError(f"unknown chunk_interval unit '{unit}' (known: {', '.join(CHUNK_UNITS)})")
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
            raise ValueError(f"chunk_interval {unit} must be a positive integer, got {amount!r}")
        return interval

    @model_validator(mode="after")
    def _consistent_bounds(self) -> ReplayConfig:
        start, end = self.start, self.end
        if isinstance(start, int) or isinstance(end, int):
            if not (isinstance(start, int) and isinstance(end, int)):
                raise ValueError("start and end must both be integers or both be dates/datetimes")
        elif isinstance(start, datetime) != isinstance(end, datetime):
            # a date bound next to a datetime bound means midnight of that date
            start, end = _as_datetime(start, end), _as_datetime(end, start)
            object.__setattr__(self, "start", start)
            object.__setattr__(self, "end", end)
        if isinstance(start, datetime) and isinstance(end, datetime) and (start.tzinfo is None) != (end.tzinfo is None):
            raise ValueError("start and end must both be time-zone aware or both naive")
        if not start < end:  # type: ignore[operator]
            raise ValueError(f"start {start} must be before end {end} (the range is [start, end))")
        unit = next(iter(self.chunk_interval or {}), None)
        if unit == "step" and not isinstance(start, int):
            raise ValueError("chunk_interval step needs integer start and end")
        if unit in CALENDAR_UNITS and isinstance(start, int):
            raise ValueError(f"chunk_interval {unit} needs date or datetime start and end; use step for integers")
        if unit is not None and self.chunk_interval is not None:
            from datacoolie_core.orchestration.replay.windows import check_chunk_count  # windows imports this module

            check_chunk_count(start, end, unit, self.chunk_interval[unit])
        return self

    @property
    def chunk_unit(self) -> str | None:
        return next(iter(self.chunk_interval or {}), None)


def _as_datetime(value: date | datetime, other: date | datetime) -> datetime:
    if isinstance(value, datetime):
        return value
    tz = other.tzinfo if isinstance(other, datetime) else None
    return datetime(value.year, value.month, value.day, tzinfo=tz)
