"""Metadata and run models (pydantic v2)."""

from datacoolie_core.models.connection import (
    CONNECTION_TYPE_FORMATS,
    BackwardConfig,
    Connection,
    ConnectionConfigure,
)
from datacoolie_core.models.dataflow import (
    LOAD_TYPES,
    DataFlow,
    Destination,
    DestinationConfigure,
    Source,
    SourceConfigure,
)
from datacoolie_core.models.run_config import DataCoolieRunConfig, ReplayConfig
from datacoolie_core.models.transform import (
    AdditionalColumn,
    HashColumn,
    MaskingRule,
    PartitionColumn,
    SchemaHint,
    SharedSchemaHint,
    Transform,
    TransformConfigure,
    ValueRule,
)

__all__ = [
    "CONNECTION_TYPE_FORMATS",
    "LOAD_TYPES",
    "AdditionalColumn",
    "BackwardConfig",
    "Connection",
    "ConnectionConfigure",
    "DataCoolieRunConfig",
    "DataFlow",
    "Destination",
    "DestinationConfigure",
    "HashColumn",
    "MaskingRule",
    "PartitionColumn",
    "ReplayConfig",
    "SchemaHint",
    "SharedSchemaHint",
    "Source",
    "SourceConfigure",
    "Transform",
    "TransformConfigure",
    "ValueRule",
]
