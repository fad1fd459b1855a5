"""The code location's settings, declared once: :class:`DataCoolieSettings`.

    build_definitions(DataCoolieSettings(metadata_path="metadata/pipeline.json", max_workers=2))
    build_definitions("metadata/pipeline.json", max_workers=2)   # the same, field by field

Three layers, each a subset of the next, so a setting has one declaration and one default:

- :class:`DriverSettings`: how the driver runs a step (``max_workers``, ``retry_count``…). The
  defaults are read from core's :class:`~datacoolie_core.DataCoolieRunConfig`, so the CLI, the
  resource, the component and ``build_definitions`` cannot drift apart. A stage job's run config
  (``ShardJobConfig``) overrides exactly these fields, per launch.
- :class:`RuntimeSettings`: plus where the metadata, state and logs live. What ``DataCoolieResource``
  holds at run time.
- :class:`DataCoolieSettings`: plus what the code location builds (stages, jobs, schedules, sensors,
  retries of automated runs, limits, freshness, executor). What ``build_definitions`` and the
  ``defs.yaml`` of ``DataCoolieComponent`` take.
"""

from __future__ import annotations

import os
from typing import Any

import dagster as dg
from pydantic import ConfigDict, field_validator

from datacoolie_core import DataCoolieRunConfig

_RUN_FIELDS = DataCoolieRunConfig.model_fields


def _run_default(name: str) -> Any:
    """The core run config's default of ``name``: the one place a driver default is written."""
    return _RUN_FIELDS[name].default


class DriverSettings(dg.Config):
    """How the driver runs the dataflows of one step; defaults are the core run config's."""

    max_workers: int = _run_default("max_workers")
    """Global cap on concurrent dataflows inside one step."""
    retry_count: int = _run_default("retry_count")
    """Retries of a failed dataflow after its first attempt; one by default, for commit conflicts
    with concurrent runs."""
    retry_delay: float = _run_default("retry_delay")
    """Base delay between retries in seconds; doubles on each retry, capped at 60 s."""
    stop_on_error: bool = _run_default("stop_on_error")
    """Admit no new dataflow after the first failure."""


DRIVER_FIELDS = tuple(DriverSettings.model_fields)
"""The driver settings a stage job's run config may override per launch."""


class RuntimeSettings(DriverSettings):
    """Where the metadata, state and logs live, and how the driver runs: the resource's settings."""

    metadata_path: str
    """The DataCoolie metadata: a JSON, YAML or Excel file, a metadata API URL or a database URL
    (``sqlite:///…`` / ``postgresql://…?workspace_id=…``; URLs need ``state_base_path``)."""
    state_base_path: str | None = None
    """State root: watermarks live in ``<state_base_path>/watermarks``; default beside the metadata."""
    state_url: str | None = None
    """State database instead of files (``postgresql://user@host:port/db``), shared by every host and
    worker; set it with ``dg.EnvVar("DATACOOLIE_STATE_URL")`` so the password stays out of the UI.
    Excludes ``state_base_path``. See docs/state-store.md."""
    log_base_path: str | None = None
    """Execution and system logs root; no log files when unset (Dagster keeps its own event log);
    ``-``: JSON lines on the step's standard output, which Dagster keeps as the step's captured log."""
    sql_base_path: str | None = None
    """Root of the SQL files transforms name by relative path."""
    artifact_base_path: str | None = None
    """Root of the artifacts runs write beside the tables."""

    @field_validator("metadata_path", "state_base_path", "log_base_path", "sql_base_path", mode="before")
    @classmethod
    def _path_as_text(cls, value: Any) -> Any:
        # a pathlib.Path is as good as its text; Dagster config holds strings
        return os.fspath(value) if isinstance(value, os.PathLike) else value


class DataCoolieSettings(RuntimeSettings):
    """Every setting of the code location: the runtime plus what ``build_definitions`` builds."""

    # a misspelt setting (``max_worker=2``) is an error naming it, never silently dropped
    model_config = ConfigDict(extra="forbid")

    stages: str | list[str] | None = None
    """Only these stages (a name, a comma list or a list); default every stage."""
    include_jobs: bool = True
    """Also build the sharded stage jobs and the maintenance job."""
    schedules: dict[str, Any] | None = None
    """``{stage: {"cron": …, "timezone": …, "catchup": …}}``; wins over a dataflow's
    ``configure.dagster.schedule``. ``catchup: true`` adds the catch-up sensor."""
    include_sensors: bool = True
    """Add the source, automation, partition and watermark sensors."""
    sensor_interval_seconds: int = 30
    """The sensors' minimum interval."""
    sensor_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED
    """The sensors' default status (stopped: turn them on in the UI or with ``dagster sensor start``)."""
    run_retries: int = 3
    """Relaunches of a failed automated run (sensed, scheduled, backfilled); manual runs never are; 0: none."""
    retry_base_delay: float = 60.0
    """Seconds before the first relaunch, doubling per retry, plus up to 10 % jitter."""
    max_runs: int | dict[str, int] | None = None
    """At most this many live runs per stage (an int for every stage, or ``{stage: n}``); a mapping
    wins over ``configure.dagster.max_runs``, an int is the default."""
    freshness: dict[str, Any] | None = None
    """``{stage or "*": {fail_window, warn_window, cron, lower_bound, timezone, max_watermark_lag}}``:
    the default of the stage's tables that declare no ``configure.dagster.freshness``."""
    executor: str | dict[str, Any] | None = None
    """The executor of every job and asset run: ``multiprocess`` (Dagster's default),
    ``{celery: {broker, backend}}``, ``{k8s: {…}}`` or ``in_process`` (see docs/deployment.md)."""

    def runtime(self) -> dict[str, Any]:
        """The :class:`RuntimeSettings` fields of these settings, as keyword arguments for the resource."""
        return {name: getattr(self, name) for name in RuntimeSettings.model_fields}


__all__ = ["DRIVER_FIELDS", "DataCoolieSettings", "DriverSettings", "RuntimeSettings"]
