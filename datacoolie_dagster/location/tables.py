"""Pure metadata analysis: destination tables (fan-in grouped) and their lineage.

A destination table is one physical target (``destination_key``) with every active dataflow that
writes it. Lineage: a dataflow reading another dataflow's destination path depends on that table; a
``source.query`` depends on the tables sqlglot finds in it; anything else is an external source.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from datacoolie_core import DataFlow
from datacoolie_core.api import build_path, normalize_path
from datacoolie_dagster.location.ordering import LineageCycleError, ordered_levels

T = TypeVar("T")


@dataclass(frozen=True)
class SourceRef:
    """Where a dataflow reads from: a destination table of this metadata, or an external source."""

    connection: str
    schema_name: str | None
    table: str | None
    path: str | None
    format: str
    detail: str | None = None
    """Query text or function path for sources without a table."""
    fallback_path: str | None = None
    """Where the Delta reader looks next for an unqualified query table (``base_path/table``)."""

    @property
    def identity(self) -> str:
        return (
            f"path:{_norm(self.path)}"
            if self.path
            else f"{self.connection}:{self.schema_name}:{self.table or self.detail}"
        )


@dataclass
class DestinationTable:
    """One physical destination and the dataflows (fan-in) writing it, in group/order."""

    key: str
    dataflows: list[DataFlow]
    sources: list[SourceRef] = field(default_factory=list)
    upstream: list[str] = field(default_factory=list)
    """Destination keys of the tables this one reads (within the same metadata)."""
    upstream_refs: dict[SourceRef, str] = field(default_factory=dict)
    """The reads of this metadata's tables: source -> destination key (column lineage maps them)."""

    @property
    def first(self) -> DataFlow:
        return self.dataflows[0]

    @functools.cached_property
    def path(self) -> str | None:
        """The destination's path, built once: a load asks for it about four times per table."""
        return self.first.destination.path

    @property
    def dataflow_ids(self) -> list[str]:
        return [str(d.dataflow_id) for d in self.dataflows]

    def code_version(self) -> str:
        """Hash of the dataflows' metadata: an edit makes the asset show as unsynced."""
        payload = json.dumps([d.model_dump(mode="json", by_alias=True) for d in self.dataflows], sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def destination_tables(dataflows: Sequence[DataFlow]) -> list[DestinationTable]:
    """Group dataflows by physical destination and resolve lineage between the groups."""
    tables: dict[str, DestinationTable] = {}
    for dataflow in sorted(dataflows, key=_order):
        key = dataflow.destination.destination_key
        tables.setdefault(key, DestinationTable(key, [])).dataflows.append(dataflow)
    by_path = {f"path:{_norm(t.path)}": t.key for t in tables.values() if t.path}
    for table in tables.values():
        for dataflow in table.dataflows:
            for ref in source_refs(dataflow):
                upstream = by_path.get(ref.identity) or by_path.get(f"path:{_norm(ref.fallback_path)}")
                if upstream:
                    table.upstream_refs[ref] = upstream
                if upstream and upstream != table.key and upstream not in table.upstream:
                    table.upstream.append(upstream)
                elif upstream is None and ref not in table.sources:
                    table.sources.append(ref)
    return list(tables.values())


def source_refs(dataflow: DataFlow) -> list[SourceRef]:
    """What a dataflow reads: its table, the tables of its query, or its function."""
    source = dataflow.source
    conn = source.connection
    fmt = conn.format or ""
    if source.query and conn.connection_type == "lakehouse":
        return [_lakehouse_query_ref(dataflow, schema, table) for schema, table in query_tables(source.query)] or [
            SourceRef(conn.name, None, None, None, fmt, detail=source.query)
        ]
    if source.query:
        return [SourceRef(conn.name, schema, table, None, fmt) for schema, table in query_tables(source.query)] or [
            SourceRef(conn.name, None, None, None, fmt, detail=source.query)
        ]
    if source.python_function:
        return [SourceRef(conn.name, None, None, None, fmt, detail=source.python_function)]
    if conn.connection_type == "api":  # one source per endpoint (several dataflows share a connection)
        return [SourceRef(conn.name, None, None, None, fmt, detail=source.configure.endpoint or "/")]
    return [SourceRef(conn.name, source.schema_name, source.table, source.path, fmt)]


def query_tables(query: str) -> list[tuple[str | None, str]]:
    """``(schema, table)`` of every table a query reads, as the Delta reader reads it; [] if it does not parse."""
    from sqlglot.errors import ParseError  # sqlglot loads with the first query, not with the code location

    from datacoolie_core.api import query_tables as core_query_tables

    try:
        return core_query_tables(query)
    except ParseError:
        return []  # a .sql file reference or a dialect we cannot parse: lineage unknown, not an error


def lineage_levels(items: Sequence[T], table_of: Callable[[T], DestinationTable]) -> list[list[T]]:
    """``items`` in lineage order (:func:`~.ordering.ordered_levels` over their tables' ``upstream``).

    Raises:
        LineageCycleError: tables of ``items`` that read each other in a cycle.
    """
    by_key = {table_of(item).key: item for item in items}
    graph = {key: table_of(item).upstream for key, item in by_key.items()}
    try:
        levels = ordered_levels(graph)
    except LineageCycleError as error:  # name the tables by what a user wrote: path and dataflows
        raise LineageCycleError([_describe(table_of(by_key[str(key)])) for key in error.cycle]) from None
    return [[by_key[key] for key in level] for level in levels]


def _describe(table: DestinationTable) -> str:
    names = ", ".join(f"'{d.name}'" for d in table.dataflows)
    return f"{table.path or table.key} (dataflow {names})"


def writer_rounds(tables: Sequence[DestinationTable]) -> list[list[DataFlow]]:
    """The dataflows of ``tables`` in rounds that never hold two writers of one table.

    Round ``i`` holds the ``i``-th dataflow (group/order order) of every table: the writers of a
    fan-in table take turns instead of racing on its Delta log (a first load would fail with "table
    created concurrently"; DataCoolie leaves serializing them to group_number/execution_order, F-04).
    """
    depth = max((len(t.dataflows) for t in tables), default=0)
    return [[t.dataflows[i] for t in tables if i < len(t.dataflows)] for i in range(depth)]


def _lakehouse_query_ref(dataflow: DataFlow, schema: str | None, table: str) -> SourceRef:
    """A table of a Delta ``source.query``, resolved as the reader does: an unqualified name under
    the source's ``schema_name`` first, then directly under ``base_path``."""
    source = dataflow.source
    conn = source.connection
    base = conn.base_path
    if not base:
        return SourceRef(conn.name, schema, table, None, conn.format or "")
    if schema or not source.schema_name:
        return SourceRef(conn.name, schema, table, build_path(base, schema, table), conn.format or "")
    return SourceRef(
        conn.name,
        source.schema_name,
        table,
        build_path(base, source.schema_name, table),
        conn.format or "",
        fallback_path=build_path(base, table),
    )


def _order(dataflow: DataFlow) -> tuple[int, int, str]:
    group = dataflow.group_number if dataflow.group_number is not None else 1 << 30
    return (group, dataflow.execution_order or 0, str(dataflow.name))


def _norm(path: str | None) -> str:
    return normalize_path(path or "").rstrip("/").lower()


def identifier(name: str) -> str:
    """``name`` with every character a Python identifier cannot hold replaced by ``_`` (op names)."""
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
