"""Probing a source without reading its data: what an orchestrator compares to see new data.

A fingerprint is a small JSON-able dict that changes when a source gets new data:

* Delta (``format: delta``, table or query): the version of every table it reads, from the log only.
* Files (parquet, csv, json, jsonl, avro, excel): the count and newest modification time of the
  files the reader would list (same extension, hidden-file and hive-recursion rules, every date folder).
* Databases (``format: sql``): ``SELECT COUNT(*), MAX(<watermark column>)…`` over the table or
  query, built as a sqlglot tree (identifiers quoted, nothing concatenated).
* Iceberg (``format: iceberg``, table mode): the current snapshot id of the table, from the catalog.
* REST APIs (``format: api``): the record count and the maximum of each watermark column of the
  endpoint as a first run reads it: an API has no cheaper "has anything changed" call in general,
  so this costs one full read.

The probe connects as a run does (secrets of ``secrets_ref`` resolved, object-store options bound
from the environment). A source that cannot be read raises :class:`SourceError` naming it. Which
sources an orchestrator probes, and how it names the Delta tables a query reads, is its own affair.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

from deltalake import DeltaTable
from deltalake.exceptions import DeltaError, TableNotFoundError
from sqlglot import exp

from datacoolie_core.columns import FILE_MODIFICATION_TIME
from datacoolie_core.errors import SourceError
from datacoolie_core.models.connection import Connection
from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.platform.storage import bind_from_environment, delta_storage_options
from datacoolie_core.secrets import EnvSecretProvider, resolve_connection_secrets
from datacoolie_core.sources.base import ReadRequest
from datacoolie_core.sources.collect_and_watermark import source_label
from datacoolie_core.sources.database import connect, driver_errors, get_dialect, scrub
from datacoolie_core.sources.file import EXTENSIONS, FileInfo, list_source_files
from datacoolie_core.sources.pushdown import identifier, parse_query, table_query

Fingerprint = dict[str, Any]
"""A JSON-able dict that changes when the source gets new data."""


def source_fingerprint(
    dataflow: DataFlow, delta_tables: Mapping[str, Sequence[str | None]] | None = None
) -> Fingerprint:
    """The fingerprint of what ``dataflow`` reads.

    Args:
        dataflow: the dataflow whose source is probed.
        delta_tables: for a Delta source, ``{name: [path, fallback path…]}`` of each table it reads
            (a query's tables, resolved by the caller); the first path holding a table counts.

    Raises:
        SourceError: the source cannot be read, or its format has no cheap fingerprint.
    """
    fmt = dataflow.source.connection.format or ""
    label = source_label(dataflow.source)
    bind_from_environment(dataflow.source.connection)  # an object-store source: its options, as a run binds them
    if fmt == "delta":
        return {
            "delta_versions": {
                name: int(open_delta(paths, label).version()) for name, paths in (delta_tables or {}).items()
            }
        }
    if fmt in EXTENSIONS:
        return files_fingerprint(source_files(dataflow, label))
    if fmt == "sql":
        return database_fingerprint(dataflow, label)
    if fmt == "api":
        return api_fingerprint(dataflow)
    if fmt == "iceberg":
        from datacoolie_core.sources.iceberg import current_snapshots  # pyiceberg only for Iceberg sources

        return {"iceberg_snapshots": current_snapshots(dataflow.source)}
    raise SourceError(f"{label}: format '{fmt}' has no cheap fingerprint; it cannot be sensed")


def open_delta(paths: Sequence[str | None], label: str) -> DeltaTable:
    """The Delta table at the first of ``paths`` that holds one (an unqualified query table falls
    back as the reader does), at its latest version.

    Raises:
        SourceError: no Delta table at any path, or its log cannot be read.
    """
    candidates = [p for p in paths if p]
    for path in candidates:
        try:
            return DeltaTable(path, storage_options=delta_storage_options(path))
        except TableNotFoundError:
            continue
        except (DeltaError, OSError) as e:
            raise SourceError(f"{label}: cannot read the Delta log at '{path}': {e}; check the table") from e
    raise SourceError(
        f"{label}: no Delta table at {' or '.join(repr(p) for p in candidates)} (resolved against {os.getcwd()}); "
        "create the table or fix base_path/schema_name/table"
    )


def source_files(dataflow: DataFlow, label: str) -> list[FileInfo]:
    """The files the reader would list for ``dataflow``'s file source, sorted by (mtime, path).

    Raises:
        SourceError: no path, or the folder does not exist or cannot be listed.
    """
    source = dataflow.source
    if not source.path:
        raise SourceError(f"{label}: a file source needs connection base_path and table; set configure.base_path")
    return list_source_files(source, label=label)  # date-folder sources: the files of every date folder


def files_fingerprint(files: Sequence[FileInfo]) -> Fingerprint:
    """How many files, and the newest modification time among them."""
    newest = max((f.modified for f in files), default=None)
    return {"files": len(files), "modified": newest.isoformat() if newest else None}


def database_fingerprint(dataflow: DataFlow, label: str) -> Fingerprint:
    """The row count and the maximum of each watermark column of a database source, in one query."""
    source = dataflow.source
    columns = [c for c in source.watermark_columns if c.lower() != FILE_MODIFICATION_TIME]
    connection, dialect, base = source_query(dataflow, label)
    (row,) = fetch_rows(connection, dialect, _probe_sql(base, columns, dialect), label, "probe the source for new rows")
    return {"rows": int(row[0]), "max": {c: jsonable(v) for c, v in zip(columns, row[1:], strict=True)}}


def api_fingerprint(dataflow: DataFlow) -> Fingerprint:
    """The record count and the maximum of each watermark column, as a first run reads the endpoint."""
    from datacoolie_core.sources.api import ApiReader  # the HTTP client only for API sources

    source = dataflow.source.model_copy()
    # the probe calls the API as a run does: with the secrets of `secrets_ref`, not their names
    source.bind(resolve_connection_secrets(dataflow.source.connection, EnvSecretProvider()))
    result = ApiReader().read(source, ReadRequest())
    if result is None:
        return {"rows": 0, "max": {}}
    after = result.runtime.watermark_after or {}
    return {"rows": result.data.height, "max": {c: jsonable(v) for c, v in sorted(after.items())}}


def source_query(dataflow: DataFlow, label: str) -> tuple[Connection, str, exp.Query]:
    """The connection (secrets resolved), sqlglot dialect and base query of a database source.

    Raises:
        SourceError: the source names neither a table nor a query.
    """
    source = dataflow.source
    # the probe connects as a run does: with the secrets of `secrets_ref`, not their names
    connection = resolve_connection_secrets(source.connection, EnvSecretProvider())
    dialect = get_dialect(connection, label)
    if source.query:
        return connection, dialect, parse_query(source.query, dialect, label=label)
    if source.table:
        return connection, dialect, table_query(source.schema_name, source.table, dialect)
    raise SourceError(f"{label}: a database source needs table or query")


def fetch_rows(connection: Connection, dialect: str, query: exp.Query, label: str, what: str) -> list[tuple[Any, ...]]:
    """Every row of ``query``; a driver error is a SourceError saying what we tried (``what``), secrets scrubbed."""
    sql = query.sql(dialect=dialect)
    with connect(connection, dialect, label) as conn:
        try:
            cursor = conn.cursor()
            cursor.execute(sql)
            return [tuple(row) for row in cursor.fetchall()]
        except driver_errors() as e:
            raise SourceError(f"{label}: cannot {what} ({sql}): {scrub(str(e), connection)}") from e


def _probe_sql(base: exp.Query, columns: Sequence[str], dialect: str) -> exp.Select:
    """``SELECT COUNT(*), MAX("c1"), … FROM (<base>) AS "t"``: one row, whatever the source's size."""
    aggregates: list[exp.Expr] = [exp.Count(this=exp.Star())]
    aggregates += [exp.Max(this=exp.column(identifier(c, dialect))) for c in columns]
    return exp.select(*aggregates).from_(base.subquery(exp.to_identifier("t", quoted=True)))


def jsonable(value: Any) -> Any:
    """A value a probe read, as JSON keeps it (dates as ISO text, driver types as text)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)  # Decimal and driver-specific types: compared as text, only for equality


__all__ = [
    "Fingerprint",
    "api_fingerprint",
    "database_fingerprint",
    "fetch_rows",
    "files_fingerprint",
    "jsonable",
    "open_delta",
    "source_files",
    "source_fingerprint",
    "source_query",
]
