"""datacoolie_dagster: DataCoolie metadata as a Dagster code location.

Assets per destination table, replay partitions, sharded driver jobs and checks, built from the
metadata by :func:`build_definitions` on ``datacoolie_core``'s public API only.
"""

from datacoolie_dagster.component import DataCoolieComponent
from datacoolie_dagster.factory import build_definitions
from datacoolie_dagster.resources import DataCoolieResource
from datacoolie_dagster.translator import DataCoolieTranslator, DataCoolieTranslatorData

__all__ = [
    "DataCoolieComponent",
    "DataCoolieResource",
    "DataCoolieTranslator",
    "DataCoolieTranslatorData",
    "build_definitions",
]
