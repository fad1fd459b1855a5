"""SQL from metadata, through sqlglot: parse and validate, compile to Polars, build predicates."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datacoolie_core.lazy import lazy_exports

if TYPE_CHECKING:
    from datacoolie_core.sql.lineage import query_tables
    from datacoolie_core.sql.parse import SqlExpressionError, column_names, parse_expression
    from datacoolie_core.sql.to_polars import SUPPORTED_FUNCTIONS, compile_expression, validate_expression

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "query_tables": "datacoolie_core.sql.lineage",
        "SqlExpressionError": "datacoolie_core.sql.parse",
        "column_names": "datacoolie_core.sql.parse",
        "parse_expression": "datacoolie_core.sql.parse",
        "SUPPORTED_FUNCTIONS": "datacoolie_core.sql.to_polars",
        "compile_expression": "datacoolie_core.sql.to_polars",
        "validate_expression": "datacoolie_core.sql.to_polars",
    },
)

__all__ = [
    "SUPPORTED_FUNCTIONS",
    "SqlExpressionError",
    "column_names",
    "compile_expression",
    "parse_expression",
    "query_tables",
    "validate_expression",
]
