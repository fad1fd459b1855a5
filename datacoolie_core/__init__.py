"""datacoolie_core: a metadata-driven ETL engine on Polars and Delta Lake, compatible with DataCoolie metadata.

This package never imports dagster; ``datacoolie_dagster`` builds on its public API.
"""

from datacoolie_core.errors import (
    DataCoolieError,
    MetadataError,
    MetadataIssue,
    TerminalError,
    TransientError,
    WatermarkError,
)
from datacoolie_core.metadata import FileProvider, validate_document
from datacoolie_core.models import (
    Connection,
    DataCoolieRunConfig,
    DataFlow,
    Destination,
    ReplayConfig,
    SchemaHint,
    Source,
    Transform,
)
from datacoolie_core.models.runtime import DataFlowRuntimeInfo, ExecutionResult
from datacoolie_core.orchestration import (
    DataCoolieDriver,
    JobDistributor,
    ParallelExecutor,
    RetryHandler,
    create_driver,
)
from datacoolie_core.watermark import WatermarkManager

__version__ = "0.1.0"

__all__ = [
    "Connection",
    "DataCoolieDriver",
    "DataFlowRuntimeInfo",
    "ExecutionResult",
    "JobDistributor",
    "ParallelExecutor",
    "RetryHandler",
    "create_driver",
    "DataCoolieError",
    "DataCoolieRunConfig",
    "DataFlow",
    "Destination",
    "FileProvider",
    "MetadataError",
    "MetadataIssue",
    "ReplayConfig",
    "SchemaHint",
    "Source",
    "TerminalError",
    "Transform",
    "TransientError",
    "WatermarkError",
    "WatermarkManager",
    "__version__",
    "validate_document",
]
