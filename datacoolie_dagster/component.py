"""``DataCoolieComponent``: the same factory for ``dg`` projects, configured in ``defs.yaml``.

    # defs/datacoolie/defs.yaml
    type: datacoolie_dagster.DataCoolieComponent
    attributes:
      metadata_path: metadata/pipeline.json
      stages: [landing2bronze, bronze2silver]
      state_base_path: data/state
      max_workers: 4
      schedules:
        bronze2silver: {cron: "0 * * * *", timezone: Europe/Paris, catchup: true}
      max_runs: {bronze2silver: 1}

Relative paths resolve against the folder holding ``defs.yaml``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

from datacoolie_dagster.factory import build_definitions


class DataCoolieComponent(dg.Component, dg.Resolvable, dg.Model):
    """DataCoolie metadata as assets, replay partitions and sharded stage jobs."""

    metadata_path: str
    """The DataCoolie metadata file (JSON or YAML)."""
    stages: list[str] | None = None
    """Only these stages; default every stage."""
    state_base_path: str | None = None
    """Watermarks root (``<state>/watermarks``); default beside the metadata file."""
    log_base_path: str | None = None
    max_workers: int = 4
    retry_count: int = 0
    retry_delay: float = 5.0
    include_jobs: bool = True
    schedules: dict[str, dict[str, Any]] | None = None
    """``{stage: {cron, timezone, catchup}}``; see ``build_definitions``."""
    include_sensors: bool = True
    run_retries: int = 3
    """Retries of failed automated runs (60 s doubling + jitter); 0: none."""
    retry_base_delay: float = 60.0
    max_runs: int | dict[str, int] | None = None
    """Live runs per stage (an int for every stage, or ``{stage: n}``)."""

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        def resolve(path: str | None) -> Path | None:
            return None if path is None else (Path(path) if Path(path).is_absolute() else context.path / path)

        metadata = resolve(self.metadata_path)
        assert metadata is not None
        return build_definitions(
            metadata,
            stages=self.stages,
            state_base_path=resolve(self.state_base_path),
            log_base_path=resolve(self.log_base_path),
            max_workers=self.max_workers,
            retry_count=self.retry_count,
            retry_delay=self.retry_delay,
            include_jobs=self.include_jobs,
            schedules=self.schedules,
            include_sensors=self.include_sensors,
            run_retries=self.run_retries,
            retry_base_delay=self.retry_base_delay,
            max_runs=self.max_runs,
        )
