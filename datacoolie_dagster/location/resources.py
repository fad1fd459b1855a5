"""``DataCoolieResource``: where the metadata and state live, and how the driver runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import dagster as dg

from datacoolie_core import DataCoolieRunConfig
from datacoolie_dagster.location.location_settings import DRIVER_FIELDS, RuntimeSettings

if TYPE_CHECKING:
    from datacoolie_core.api import DataCoolieDriver


class DataCoolieResource(dg.ConfigurableResource, RuntimeSettings):
    """The DataCoolie runtime for assets, jobs and sensors.

    Its fields are :class:`RuntimeSettings` (declared once, with the core run config's defaults).
    Relative paths resolve against the code location's working directory (``workspace.yaml``).
    """

    def run_config(self, **overrides: Any) -> DataCoolieRunConfig:
        values: dict[str, Any] = {name: getattr(self, name) for name in DRIVER_FIELDS}
        return DataCoolieRunConfig(**(values | {k: v for k, v in overrides.items() if v is not None}))

    def driver(self, **overrides: Any) -> DataCoolieDriver:
        """A driver over this resource's metadata; close it (``with``) when done."""
        from datacoolie_core.api import DataCoolieDriver  # Polars, deltalake: with the first run

        return DataCoolieDriver(
            metadata_base_path=self.metadata_path,
            state_base_path=self.state_base_path,
            state_url=self.state_url,
            log_base_path=self.log_base_path,
            sql_base_path=self.sql_base_path,
            artifact_base_path=self.artifact_base_path,
            config=self.run_config(**overrides),
        )
