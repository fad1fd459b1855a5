"""datacoolie_dagster: DataCoolie metadata as a Dagster code location.

Assets per destination table, replay partitions, sharded driver jobs and checks, built from the
metadata by :func:`build_definitions` on ``datacoolie_core``'s public API only.

The re-exports load on first use: core's validator imports :mod:`datacoolie_dagster.location.dataflow_settings` (the
``configure.dagster`` check, pure pydantic) without paying for Dagster's import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datacoolie_dagster.location.component import DataCoolieComponent
    from datacoolie_dagster.location.factory import build_definitions
    from datacoolie_dagster.location.io_manager import DataCoolieIOManager
    from datacoolie_dagster.location.resources import DataCoolieResource
    from datacoolie_dagster.location.translator import DataCoolieTranslator, DataCoolieTranslatorData

_EXPORTS = {
    "DataCoolieComponent": "datacoolie_dagster.location.component",
    "DataCoolieIOManager": "datacoolie_dagster.location.io_manager",
    "DataCoolieResource": "datacoolie_dagster.location.resources",
    "DataCoolieTranslator": "datacoolie_dagster.location.translator",
    "DataCoolieTranslatorData": "datacoolie_dagster.location.translator",
    "build_definitions": "datacoolie_dagster.location.factory",
}

__all__ = [
    "DataCoolieComponent",
    "DataCoolieIOManager",
    "DataCoolieResource",
    "DataCoolieTranslator",
    "DataCoolieTranslatorData",
    "build_definitions",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'datacoolie_dagster' has no attribute '{name}'")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # once: later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    # dg discovers components with dir() + getattr(): the lazy names must be listed
    return sorted({*globals(), *__all__})
