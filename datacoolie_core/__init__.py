"""datacoolie_core: a metadata-driven ETL engine on Polars and Delta Lake, compatible with DataCoolie metadata.

This package never imports dagster; ``datacoolie_dagster`` builds on its public API. The names below
load on first use (:mod:`datacoolie_core.lazy`): ``import datacoolie_core`` costs no Polars, sqlglot,
deltalake or pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datacoolie_core.lazy import lazy_exports

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "DataCoolieError": "datacoolie_core.errors",
        "MetadataError": "datacoolie_core.errors",
        "MetadataIssue": "datacoolie_core.errors",
        "TerminalError": "datacoolie_core.errors",
        "TransientError": "datacoolie_core.errors",
        "WatermarkError": "datacoolie_core.errors",
        "FileProvider": "datacoolie_core.metadata.file_provider",
        "validate_document": "datacoolie_core.metadata.validation",
        "Connection": "datacoolie_core.models.connection",
        "DataCoolieRunConfig": "datacoolie_core.models.run_config",
        "ReplayConfig": "datacoolie_core.models.run_config",
        "DataFlow": "datacoolie_core.models.dataflow",
        "Destination": "datacoolie_core.models.dataflow",
        "Source": "datacoolie_core.models.dataflow",
        "SchemaHint": "datacoolie_core.models.transform",
        "Transform": "datacoolie_core.models.transform",
        "DataFlowRuntimeInfo": "datacoolie_core.models.runtime",
        "ExecutionResult": "datacoolie_core.models.runtime",
        "DataCoolieDriver": "datacoolie_core.orchestration.driver",
        "create_driver": "datacoolie_core.orchestration.driver",
        "JobDistributor": "datacoolie_core.orchestration.distributor",
        "ParallelExecutor": "datacoolie_core.orchestration.parallel_executor",
        "RetryHandler": "datacoolie_core.orchestration.retry",
        "WatermarkManager": "datacoolie_core.watermark.manager",
    },
)

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
