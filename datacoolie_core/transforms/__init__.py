"""The transform pipeline: one transformer per slot, run in order over a lazy frame."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datacoolie_core.lazy import lazy_exports

if TYPE_CHECKING:
    from datacoolie_core.transforms.base import ColumnNameMode, TransformContext, Transformer
    from datacoolie_core.transforms.column_names import ColumnNameSanitizer, sanitize_name
    from datacoolie_core.transforms.computed_columns import ColumnAdder
    from datacoolie_core.transforms.deduplicate import Deduplicator
    from datacoolie_core.transforms.hash_columns import HashColumnAdder
    from datacoolie_core.transforms.masking import DataMasker
    from datacoolie_core.transforms.partition_columns import PartitionHandler
    from datacoolie_core.transforms.pipeline import (
        DEFAULT_TRANSFORMERS,
        PLUGIN_GROUP,
        TRANSFORMERS,
        build_pipeline,
        get_transformer,
        plugin_transformers,
        run_pipeline,
    )
    from datacoolie_core.transforms.projection import ColumnProjector
    from datacoolie_core.transforms.row_filter import RowFilter
    from datacoolie_core.transforms.scd2_columns import SCD2ColumnAdder
    from datacoolie_core.transforms.schema_hints import SchemaConverter
    from datacoolie_core.transforms.system_columns import SystemColumnAdder
    from datacoolie_core.transforms.value_rules import ColumnValueTransformer

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ColumnNameMode": "datacoolie_core.transforms.base",
        "TransformContext": "datacoolie_core.transforms.base",
        "Transformer": "datacoolie_core.transforms.base",
        "ColumnNameSanitizer": "datacoolie_core.transforms.column_names",
        "sanitize_name": "datacoolie_core.transforms.column_names",
        "ColumnAdder": "datacoolie_core.transforms.computed_columns",
        "Deduplicator": "datacoolie_core.transforms.deduplicate",
        "HashColumnAdder": "datacoolie_core.transforms.hash_columns",
        "DataMasker": "datacoolie_core.transforms.masking",
        "PartitionHandler": "datacoolie_core.transforms.partition_columns",
        "DEFAULT_TRANSFORMERS": "datacoolie_core.transforms.pipeline",
        "PLUGIN_GROUP": "datacoolie_core.transforms.pipeline",
        "build_pipeline": "datacoolie_core.transforms.pipeline",
        "get_transformer": "datacoolie_core.transforms.pipeline",
        "plugin_transformers": "datacoolie_core.transforms.pipeline",
        "TRANSFORMERS": "datacoolie_core.transforms.pipeline",
        "run_pipeline": "datacoolie_core.transforms.pipeline",
        "ColumnProjector": "datacoolie_core.transforms.projection",
        "RowFilter": "datacoolie_core.transforms.row_filter",
        "SCD2ColumnAdder": "datacoolie_core.transforms.scd2_columns",
        "SchemaConverter": "datacoolie_core.transforms.schema_hints",
        "SystemColumnAdder": "datacoolie_core.transforms.system_columns",
        "ColumnValueTransformer": "datacoolie_core.transforms.value_rules",
    },
)

__all__ = [
    "DEFAULT_TRANSFORMERS",
    "PLUGIN_GROUP",
    "TRANSFORMERS",
    "ColumnAdder",
    "ColumnNameMode",
    "ColumnNameSanitizer",
    "ColumnProjector",
    "ColumnValueTransformer",
    "DataMasker",
    "Deduplicator",
    "HashColumnAdder",
    "PartitionHandler",
    "RowFilter",
    "SCD2ColumnAdder",
    "SchemaConverter",
    "SystemColumnAdder",
    "TransformContext",
    "Transformer",
    "build_pipeline",
    "get_transformer",
    "plugin_transformers",
    "run_pipeline",
    "sanitize_name",
]
