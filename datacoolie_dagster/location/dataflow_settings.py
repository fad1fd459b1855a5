"""``configure.dagster`` of a dataflow, typed: every key the Dagster layer reads, unknown keys rejected.

    "configure": {"dagster": {
        "partitions": {"start": "2024-01-01", "chunk_interval": {"months": 1}, "chunk_column": "created_at"},
        "max_partitions_per_run": 3,
        "schedule": {"cron": "0 * * * *", "timezone": "Europe/Paris", "catchup": true},
        "sensor": true,
        "max_runs": 2,
        "freshness": {"fail_window": "24h", "warn_window": "12h", "max_watermark_lag": "2h"}}}

A typo (``max_partition_per_run``, ``schedul``, ``sensr``) is a :class:`MetadataError` at load naming
the file, the JSON path (``dataflows[3].configure.dagster.max_partition_per_run``) and the closest
key. Core's validator runs :func:`validate_section` through the ``datacoolie.configure_sections``
entry point (``datacoolie validate --strict`` and every ``FileProvider`` load); the readers
(partitions, schedules, sensors, limits) call :func:`dagster_settings`, parsed once per section.

Pure pydantic: no Dagster import, so core can load this module without loading Dagster. Adding a
key is one line in :class:`DagsterSettings` (plus its row in ``docs/dagster-settings.md``).
"""

from __future__ import annotations

import functools
import json
import re
from datetime import date, datetime, timedelta
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from datacoolie_core import DataFlow, MetadataError, MetadataIssue
from datacoolie_core.api import CALENDAR_UNITS, CHUNK_UNITS, Owner, did_you_mean, issues_from_validation_error
from datacoolie_dagster.constants import CONFIGURE_KEY

_FLAGS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


class _Settings(BaseModel):
    # strict as core's metadata models: a string is not an integer, an unknown key is an error
    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True
    )  # no use_attribute_docstrings: it tokenizes the source at import


def _timezone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone '{value}' (use an IANA name like 'Europe/Paris')") from None
    return value


def _flag(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in _FLAGS:
        return _FLAGS[value.strip().lower()]
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _positive(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"must be a positive integer, got {value!r}")
    return value


_DURATION = re.compile(r"(\d+)\s*([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: Any) -> Any:
    """``"2h"``, ``"90m"``, ``"1d12h"`` (units ``s m h d w``) -> ``timedelta``; other types pass to pydantic."""
    if not isinstance(value, str):
        return value
    text = value.strip().lower()
    parts = _DURATION.findall(text)
    if not parts or _DURATION.sub("", text).strip():
        raise ValueError(f"'{value}' is not a duration like '30m', '2h', '1d' or '1h30m' (units: s, m, h, d, w)")
    return timedelta(seconds=sum(int(n) * _UNIT_SECONDS[unit] for n, unit in parts))


PositiveInt = Annotated[int, BeforeValidator(_positive)]
Flag = Annotated[bool, BeforeValidator(_flag)]
"""``true``/``false``, or one of the strings ``"true" "yes" "1" "false" "no" "0"`` (any case)."""
TimeZone = Annotated[str, BeforeValidator(lambda v: _timezone(v) if isinstance(v, str) else v)]
Duration = Annotated[timedelta, BeforeValidator(parse_duration)]
"""A duration written ``"30m"``, ``"2h"``, ``"1d"``, ``"1h30m"`` (units ``s m h d w``)."""


class PartitionsSettings(_Settings):
    """``configure.dagster.partitions``: the replay chunking a partitioned table is cut into."""

    start: int | date | datetime | str
    """First bound: an ISO date/datetime for a calendar interval, an integer for ``step``."""
    end: int | date | datetime | str | None = None
    """Exclusive last bound; ``None`` (calendar units only) = partitions up to now."""
    chunk_interval: dict[str, StrictInt]
    """One unit: ``{"months": 1}``, ``{"hours": 6}``, ``{"step": 100}``."""
    chunk_column: str | None = None
    """Column a partition's window selects on; default the first watermark column."""
    timezone: TimeZone = "UTC"
    """Time zone of calendar partitions (an IANA name)."""
    save_watermark: Flag = False
    """Save the source-observed watermark after each partition (off: partitions never move state)."""

    @field_validator("chunk_interval")
    @classmethod
    def _one_unit(cls, interval: dict[str, int]) -> dict[str, int]:
        if len(interval) != 1:
            raise ValueError(f"chunk_interval needs exactly one unit of {', '.join(CHUNK_UNITS)}; got {interval}")
        ((unit, amount),) = interval.items()
        if unit not in CHUNK_UNITS:
            hint = did_you_mean(unit, CHUNK_UNITS)
            raise ValueError(f"unknown chunk_interval unit '{unit}'{hint} (known: {', '.join(CHUNK_UNITS)})")
        if amount < 1:
            raise ValueError(f"chunk_interval {{'{unit}': {amount}}} must be a positive integer")
        if unit in ("days", "weeks", "years") and amount != 1:
            raise ValueError(
                f"chunk_interval {{'{unit}': {amount}}} has no calendar alignment Dagster can express; "
                f"use {{'{unit}': 1}}, months, hours or minutes"
            )
        return interval

    @model_validator(mode="after")
    def _bounds_fit_the_unit(self) -> PartitionsSettings:
        ((unit, _),) = self.chunk_interval.items()
        if unit == "step":
            if not all(isinstance(b, int) and not isinstance(b, bool) for b in (self.start, self.end)):
                raise ValueError("an integer 'step' partitioning needs integer start and end")
            return self
        assert unit in CALENDAR_UNITS
        for bound in (self.start, self.end):
            if bound is not None:
                as_datetime(bound)
        return self


def as_datetime(value: Any) -> datetime:
    """A calendar partition bound as a (naive) datetime; ``ValueError`` if it is not a date."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            pass
    raise ValueError(f"partition bound {value!r} is not a date or datetime (e.g. '2024-01-01')")


class ScheduleSettings(_Settings):
    """``configure.dagster.schedule`` (or ``build_definitions(schedules={stage: …})``): when a stage job runs."""

    cron: str
    """A 5-field cron string (``"0 * * * *"``) or ``@hourly``/``@daily``/``@weekly``/``@monthly``/``@yearly``."""
    timezone: TimeZone = "UTC"
    """Time zone the cron is read in (an IANA name)."""
    catchup: Flag = False
    """Run every fire missed while nothing evaluated the schedule (else only the latest, as Dagster)."""

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        if not is_cron(value):
            raise ValueError(f"'{value}' is not a 5-field cron string like '0 * * * *'")
        return value


class FreshnessSettings(_Settings):
    """``configure.dagster.freshness`` (or ``build_definitions(freshness={stage: …})``): how old a table may get.

    A time window (``fail_window``, optional ``warn_window``) or a deadline ``cron`` (with
    ``lower_bound``) becomes the asset's Dagster freshness policy; ``max_watermark_lag`` adds the
    ``watermark_lag`` check. Any one of them alone is enough.
    """

    fail_window: Duration | None = None
    """The table fails its freshness policy when its last materialization is older than this."""
    warn_window: Duration | None = None
    """It warns when the last materialization is older than this (shorter than ``fail_window``)."""
    cron: str | None = None
    """A deadline cron: by each tick the table must have materialized within ``lower_bound`` before it."""
    lower_bound: Duration | None = None
    """With ``cron``: how long before a deadline a materialization counts (at most the cron's interval)."""
    timezone: TimeZone = "UTC"
    """Time zone the ``cron`` is read in (an IANA name)."""
    max_watermark_lag: Duration | None = None
    """The ``watermark_lag`` check fails when the newest stored watermark is older than this."""

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, value: str | None) -> str | None:
        if value is not None and not is_cron(value):
            raise ValueError(f"'{value}' is not a 5-field cron string like '0 9 * * *'")
        return value

    @model_validator(mode="after")
    def _one_policy(self) -> FreshnessSettings:
        windows = [w for w in (self.fail_window, self.warn_window, self.lower_bound, self.max_watermark_lag) if w]
        if any(w < timedelta(minutes=1) for w in windows):
            raise ValueError("freshness durations must be at least 1 minute (Dagster evaluates by the minute)")
        if self.cron and self.fail_window:
            raise ValueError("give either fail_window (a time window) or cron (a deadline), not both")
        if self.warn_window and not (self.fail_window and self.warn_window < self.fail_window):
            raise ValueError("warn_window needs a fail_window longer than it")
        if bool(self.cron) != bool(self.lower_bound):
            raise ValueError("cron and lower_bound go together (a deadline and how long before it counts)")
        if not (self.fail_window or self.cron or self.max_watermark_lag):
            raise ValueError("freshness needs fail_window, cron (with lower_bound) or max_watermark_lag")
        return self


class DagsterSettings(_Settings):
    """``configure.dagster`` of a dataflow. Every key is optional; a new key is one field here."""

    partitions: PartitionsSettings | None = None
    """Partition the dataflow's table by replay chunk (see :mod:`datacoolie_dagster.location.partitions`)."""
    max_partitions_per_run: PositiveInt | None = None
    """A backfill runs at most this many partitions per run (default: all in one run)."""
    schedule: ScheduleSettings | None = None
    """Run the dataflow's stage job on a cron (the stage's dataflows must agree)."""
    sensor: Flag = True
    """``false`` keeps the table out of every automatic trigger: source sensor and automation."""
    max_runs: PositiveInt | None = None
    """At most this many live runs of the stage (the smallest of its dataflows wins)."""
    freshness: FreshnessSettings | None = None
    """How old the dataflow's table may get (the dataflows of one table must agree)."""


def validate_section(value: Any, *, owner: Owner) -> list[MetadataIssue]:
    """The ``datacoolie.configure_sections`` entry point for ``configure.dagster``.

    Returns the problems with paths relative to the section (``max_partition_per_run``,
    ``partitions.chunk_interval``); core puts the file and the object's path in front.
    """
    if owner != "dataflow":
        return [
            MetadataIssue(
                "",
                "Dagster settings are read from a dataflow's configure only; this one is ignored "
                "(move it to the dataflows that use this connection)",
                severity="warning",
            )
        ]
    try:
        parse_settings(value)
    except ValidationError as e:
        return issues_from_validation_error(e, prefix="", model=DagsterSettings)
    return []


def parse_settings(value: Any) -> DagsterSettings:
    """``configure.dagster`` as written (``None`` = every default) -> :class:`DagsterSettings`.

    Raises:
        ValidationError: a key or value the model rejects.
    """
    if value is None:
        return DagsterSettings()
    if isinstance(value, dict):
        return _parse_cached(json.dumps(value, sort_keys=True, default=str))
    return DagsterSettings.model_validate(value)  # not an object: raises, naming the section


@functools.lru_cache(maxsize=1024)
def _parse_cached(text: str) -> DagsterSettings:
    # keyed by content: each dataflow's section is parsed once however many readers ask
    return DagsterSettings.model_validate(json.loads(text))


def dagster_settings(dataflow: DataFlow) -> DagsterSettings:
    """The typed ``configure.dagster`` of ``dataflow``.

    Loaded metadata was checked already (by the entry point); for a dataflow built in code a bad
    section is a :class:`MetadataError` naming the dataflow and the key, with the closest valid one.
    """
    try:
        return parse_settings(dataflow.configure.get(CONFIGURE_KEY))
    except ValidationError as e:
        issues = issues_from_validation_error(
            e, prefix=f"configure.{CONFIGURE_KEY}", model=DagsterSettings, subject=f"dataflow '{dataflow.name}'"
        )
        raise MetadataError(issues) from None


# --- cron, without Dagster ------------------------------------------------------------------------

_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
# spelled out: calendar.month_abbr follows the process locale, cron names do not
_MONTHS = {
    name: i + 1
    for i, name in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])
}
_DAYS = {name: i for i, name in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
_FIELDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (1, 12, _MONTHS),
    (0, 7, _DAYS),
)
_ITEM = re.compile(r"(?P<last>l)|(?P<nth>[0-7])#[1-5]|(?P<range>\*|\?|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/(?P<step>\d+))?")


def is_cron(text: str) -> bool:
    """Whether Dagster 1.13 accepts ``text`` as a cron string (5 fields or a macro), without Dagster."""
    text = text.strip().lower()
    if text in _MACROS:
        return True
    fields = text.split()
    if len(fields) != len(_FIELDS):
        return False
    if not all(_field_ok(f, i) for i, f in enumerate(fields)):
        return False
    days, months = fields[2], fields[3]
    # Dagster refuses a single day that never exists in a single month (Feb 30/31)
    return not (months in ("2", "feb") and days in ("30", "31"))


def _field_ok(field: str, index: int) -> bool:
    low, high, names = _FIELDS[index]
    for item in field.split(","):
        match = _ITEM.fullmatch(item)
        if match is None or (match["last"] and index != 2) or (match["nth"] and index != 4):
            return False
        if match["range"] == "?" and index not in (2, 4):  # "any" exists for the day fields only
            return False
        if match["step"] is not None and int(match["step"]) < 1:
            return False
        if match["range"] and match["range"] not in ("*", "?"):
            values = [_value(v, names) for v in match["range"].split("-")]
            if not all(v is not None and low <= v <= high for v in values):
                return False
    return True


def _value(token: str, names: dict[str, int]) -> int | None:
    if token.isdigit():
        return int(token)
    return names.get(token)


__all__ = [
    "DagsterSettings",
    "Duration",
    "Flag",
    "FreshnessSettings",
    "PartitionsSettings",
    "ScheduleSettings",
    "as_datetime",
    "dagster_settings",
    "is_cron",
    "parse_duration",
    "parse_settings",
    "validate_section",
]
