"""The Delta reader: a Delta table by path, or SQL over the connection's Delta tables (S-18).

Table mode scans ``base_path/schema_name/table`` lazily at the table's current version and records
that version in ``source_action["version"]``.

Every path is confined to the connection's ``base_path`` (symlinks resolved), and a query may name
only tables (:mod:`datacoolie_core.sql.references`): Polars' file-reading table functions are refused.

Query mode (``source.query``) runs the SQL on Polars' SQL engine: every table the query names
(``schema.table`` or ``table``, found with sqlglot; CTE names excepted) is registered from
``base_path/<schema>/<table>`` of the source's connection; an unqualified name is looked up under
the source's ``schema_name`` first, then directly under ``base_path``. The query is run as written,
so it may use only functions Polars' SQL knows. Then the watermark window, ``filter_expression``
and the count/max apply to the query's result, as for any source.
"""

from __future__ import annotations

import os
from typing import Any

import polars as pl
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError, TableNotFoundError

from datacoolie_core.errors import SourceError
from datacoolie_core.models.coerce import build_path
from datacoolie_core.models.dataflow import Source
from datacoolie_core.platform.paths import ensure_confined
from datacoolie_core.platform.storage import delta_storage_options, is_object_store
from datacoolie_core.sources.base import ReadRequest, ReadResult, SourceScan
from datacoolie_core.sources.collect_and_watermark import collect_scan, plan_read, source_label
from datacoolie_core.suggestions import did_you_mean


class DeltaReader:
    """Reads a Delta table, or a SQL query over the connection's Delta tables."""

    def read(self, source: Source, request: ReadRequest) -> ReadResult | None:
        return collect_scan(self.scan(source, request))

    def scan(self, source: Source, request: ReadRequest) -> SourceScan:
        """The read planned lazily on the tables' current versions (pinned: a second pass reads the same rows)."""
        label = source_label(source)
        if source.query:
            lf, action, size = _read_query(source, source.query, label)
        else:
            if not source.path or not source.connection.base_path:
                raise SourceError(f"{label}: a Delta source needs base_path and table (or a query)")
            ensure_confined(source.connection.base_path, source.path, what="source table")
            table = open_table(source.path, label)
            lf, action = scan_table(table, source.path, label), {"path": source.path, "version": table.version()}
            files = table.get_add_actions(flatten=True)
            size, null_free = _bytes(files), null_free_columns(table, files)
            return plan_read(lf, source, request, source_action=action, size_hint=size, null_free=null_free)
        return plan_read(lf, source, request, source_action=action, size_hint=size)


def open_table(path: str, label: str) -> DeltaTable:
    """The Delta table at ``path`` (latest version).

    Raises:
        SourceError: no Delta table there, or its log cannot be read.
    """
    try:
        return DeltaTable(path, storage_options=delta_storage_options(path))
    except TableNotFoundError as e:
        raise SourceError(
            f"{label}: no Delta table at '{path}' (resolved against {os.getcwd()}); "
            "check base_path/schema_name/table, or run the dataflow that creates it first"
        ) from e
    except (DeltaError, OSError) as e:
        raise SourceError(f"{label}: cannot open the Delta table at '{path}': {e}") from e


def scan_table(table: DeltaTable, path: str, label: str) -> pl.LazyFrame:
    """A lazy scan of ``table`` pinned to the version it was opened at."""
    try:
        return pl.scan_delta(table)
    except (pl.exceptions.PolarsError, DeltaError, OSError) as e:
        raise SourceError(f"{label}: cannot scan the Delta table at '{path}': {e}") from e


def table_bytes(table: DeltaTable) -> int:
    """The bytes of the table's data files at its version (from the log: no file is read)."""
    return _bytes(table.get_add_actions(flatten=True))


def _bytes(files: Any) -> int:
    return sum(files.column("size_bytes").to_pylist())


_NULL_COUNT = "null_count."


def null_free_columns(table: DeltaTable, files: Any) -> frozenset[str]:
    """Top-level columns that the log's file statistics prove hold no null (no file is read).

    A column counts only when every data file records its null count and every count is 0; a file
    without statistics, an empty table or column mapping (statistics then name physical columns)
    proves nothing. The watermark check skips its count over such columns (NaN is not in the
    statistics, so float columns are always counted).
    """
    if files.num_rows == 0 or table.metadata().configuration.get("delta.columnMapping.mode", "none") != "none":
        return frozenset()
    free = set()
    for name in files.column_names:
        column = name.removeprefix(_NULL_COUNT)
        if name.startswith(_NULL_COUNT) and "." not in column and all(v == 0 for v in files.column(name).to_pylist()):
            free.add(column)
    return frozenset(free)


def referenced_tables(query: str, label: str) -> list[tuple[str | None, str]]:
    """``(schema, table)`` of every table ``query`` reads (see :func:`datacoolie_core.sql.lineage.query_tables`)."""
    from sqlglot.errors import ParseError  # query mode only: a table read never loads the SQL parser

    from datacoolie_core.sql.lineage import query_tables

    try:
        return query_tables(query)
    except ParseError as e:
        raise SourceError(f"{label}: source.query does not parse as SQL: {e}; fix the query") from e


def _read_query(source: Source, query: str, label: str) -> tuple[pl.LazyFrame, dict[str, Any], int]:
    base = source.connection.base_path
    if not base:
        raise SourceError(f"{label}: a query over Delta tables needs the connection's base_path")
    from datacoolie_core.sql.references import query_reference_problems

    problems = query_reference_problems(query)
    if problems:
        raise SourceError(f"{label}: source.query is refused: {'; '.join(problems)}")
    context = pl.SQLContext()
    tables: dict[str, dict[str, Any]] = {}
    size = 0
    for schema, name in referenced_tables(query, label):
        path = _resolve_table(base, schema, name, source.schema_name, label)
        table = open_table(path, label)
        registered = f"{schema}.{name}" if schema else name
        context.register(registered, scan_table(table, path, label))
        tables[registered] = {"path": path, "version": table.version()}
        size += table_bytes(table)
    try:
        lf = context.execute(query)
    except (pl.exceptions.PolarsError, ValueError) as e:
        raise SourceError(f"{label}: source.query failed on Polars SQL: {e}; use functions Polars SQL supports") from e
    return lf, {"query": query, "tables": tables}, size


def _resolve_table(base: str, schema: str | None, name: str, default_schema: str | None, label: str) -> str:
    if schema:
        candidates = [build_path(base, schema, name)]
    else:
        candidates = [build_path(base, default_schema, name)] if default_schema else []
        candidates.append(build_path(base, name))
    for path in candidates:
        ensure_confined(base, path, what=f"table '{name}' of source.query")
        if _is_delta(path):
            return path
    known = list_delta_tables(base)
    wanted = f"{schema}.{name}" if schema else name
    raise SourceError(
        f"{label}: table '{wanted}' in source.query is not a Delta table under '{base}'{did_you_mean(wanted, known)} "
        f"(tables: {', '.join(known) or 'none'}); fix the table name or create the table first"
    )


def list_delta_tables(base: str) -> list[str]:
    """``schema.table`` / ``table`` names of the Delta tables one or two levels under ``base``."""
    found: list[str] = []
    for first in _subdirs(base):
        if _is_delta(base, first):
            found.append(first)
            continue
        found += [
            f"{first}.{second}" for second in _subdirs(os.path.join(base, first)) if _is_delta(base, first, second)
        ]
    return sorted(found)


def _subdirs(path: str) -> list[str]:
    if is_object_store(path):
        return []  # not listed on object storage: the error then names no candidate tables
    try:
        return sorted(e.name for e in os.scandir(path) if e.is_dir() and not e.name.startswith((".", "_")))
    except OSError:
        return []


def _is_delta(*parts: str) -> bool:
    path = "/".join(p.rstrip("/") for p in parts)
    if is_object_store(path):  # no folders to look at: ask delta-rs
        return DeltaTable.is_deltatable(path, storage_options=delta_storage_options(path))
    return os.path.isdir(os.path.join(*parts, "_delta_log"))
