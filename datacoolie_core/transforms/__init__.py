"""The transform pipeline: one transformer per slot, run in order over a lazy frame."""

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

TRANSFORMERS: dict[str, Transformer] = {transformer.name: transformer for transformer in DEFAULT_TRANSFORMERS}
"""The built-in transformers by name (plugins: :func:`plugin_transformers`)."""

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
