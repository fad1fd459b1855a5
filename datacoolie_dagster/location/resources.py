"""``DataCoolieResource``: where the metadata and state live, and how the driver runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import dagster as dg

from datacoolie_core import DataCoolieRunConfig

if TYPE_CHECKING:
    from datacoolie_core.orchestration.driver import DataCoolieDriver


class DataCoolieResource(dg.ConfigurableResource):
    """The DataCoolie runtime for assets, jobs and sensors.

    Relative paths resolve against the code location's working directory (``workspace.yaml``).
    """

    metadata_path: str
    """The DataCoolie metadata file (JSON or YAML)."""
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
    artifact_base_path: str | None = None
    max_workers: int = 4
    """Global cap on concurrent dataflows inside one step."""
    retry_count: int = 1
    """Retries of a failed dataflow; one by default, for commit conflicts with concurrent runs."""
    retry_delay: float = 5.0
    stop_on_error: bool = False

    def run_config(self, **overrides: Any) -> DataCoolieRunConfig:
        values: dict[str, Any] = {
            "max_workers": self.max_workers,
            "retry_count": self.retry_count,
            "retry_delay": self.retry_delay,
            "stop_on_error": self.stop_on_error,
        }
        return DataCoolieRunConfig(**(values | {k: v for k, v in overrides.items() if v is not None}))

    def driver(self, **overrides: Any) -> DataCoolieDriver:
        """A driver over this resource's metadata; close it (``with``) when done."""
        from datacoolie_core.orchestration.driver import DataCoolieDriver  # Polars, deltalake: with the first run

        return DataCoolieDriver(
            metadata_base_path=self.metadata_path,
            state_base_path=self.state_base_path,
            state_url=self.state_url,
            log_base_path=self.log_base_path,
            sql_base_path=self.sql_base_path,
            artifact_base_path=self.artifact_base_path,
            config=self.run_config(**overrides),
        )
