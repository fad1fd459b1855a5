"""Table lineage a run cannot get right, refused before anything runs.

DataCoolie runs these documents and damages tables: two dataflows that read each other's tables in
a cycle duplicate rows on every run; a dataflow reading the table it writes re-reads its own output
(an append on ``__created_at`` grew 3 rows to 12 in three runs); an ``overwrite`` dataflow sharing a
table with another writer wipes that writer's rows on every run. Each is an error of ``validate`` and
of every run here, naming the dataflows (docs/differences.md).

Reads are matched to tables by path, as the Dagster lineage does: a file or lakehouse source's
``base_path/schema_name/table``, and the tables of a lakehouse ``source.query``. Only active
dataflows count; a source read some other way (a database, an API, a function) is never a table of
this document.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from datacoolie_core.models.coerce import build_path, normalize_path
from datacoolie_core.models.dataflow import DataFlow


@dataclass(frozen=True)
class LineageProblem:
    """A problem of one dataflow (``index`` in the document) in the lineage of the whole document."""

    index: int
    path: str
    """JSON path under ``dataflows[index]``."""
    message: str


def lineage_problems(dataflows: Sequence[tuple[int, DataFlow]]) -> list[LineageProblem]:
    """Self-reads, lineage cycles and overwrites of shared tables among ``dataflows`` (``(index, dataflow)``)."""
    active = [(index, d) for index, d in dataflows if d.is_active]
    tables = _tables(active)
    return [*_self_reads(active, tables), *_cycles(active, tables), *_shared_overwrites(active)]


def _tables(dataflows: Sequence[tuple[int, DataFlow]]) -> dict[str, str]:
    """Normalised destination path -> destination key, for every destination with a path."""
    found: dict[str, str] = {}
    for _, dataflow in dataflows:
        path = _destination_path(dataflow)
        if path:
            found[path] = _key(dataflow)
    return found


def _self_reads(dataflows: Sequence[tuple[int, DataFlow]], tables: dict[str, str]) -> Iterator[LineageProblem]:
    for index, dataflow in dataflows:
        own = _key(dataflow)
        if any(tables.get(path) == own for path in _read_paths(dataflow)):
            yield LineageProblem(
                index,
                "source",
                f"dataflow {_name(dataflow)} reads the table it writes ({dataflow.destination.path}): every run "
                "would read its own output again; read the upstream table instead",
            )


def _writers(dataflows: Sequence[tuple[int, DataFlow]]) -> dict[str, list[tuple[int, DataFlow]]]:
    """The dataflows writing each destination table, by table key."""
    writers: dict[str, list[tuple[int, DataFlow]]] = {}
    for index, dataflow in dataflows:
        writers.setdefault(_key(dataflow), []).append((index, dataflow))
    return writers


def _cycles(dataflows: Sequence[tuple[int, DataFlow]], tables: dict[str, str]) -> Iterator[LineageProblem]:
    writers = _writers(dataflows)
    graph = {
        key: {tables[p] for _, d in members for p in _read_paths(d) if p in tables and tables[p] != key}
        for key, members in writers.items()
    }
    for component in _cyclic_components(graph):
        members = sorted(((i, d) for key in component for i, d in writers[key]), key=lambda m: m[0])
        names = ", ".join(f"{_name(d)} (writes {d.destination.path})" for _, d in members)
        for index, _ in members:
            yield LineageProblem(
                index,
                "source",
                f"dataflows {names} read each other's tables in a cycle: each run would load the rows again; "
                "break the cycle (one of them must read an outside source)",
            )


def _shared_overwrites(dataflows: Sequence[tuple[int, DataFlow]]) -> Iterator[LineageProblem]:
    for members in _writers(dataflows).values():
        overwriting = [(i, d) for i, d in members if d.destination.load_type == "overwrite"]
        if len(members) < 2 or not overwriting:
            continue
        names = ", ".join(f"{_name(d)} ({d.destination.load_type})" for _, d in members)
        for index, _ in overwriting:
            yield LineageProblem(
                index,
                "destination.load_type",
                f"dataflows {names} write one table ({members[0][1].destination.path}) and an overwrite replaces "
                "the others' rows on every run; give the overwrite its own table or use merge_overwrite",
            )


def _cyclic_components(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def _read_paths(dataflow: DataFlow) -> list[str]:
    """Normalised paths of the tables ``dataflow`` reads (its table, or its lakehouse query's tables)."""
    source = dataflow.source
    conn = source.connection
    if source.query:
        if conn.connection_type != "lakehouse" or not conn.base_path:
            return []
        from datacoolie_core.sql.lineage import query_tables  # sqlglot only for documents with queries

        try:
            tables = query_tables(source.query)
        except Exception:  # a .sql file reference or an unparsable query: lineage unknown, not an error
            return []
        paths = []
        for schema, table in tables:
            paths.append(build_path(conn.base_path, schema or source.schema_name, table))
            if not schema and source.schema_name:
                paths.append(build_path(conn.base_path, table))
        return [_norm(p) for p in paths]
    if source.python_function or conn.connection_type not in ("file", "lakehouse"):
        return []
    return [_norm(source.path)] if source.path else []


def _destination_path(dataflow: DataFlow) -> str | None:
    path = dataflow.destination.path
    return _norm(path) if path else None


def _key(dataflow: DataFlow) -> str:
    try:
        return dataflow.destination.destination_key
    except ValueError:
        return f"dataflow:{dataflow.dataflow_id}"


def _norm(path: str | None) -> str:
    return normalize_path(path or "").rstrip("/").lower()


def _name(dataflow: DataFlow) -> str:
    return f"'{dataflow.name or dataflow.dataflow_id}'"
