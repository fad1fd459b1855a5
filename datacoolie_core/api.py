"""What integrations build on: the one module an orchestrator imports from ``datacoolie_core``.

``datacoolie_dagster`` imports from here (and from the package root and :mod:`datacoolie_core.columns`)
only; ``tests/test_import_graph.py`` holds it to that. A name here is a promise: it keeps its meaning
across releases of the 0.x line or is deprecated first; everything else in core may move.

Every name loads on first use (:mod:`datacoolie_core.lazy`): importing this module costs nothing,
and ``from datacoolie_core.api import DataFlow`` loads the models, not Polars or deltalake.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datacoolie_core.lazy import lazy_exports

if TYPE_CHECKING:
    from datacoolie_core.cli.output import run_masked
    from datacoolie_core.cli.progress import describe
    from datacoolie_core.destinations.touched import touched_windows
    from datacoolie_core.errors import (
        DataCoolieError,
        MaskedError,
        MetadataError,
        MetadataIssue,
        SourceError,
        TransformError,
        WatermarkError,
    )
    from datacoolie_core.metadata.addresses import is_metadata_url, url_provider
    from datacoolie_core.metadata.file_provider import FileProvider
    from datacoolie_core.metadata.sections import Owner
    from datacoolie_core.metadata.selection import normalize_names
    from datacoolie_core.metadata.validation import ValidatedDocument, issues_from_validation_error
    from datacoolie_core.models.coerce import build_path, normalize_path
    from datacoolie_core.models.connection import Connection
    from datacoolie_core.models.dataflow import DataFlow, Destination
    from datacoolie_core.models.run_config import (
        CALENDAR_UNITS,
        CHUNK_UNITS,
        DataCoolieRunConfig,
        ReplayConfig,
        WindowSpec,
    )
    from datacoolie_core.models.runtime import DataFlowRuntimeInfo, ExecutionResult, TouchedWindows
    from datacoolie_core.observers import RunContext
    from datacoolie_core.orchestration.distributor import JobDistributor
    from datacoolie_core.orchestration.driver import DataCoolieDriver
    from datacoolie_core.orchestration.replay import Chunk, chunk_key, chunk_windows
    from datacoolie_core.orchestration.wiring import metadata_file_in
    from datacoolie_core.platform.storage import (
        bind_from_environment,
        delta_storage_options,
        is_object_store,
        table_uri,
    )
    from datacoolie_core.redaction import mask, mask_data, masked_streams
    from datacoolie_core.secrets import EnvSecretProvider, resolve_connection_secrets
    from datacoolie_core.sources import FILE_FORMATS
    from datacoolie_core.sources.api import ApiReader
    from datacoolie_core.sources.base import ReadRange, ReadRequest
    from datacoolie_core.sources.collect_and_watermark import source_label
    from datacoolie_core.sources.database import connect, driver_errors, get_dialect, scrub
    from datacoolie_core.sources.date_folders import folder_date_of
    from datacoolie_core.sources.file import EXTENSIONS, FileInfo, list_source_files, scan_file
    from datacoolie_core.sources.iceberg import current_snapshots
    from datacoolie_core.sources.probe import (
        Fingerprint,
        api_fingerprint,
        database_fingerprint,
        fetch_rows,
        files_fingerprint,
        jsonable,
        open_delta,
        source_files,
        source_fingerprint,
        source_query,
    )
    from datacoolie_core.sources.pushdown import identifier, parse_query, table_query
    from datacoolie_core.sources.window import build_window, window_predicate
    from datacoolie_core.sql.lineage import query_tables
    from datacoolie_core.sql.parse import READ_DIALECT, SqlExpressionError, column_names, parse_expression
    from datacoolie_core.suggestions import did_you_mean
    from datacoolie_core.transforms.base import ColumnNameMode
    from datacoolie_core.transforms.column_names import sanitize_name, trailing_order
    from datacoolie_core.transforms.resolve import final_names, find_column
    from datacoolie_core.watermark import PendingCommit
    from datacoolie_core.watermark.merge import merge_watermarks
    from datacoolie_core.watermark.serializer import deserialize_watermark
    from datacoolie_core.watermark.store import STATE_URL_VARIABLE

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        # errors
        "DataCoolieError": "datacoolie_core.errors",
        "MaskedError": "datacoolie_core.errors",
        "MetadataError": "datacoolie_core.errors",
        "MetadataIssue": "datacoolie_core.errors",
        "SourceError": "datacoolie_core.errors",
        "TransformError": "datacoolie_core.errors",
        "WatermarkError": "datacoolie_core.errors",
        # models
        "Connection": "datacoolie_core.models.connection",
        "DataFlow": "datacoolie_core.models.dataflow",
        "Destination": "datacoolie_core.models.dataflow",
        "CALENDAR_UNITS": "datacoolie_core.models.run_config",
        "CHUNK_UNITS": "datacoolie_core.models.run_config",
        "DataCoolieRunConfig": "datacoolie_core.models.run_config",
        "ReplayConfig": "datacoolie_core.models.run_config",
        "WindowSpec": "datacoolie_core.models.run_config",
        "DataFlowRuntimeInfo": "datacoolie_core.models.runtime",
        "ExecutionResult": "datacoolie_core.models.runtime",
        "TouchedWindows": "datacoolie_core.models.runtime",
        "build_path": "datacoolie_core.models.coerce",
        "did_you_mean": "datacoolie_core.suggestions",
        "normalize_path": "datacoolie_core.models.coerce",
        # metadata
        "FileProvider": "datacoolie_core.metadata.file_provider",
        "is_metadata_url": "datacoolie_core.metadata.addresses",
        "url_provider": "datacoolie_core.metadata.addresses",
        "Owner": "datacoolie_core.metadata.sections",
        "normalize_names": "datacoolie_core.metadata.selection",
        "ValidatedDocument": "datacoolie_core.metadata.validation",
        "issues_from_validation_error": "datacoolie_core.metadata.validation",
        # running
        "DataCoolieDriver": "datacoolie_core.orchestration.driver",
        "JobDistributor": "datacoolie_core.orchestration.distributor",
        "Chunk": "datacoolie_core.orchestration.replay",
        "chunk_key": "datacoolie_core.orchestration.replay",
        "chunk_windows": "datacoolie_core.orchestration.replay",
        "metadata_file_in": "datacoolie_core.orchestration.wiring",
        "RunContext": "datacoolie_core.observers",
        "run_masked": "datacoolie_core.cli.output",
        "describe": "datacoolie_core.cli.progress",
        # state
        "PendingCommit": "datacoolie_core.watermark",
        "merge_watermarks": "datacoolie_core.watermark.merge",
        "deserialize_watermark": "datacoolie_core.watermark.serializer",
        "STATE_URL_VARIABLE": "datacoolie_core.watermark.store",
        # storage and secrets
        "bind_from_environment": "datacoolie_core.platform.storage",
        "delta_storage_options": "datacoolie_core.platform.storage",
        "is_object_store": "datacoolie_core.platform.storage",
        "table_uri": "datacoolie_core.platform.storage",
        "EnvSecretProvider": "datacoolie_core.secrets",
        "resolve_connection_secrets": "datacoolie_core.secrets",
        "mask": "datacoolie_core.redaction",
        "mask_data": "datacoolie_core.redaction",
        "masked_streams": "datacoolie_core.redaction",
        # sources
        "FILE_FORMATS": "datacoolie_core.sources",
        "ApiReader": "datacoolie_core.sources.api",
        "ReadRange": "datacoolie_core.sources.base",
        "ReadRequest": "datacoolie_core.sources.base",
        "connect": "datacoolie_core.sources.database",
        "driver_errors": "datacoolie_core.sources.database",
        "get_dialect": "datacoolie_core.sources.database",
        "scrub": "datacoolie_core.sources.database",
        "folder_date_of": "datacoolie_core.sources.date_folders",
        "EXTENSIONS": "datacoolie_core.sources.file",
        "FileInfo": "datacoolie_core.sources.file",
        "list_source_files": "datacoolie_core.sources.file",
        "scan_file": "datacoolie_core.sources.file",
        "source_label": "datacoolie_core.sources.collect_and_watermark",
        "current_snapshots": "datacoolie_core.sources.iceberg",
        "identifier": "datacoolie_core.sources.pushdown",
        "parse_query": "datacoolie_core.sources.pushdown",
        "table_query": "datacoolie_core.sources.pushdown",
        "build_window": "datacoolie_core.sources.window",
        "window_predicate": "datacoolie_core.sources.window",
        "touched_windows": "datacoolie_core.destinations.touched",
        # source probing
        "Fingerprint": "datacoolie_core.sources.probe",
        "api_fingerprint": "datacoolie_core.sources.probe",
        "database_fingerprint": "datacoolie_core.sources.probe",
        "fetch_rows": "datacoolie_core.sources.probe",
        "files_fingerprint": "datacoolie_core.sources.probe",
        "jsonable": "datacoolie_core.sources.probe",
        "open_delta": "datacoolie_core.sources.probe",
        "source_files": "datacoolie_core.sources.probe",
        "source_fingerprint": "datacoolie_core.sources.probe",
        "source_query": "datacoolie_core.sources.probe",
        # columns, sql and transforms
        "query_tables": "datacoolie_core.sql.lineage",
        "READ_DIALECT": "datacoolie_core.sql.parse",
        "SqlExpressionError": "datacoolie_core.sql.parse",
        "column_names": "datacoolie_core.sql.parse",
        "parse_expression": "datacoolie_core.sql.parse",
        "ColumnNameMode": "datacoolie_core.transforms.base",
        "sanitize_name": "datacoolie_core.transforms.column_names",
        "trailing_order": "datacoolie_core.transforms.column_names",
        "final_names": "datacoolie_core.transforms.resolve",
        "find_column": "datacoolie_core.transforms.resolve",
    },
)

__all__ = [
    "ApiReader",
    "CALENDAR_UNITS",
    "CHUNK_UNITS",
    "Chunk",
    "ColumnNameMode",
    "Connection",
    "DataCoolieDriver",
    "DataCoolieError",
    "DataCoolieRunConfig",
    "DataFlow",
    "DataFlowRuntimeInfo",
    "Destination",
    "EXTENSIONS",
    "EnvSecretProvider",
    "ExecutionResult",
    "FILE_FORMATS",
    "FileInfo",
    "FileProvider",
    "Fingerprint",
    "JobDistributor",
    "MaskedError",
    "MetadataError",
    "MetadataIssue",
    "Owner",
    "PendingCommit",
    "READ_DIALECT",
    "ReadRange",
    "ReadRequest",
    "ReplayConfig",
    "RunContext",
    "STATE_URL_VARIABLE",
    "SourceError",
    "SqlExpressionError",
    "TouchedWindows",
    "TransformError",
    "ValidatedDocument",
    "WatermarkError",
    "WindowSpec",
    "api_fingerprint",
    "bind_from_environment",
    "build_path",
    "build_window",
    "chunk_key",
    "chunk_windows",
    "column_names",
    "connect",
    "current_snapshots",
    "database_fingerprint",
    "delta_storage_options",
    "describe",
    "deserialize_watermark",
    "did_you_mean",
    "driver_errors",
    "fetch_rows",
    "files_fingerprint",
    "final_names",
    "find_column",
    "folder_date_of",
    "get_dialect",
    "identifier",
    "is_metadata_url",
    "is_object_store",
    "issues_from_validation_error",
    "jsonable",
    "list_source_files",
    "mask",
    "mask_data",
    "masked_streams",
    "merge_watermarks",
    "metadata_file_in",
    "normalize_names",
    "normalize_path",
    "open_delta",
    "parse_expression",
    "parse_query",
    "query_tables",
    "resolve_connection_secrets",
    "run_masked",
    "sanitize_name",
    "scan_file",
    "scrub",
    "source_files",
    "source_fingerprint",
    "source_label",
    "source_query",
    "table_query",
    "table_uri",
    "touched_windows",
    "trailing_order",
    "url_provider",
    "window_predicate",
]
