"""Validate-time confinement: names are clean path components, lakehouse queries read only tables.

Run on every connection and dataflow that passed model validation; each problem is a
``(JSON path, message)`` pair under the object's prefix, so ``validate`` reports it with the file
and the fix. The rules themselves live in :mod:`datacoolie_core.platform.paths` (names, paths) and
:mod:`datacoolie_core.sql.references` (what a query may name); run time re-checks the resolved
paths with symlinks followed (``orchestration.preparation.dataflow``).
"""

from __future__ import annotations

from datacoolie_core.models.connection import Connection
from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.platform.paths import MAX_NAME_BYTES, PathEscapeError, confined_path, name_problem, shown

Problem = tuple[str, str]
"""(JSON path relative to the object, message)."""

PATH_CONNECTION_TYPES = ("file", "lakehouse")
"""Connection types whose ``schema_name`` / ``table`` become folders under ``base_path``."""


def connection_problems(connection: Connection) -> list[Problem]:
    """Name problems of a connection: its name is shown, catalog and database are qualifiers."""
    found = _name("name", connection.name, component=False)
    found += _name("catalog", connection.catalog)
    found += _name("database", connection.database)
    return found


def dataflow_problems(dataflow: DataFlow) -> list[Problem]:
    """Every confinement problem of a validated dataflow (names, paths, the source query)."""
    found = _folder_part("name", dataflow.name) + _folder_part("stage", dataflow.stage)
    found += _watermark_folder(dataflow)
    source, destination = dataflow.source, dataflow.destination
    path_source = source.connection.connection_type in PATH_CONNECTION_TYPES
    found += _name("source.schema_name", source.schema_name, component=path_source)
    found += _name("source.table", source.table, component=path_source)
    found += _name("destination.schema_name", destination.schema_name)
    found += _name("destination.table", destination.table)
    if not found:
        found += _escapes("source", source.connection.base_path, source.schema_name, source.table)
        found += _escapes("destination", destination.connection.base_path, destination.schema_name, destination.table)
    if source.query and source.connection.connection_type == "lakehouse":
        found += _query("source.query", source.query)
    return found


def _name(path: str, value: str | None, *, component: bool = True) -> list[Problem]:
    problem = value and name_problem(value, component=component)
    return [(path, f"{shown(value)} cannot be used as a name: {problem}")] if problem else []


def _folder_part(path: str, value: str | None) -> list[Problem]:
    """Stage and name form the watermark folder ``{stage}_{name}_{id}``, which refuses any ``..``."""
    found = _name(path, value)
    if not found and value and ".." in value:
        found = [
            (path, f"{shown(value)} cannot be used as a name: it contains '..', which the watermark folder refuses")
        ]
    return found


def _watermark_folder(dataflow: DataFlow) -> list[Problem]:
    """The watermark folder ``{stage}_{name}_{id}`` is one file name: it must fit the same limit."""
    folder = "_".join(p for p in (dataflow.stage, dataflow.name, dataflow.dataflow_id) if p)
    size = len(folder.encode("utf-8", "surrogatepass"))
    if size <= MAX_NAME_BYTES:
        return []
    return [
        (
            "name",
            f"stage + name + dataflow_id make a watermark folder of {size} bytes (at most {MAX_NAME_BYTES}); "
            "shorten the name or the stage",
        )
    ]


def _escapes(side: str, base: str | None, schema: str | None, table: str | None) -> list[Problem]:
    if not base or not table:
        return []
    try:
        confined_path(base, schema, table)
    except PathEscapeError as e:
        return [(f"{side}.table", e.detail)]
    return []


def _query(path: str, query: str) -> list[Problem]:
    # imported here: orchestration imports metadata, so a module-level import would be circular
    from datacoolie_core.orchestration.preparation.query import QueryFileError, check_reference, classify_query
    from datacoolie_core.sql.references import query_reference_problems  # sqlglot: only for a query

    try:
        if classify_query(query) != "inline":
            check_reference(query)
            return []  # the file's SQL is checked when it is read (prepare_dataflow)
    except QueryFileError as e:
        return [(path, e.detail + (f" (reference {shown(e.reference)})" if e.reference else ""))]
    return [(path, f"{problem}") for problem in query_reference_problems(query)]
