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

import dagster as dg

from datacoolie_core import FileProvider
from datacoolie_core.api import is_metadata_url, url_provider
from datacoolie_dagster.location.factory import build_definitions
from datacoolie_dagster.location.location_settings import DataCoolieSettings


class DataCoolieComponent(dg.Component, dg.Resolvable, DataCoolieSettings):
    """DataCoolie metadata as assets, replay partitions and sharded stage jobs."""

    # The attributes are DataCoolieSettings' (every default declared there once); the paths among
    # them are relative to the project root (see the module docstring).

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        root = context.project_root
        metadata = self.metadata_path if is_metadata_url(self.metadata_path) else _under(root, self.metadata_path)
        state = _under(root, self.state_base_path) if self.state_base_path else None
        ensure_one_root(metadata, root, defs_file=context.path / "defs.yaml", state_base_path=state)
        paths = {name: _under(root, getattr(self, name)) for name in _PATHS if getattr(self, name)}
        settings = DataCoolieSettings(
            **(dict(self) | paths | {"metadata_path": metadata, "state_url": self.state_url or None})
        )
        return build_definitions(settings)


_PATHS = ("state_base_path", "log_base_path", "sql_base_path", "artifact_base_path")
"""The settings that are paths, resolved against the project root (with ``metadata_path``)."""


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
