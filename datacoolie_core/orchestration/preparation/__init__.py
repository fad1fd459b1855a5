"""Execution preparation: deep copies with query files read and secrets resolved, once per run."""

from datacoolie_core.orchestration.preparation.dataflow import PreparationScope, prepare_dataflow
from datacoolie_core.orchestration.preparation.query import (
    QueryFileError,
    QueryKind,
    QueryRoots,
    classify_query,
    resolve_query,
)

__all__ = [
    "PreparationScope",
    "QueryFileError",
    "QueryKind",
    "QueryRoots",
    "classify_query",
    "prepare_dataflow",
    "resolve_query",
]
