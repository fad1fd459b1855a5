"""The execution engine: Polars (the only one), bound to a platform.

DataCoolie's driver takes an ``engine`` (Polars or Spark) that owns the platform. This engine is
always Polars + delta-rs; the object exists so code written for DataCoolie's constructor keeps working
and so the platform identity rule (one platform per driver and engine) has something to hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from datacoolie_core.errors import DataCoolieError


class PolarsEngine:
    """Polars + delta-rs execution.

    Args:
        platform: the platform the engine reads and writes through (default: attached by the driver).
        storage_options: object-store options for Polars and delta-rs (not needed for local paths).
    """

    name = "polars"

    def __init__(self, platform: Any | None = None, *, storage_options: Mapping[str, str] | None = None) -> None:
        self.platform = platform
        self.storage_options = dict(storage_options or {})

    def attach_platform(self, platform: Any) -> None:
        """Bind ``platform``; the same instance twice is fine, a different one is an error."""
        if self.platform is not None and self.platform is not platform:
            raise DataCoolieError(
                "the engine already has a different platform instance; give the driver and the engine the same one"
            )
        self.platform = platform


def ensure_engine(engine: Any | None) -> PolarsEngine:
    """The default engine, or the given one if it is Polars."""
    if engine is None:
        return PolarsEngine()
    if isinstance(engine, str):
        if engine.lower() != "polars":
            raise DataCoolieError(f"engine '{engine}' is not available; this runtime runs on Polars ('polars')")
        return PolarsEngine()
    if getattr(engine, "name", None) != "polars":
        raise DataCoolieError(f"engine {engine!r} is not supported; pass a PolarsEngine or 'polars'")
    return engine
