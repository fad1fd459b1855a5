"""Metadata and run models (pydantic v2)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datacoolie_core.lazy import lazy_exports

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CONNECTION_TYPE_FORMATS": "datacoolie_core.models.connection",
        "BackwardConfig": "datacoolie_core.models.connection",
        "Connection": "datacoolie_core.models.connection",
        "ConnectionConfigure": "datacoolie_core.models.connection",
        "LOAD_TYPES": "datacoolie_core.models.dataflow",
        "DataFlow": "datacoolie_core.models.dataflow",
        "Destination": "datacoolie_core.models.dataflow",
        "DestinationConfigure": "datacoolie_core.models.dataflow",
        "Source": "datacoolie_core.models.dataflow",
        "SourceConfigure": "datacoolie_core.models.dataflow",
        "DataCoolieRunConfig": "datacoolie_core.models.run_config",
        "ReplayConfig": "datacoolie_core.models.run_config",
        "AdditionalColumn": "datacoolie_core.models.transform",
        "HashColumn": "datacoolie_core.models.transform",
        "MaskingRule": "datacoolie_core.models.transform",
        "PartitionColumn": "datacoolie_core.models.transform",
        "SchemaHint": "datacoolie_core.models.transform",
        "SharedSchemaHint": "datacoolie_core.models.transform",
        "Transform": "datacoolie_core.models.transform",
        "TransformConfigure": "datacoolie_core.models.transform",
        "ValueRule": "datacoolie_core.models.transform",
    },
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
