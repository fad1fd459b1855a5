"""SQL from metadata, through sqlglot: parse and validate, compile to Polars, build predicates."""

from datacoolie_core.sql.lineage import query_tables
from datacoolie_core.sql.parse import SqlExpressionError, column_names, parse_expression
from datacoolie_core.sql.to_polars import SUPPORTED_FUNCTIONS, compile_expression, validate_expression

__all__ = [
    "SUPPORTED_FUNCTIONS",
    "SqlExpressionError",
    "column_names",
    "compile_expression",
    "parse_expression",
    "query_tables",
    "validate_expression",
]
