"""Freshness: each table's Dagster freshness policy and the age of its stored watermark.

A table's settings are its dataflows' ``configure.dagster.freshness`` (the writers of one table must
agree), else its stage's default from ``build_definitions(freshness={stage: …})``, else the ``"*"``
default there. A table's own section replaces the default as a whole: what it declares is all that
applies to it.

Two questions, two mechanisms. *When did the table last load?* is Dagster's freshness policy,
evaluated by the daemon's freshness loop against the last materialization (the UI shows
fresh / warn / stale). *How new is the data it holds?* is the ``watermark_lag`` check: a run an
hour ago that found no new source rows keeps the table "fresh" for the policy, while the newest
watermark it stored may be days old.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

import dagster as dg
from dagster_shared.check import CheckError
from pydantic import ValidationError

from datacoolie_core import DataFlow, MetadataError, MetadataIssue
from datacoolie_core.api import did_you_mean
from datacoolie_core.columns import DATE_FOLDER_PARTITION
from datacoolie_dagster.constants import CONFIGURE_KEY
from datacoolie_dagster.location.dataflow_settings import FreshnessSettings, dagster_settings

EVERY_STAGE = "*"
"""The key of ``build_definitions(freshness=…)`` that applies to every stage without its own."""


def stage_freshness(
    defaults: Mapping[str, FreshnessSettings | Mapping[str, Any]] | None, stages: Iterable[str]
) -> dict[str, FreshnessSettings]:
    """``build_definitions(freshness=…)`` parsed: ``{stage or "*": settings}``.

    Raises:
        MetadataError: an unknown stage (with the closest one) or a bad key/value, all listed.
    """
    known = set(stages)
    parsed: dict[str, FreshnessSettings] = {}
    issues: list[MetadataIssue] = []
    for stage, value in (defaults or {}).items():
        if stage != EVERY_STAGE and stage not in known:
            hint = did_you_mean(stage, sorted(known))
            issues.append(MetadataIssue(f"freshness.{stage}", f"no stage '{stage}'{hint}", subject="build_definitions"))
            continue
        try:
            parsed[stage] = value if isinstance(value, FreshnessSettings) else FreshnessSettings.model_validate(value)
        except ValidationError as e:
            issues += [
                MetadataIssue(
                    ".".join(["freshness", stage, *(str(p) for p in err["loc"])]),
                    err["msg"],
                    subject="build_definitions",
                )
                for err in e.errors(include_url=False)
            ]
    if issues:
        raise MetadataError(issues)
    return parsed


def table_freshness(
    dataflows: Iterable[DataFlow], defaults: Mapping[str, FreshnessSettings], *, subject: str
) -> FreshnessSettings | None:
    """The freshness settings of the table ``dataflows`` write (see the module docstring).

    A default's ``max_watermark_lag`` skips a table without watermark columns (nothing to judge);
    the table's own section may not declare one.

    Raises:
        MetadataError: two writers of the table declare different settings, or the table declares
            a ``max_watermark_lag`` without having watermark columns.
    """
    flows = list(dataflows)
    declared = {str(d.name): s for d in flows if (s := dagster_settings(d).freshness) is not None}
    if len(set(declared.values())) > 1:
        names = ", ".join(f"'{n}'" for n in declared)
        message = "these dataflows write one table and so share one freshness; declare the same on each, or on one of them only"
        raise _issue("", message, subject=f"dataflows {names}")
    watermarked = any(d.source.watermark_columns for d in flows)
    if declared:
        settings = next(iter(declared.values()))
        if settings.max_watermark_lag is not None and not watermarked:
            message = (
                "the table has no watermark_columns, so there is no watermark to judge; "
                "declare source.watermark_columns or use fail_window (the age of the last load)"
            )
            raise _issue(".max_watermark_lag", message, subject=subject)
        return settings
    stage = str(flows[0].stage) if flows and flows[0].stage else EVERY_STAGE
    default = defaults.get(stage, defaults.get(EVERY_STAGE))
    if default is None or watermarked or default.max_watermark_lag is None:
        return default
    stripped = default.model_copy(update={"max_watermark_lag": None})
    return stripped if stripped.fail_window or stripped.cron else None


def _issue(path: str, message: str, *, subject: str) -> MetadataError:
    return MetadataError([MetadataIssue(f"configure.{CONFIGURE_KEY}.freshness{path}", message, subject=subject)])


def build_freshness_policy(settings: FreshnessSettings | None, *, subject: str) -> dg.FreshnessPolicy | None:
    """Dagster's policy for ``settings`` (``None`` when it declares only a watermark lag).

    Raises:
        MetadataError: Dagster refuses the values (a ``lower_bound`` longer than the cron's interval).
    """
    if settings is None or not (settings.fail_window or settings.cron):
        return None
    try:
        if settings.fail_window:
            return dg.FreshnessPolicy.time_window(fail_window=settings.fail_window, warn_window=settings.warn_window)
        assert settings.cron is not None  # the model requires cron and lower_bound together
        return dg.FreshnessPolicy.cron(
            deadline_cron=settings.cron,
            lower_bound_delta=settings.lower_bound or timedelta(minutes=1),
            timezone=settings.timezone,
        )
    except CheckError as e:  # Dagster's invariants (dagster_shared, a public package of the train)
        raise _issue("", str(e).split("Description: ", 1)[-1].strip(), subject=subject) from None


def watermark_ages(stored: Mapping[str, Mapping[str, Any] | None], now: datetime) -> dict[str, timedelta | None]:
    """Age of every stored watermark value, by ``dataflow.column``; ``None`` for a value that is not a time.

    A naive datetime is taken as UTC; a date as its midnight UTC. The date-folder pseudo watermark
    (a folder name, not a time of the data) is skipped.
    """
    ages: dict[str, timedelta | None] = {}
    for dataflow, values in stored.items():
        for column, value in (values or {}).items():
            if column.lower() != DATE_FOLDER_PARTITION:
                ages[f"{dataflow}.{column}"] = _age(value, now)
    return ages


def _age(value: Any, now: datetime) -> timedelta | None:
    if isinstance(value, datetime):
        return now - (value if value.tzinfo else value.replace(tzinfo=UTC))
    if isinstance(value, date):
        return now - datetime(value.year, value.month, value.day, tzinfo=UTC)
    return None


def format_duration(value: timedelta) -> str:
    """``1d 2h 3m`` (seconds dropped above a minute): how a lag reads in a check's description."""
    seconds = int(value.total_seconds())
    if seconds < 60:
        return f"{seconds}s"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    parts = [f"{days}d" if days else "", f"{hours}h" if hours else "", f"{rest // 60}m" if rest // 60 else ""]
    return " ".join(p for p in parts if p)
