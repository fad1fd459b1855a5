"""``DataCoolieComponent``: the same factory for ``dg`` projects, configured in ``defs.yaml``.

    # src/<project>/defs/datacoolie/defs.yaml
    type: datacoolie_dagster.DataCoolieComponent
    attributes:
      metadata_path: metadata/pipeline.json
      stages: [landing2bronze, bronze2silver]
      state_base_path: data/state
      max_workers: 4
      schedules:
        bronze2silver: {cron: "0 * * * *", timezone: Europe/Paris, catchup: true}
      max_runs: {bronze2silver: 1}

**One root.** Relative paths resolve against the *project root* (the folder of the project's
``pyproject.toml``, where ``dg`` runs): the component's own paths (``metadata_path``,
``state_base_path``, ``log_base_path``) and the metadata's relative ``base_path`` s, which
DataCoolie resolves against the working directory. So a code location started from anywhere else
is refused at load when the metadata has relative base paths (its tables would silently go
elsewhere); ``dg dev`` / ``dagster dev`` started from the project root is the normal case.
``dg list components`` finds this class through the ``dagster_dg_cli.registry_modules`` entry point.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg

from datacoolie_core import FileProvider
from datacoolie_core.metadata.locations import is_metadata_url, url_provider
from datacoolie_dagster.location.factory import build_definitions


class DataCoolieComponent(dg.Component, dg.Resolvable, dg.Model):
    """DataCoolie metadata as assets, replay partitions and sharded stage jobs."""

    metadata_path: str
    """The DataCoolie metadata file (JSON, YAML or Excel), relative to the project root, or a metadata
    API or database URL (``postgresql://…?workspace_id=…``; needs ``state_base_path``)."""
    stages: list[str] | None = None
    """Only these stages; default every stage."""
    state_base_path: str | None = None
    """Watermarks root (``<state>/watermarks``), relative to the project root; default beside the metadata file."""
    state_url: str | None = None
    """State database instead of files (``postgresql://…``), e.g. ``"{{ env.DATACOOLIE_STATE_URL }}"``;
    excludes ``state_base_path`` (docs/state-store.md)."""
    log_base_path: str | None = None
    """Execution and system logs root, relative to the project root; no log files when unset."""
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
    freshness: dict[str, dict[str, Any]] | None = None
    """``{stage or "*": {fail_window, warn_window, cron, lower_bound, timezone, max_watermark_lag}}``."""
    executor: str | dict[str, dict[str, Any] | None] | None = None
    """The executor of every job and asset run: ``multiprocess`` (default), ``{celery: {broker, backend}}``,
    ``{k8s: {…}}`` or ``in_process`` (see ``docs/deployment.md``)."""

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        root = context.project_root
        metadata = self.metadata_path if is_metadata_url(self.metadata_path) else _under(root, self.metadata_path)
        state = _under(root, self.state_base_path) if self.state_base_path else None
        ensure_one_root(metadata, root, defs_file=context.path / "defs.yaml", state_base_path=state)
        return build_definitions(
            metadata,
            stages=self.stages,
            state_base_path=state,
            state_url=self.state_url or None,
            log_base_path=_under(root, self.log_base_path) if self.log_base_path else None,
            max_workers=self.max_workers,
            retry_count=self.retry_count,
            retry_delay=self.retry_delay,
            include_jobs=self.include_jobs,
            schedules=self.schedules,
            include_sensors=self.include_sensors,
            run_retries=self.run_retries,
            retry_base_delay=self.retry_base_delay,
            max_runs=self.max_runs,
            freshness=self.freshness,
            executor=self.executor,
        )


def _under(root: Path, path: str) -> Path:
    return Path(path) if Path(path).is_absolute() else root / path


def ensure_one_root(
    metadata: str | Path, root: Path, *, defs_file: Path, state_base_path: str | os.PathLike[str] | None = None
) -> None:
    """Refuse to load when the metadata's relative base paths would not resolve against ``root``.

    Raises:
        ValueError: naming the base paths, the working directory, the project root and the fix.
    """
    cwd = Path.cwd()
    if cwd.resolve() == root.resolve():
        return
    relative = relative_base_paths(metadata, state_base_path=state_base_path)
    if relative:
        raise ValueError(
            f"{defs_file}: the metadata's relative base_path {', '.join(map(repr, relative))} resolve against "
            f"the working directory {cwd}, and this component's paths against the project root {root}; "
            f"start dg / dagster from {root}, or make those base paths absolute"
        )


def relative_base_paths(
    metadata: str | os.PathLike[str], *, state_base_path: str | os.PathLike[str] | None = None
) -> list[str]:
    """The relative ``configure.base_path`` of the metadata's connections (URIs are absolute)."""
    provider = url_provider(str(metadata), state_base_path) if is_metadata_url(metadata) else FileProvider(metadata)
    provider.initialize()
    try:
        paths = {c.base_path for c in provider.get_connections(active_only=False) if c.base_path}
    finally:
        provider.close()
    return sorted(p for p in paths if "://" not in p and not Path(p).is_absolute())
