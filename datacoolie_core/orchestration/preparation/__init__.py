"""Execution preparation: deep copies with query files read and secrets resolved, once per run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datacoolie_core.lazy import lazy_exports

if TYPE_CHECKING:
    from datacoolie_core.orchestration.preparation.dataflow import PreparationScope, prepare_dataflow
    from datacoolie_core.orchestration.preparation.query import (
        QueryFileError,
        QueryKind,
        QueryRoots,
        classify_query,
        resolve_query,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "PreparationScope": "datacoolie_core.orchestration.preparation.dataflow",
        "prepare_dataflow": "datacoolie_core.orchestration.preparation.dataflow",
        "QueryFileError": "datacoolie_core.orchestration.preparation.query",
        "QueryKind": "datacoolie_core.orchestration.preparation.query",
        "QueryRoots": "datacoolie_core.orchestration.preparation.query",
        "classify_query": "datacoolie_core.orchestration.preparation.query",
        "resolve_query": "datacoolie_core.orchestration.preparation.query",
    },
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
