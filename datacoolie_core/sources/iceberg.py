"""The Iceberg reader: a table of the connection's pyiceberg catalog (S-20), pinned to one snapshot.

Table mode reads ``<namespace>.<table>`` (namespace: the connection's ``database`` and the source's
``schema_name``; catalog: :mod:`~datacoolie_core.platform.iceberg_catalog`) at its current
snapshot, or at ``read_options.snapshot_id`` (time travel). The snapshot read is recorded in
``source_action["snapshot_id"]`` beside the table's sequence number, so a run says which data it saw.

The watermark window (or a replay range) is pushed into pyiceberg's ``row_filter``, each bound typed
like its column (:func:`~datacoolie_core.sources.window.typed_bound`): Iceberg then skips the data
files whose column statistics lie outside it. The exact typed window and ``filter_expression`` are
applied again to the rows returned, as for every source (a string column compared with a typed bound
is cast as Spark casts it, which no Iceberg predicate expresses: that group is not pushed down). The
row filter sent is recorded in ``source_action["row_filter"]``.

Query mode (``source.query``) runs the SQL on Polars' SQL engine over the Iceberg tables it names,
as the Delta reader does over Delta tables: ``schema.table`` or ``table`` (then under the source's
``schema_name``), each at its current snapshot.
"""

from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING, Any

import polars as pl

from datacoolie_core.errors import SourceError
from datacoolie_core.models.dataflow import Source
from datacoolie_core.platform import iceberg_catalog as ic
from datacoolie_core.sources.base import ReadRequest, ReadResult
from datacoolie_core.sources.collect_and_watermark import collect_scan, plan_read, read_window, source_label
from datacoolie_core.sources.window import Comparison, Window, resolve_column, typed_bound
from datacoolie_core.suggestions import did_you_mean

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table

READ_OPTIONS = ("snapshot_id",)
"""``read_options`` an Iceberg source takes."""


class IcebergReader:
    """Reads an Iceberg table (or a SQL query over the connection's Iceberg tables)."""

    def read(self, source: Source, request: ReadRequest) -> ReadResult | None:
        label = source_label(source)
        snapshot_id = _snapshot_option(source, label)
        catalog = _catalog(source, label)
        if source.query:
            lf, action = _read_query(catalog, source, source.query, label)
        else:
            ident = ic.identifier(source.connection, source.schema_name, source.table, what="source")
            table = _open(catalog, ident, label)
            lf, action = read_table(table, source, request, snapshot_id, label)
        return collect_scan(plan_read(lf, source, request, source_action=action))


def current_snapshots(source: Source) -> dict[str, int | None]:
    """``{"<namespace>.<table>": current snapshot id}`` of a table-mode source (``None``: no snapshot
    yet), read from the catalog without reading data: what a source sensor compares between
    evaluations (a commit of any kind, merges included, makes a new snapshot).

    Raises:
        SourceError: the catalog or the table cannot be loaded (the reader's errors).
    """
    label = source_label(source)
    ident = ic.identifier(source.connection, source.schema_name, source.table, what="source")
    snapshot = _open(_catalog(source, label), ident, label).current_snapshot()
    return {".".join(ident): snapshot.snapshot_id if snapshot is not None else None}


def read_table(
    table: Table, source: Source, request: ReadRequest, snapshot_id: int | None, label: str
) -> tuple[pl.LazyFrame, dict[str, Any]]:
    """The table's rows at the snapshot, the window pushed into the scan's row filter."""
    snapshot = table.snapshot_by_id(snapshot_id) if snapshot_id is not None else table.current_snapshot()
    if snapshot_id is not None and snapshot is None:
        known = [str(s.snapshot_id) for s in table.snapshots()]
        raise SourceError(
            f"{label}: read_options.snapshot_id {snapshot_id} is not a snapshot of the table"
            f"{did_you_mean(str(snapshot_id), known)}; it may have been expired"
        )
    window = read_window(source, request)
    row_filter = _pushdown(window, polars_schema(table), label) if window is not None else None
    action: dict[str, Any] = {
        "table": ".".join(table.name()),
        "snapshot_id": None if snapshot is None else snapshot.snapshot_id,
        "sequence_number": None if snapshot is None else snapshot.sequence_number,
        "row_filter": None if row_filter is None else repr(row_filter),
    }
    with ic.translate_errors(table.name(), source=True):
        if snapshot is None:  # a table with no data yet: its columns, no rows
            return pl.from_arrow(table.schema().as_arrow().empty_table()).lazy(), action  # type: ignore[union-attr]
        scan = table.scan(snapshot_id=snapshot.snapshot_id, row_filter=row_filter if row_filter is not None else "True")
        frame = pl.from_arrow(scan.to_arrow())
    assert isinstance(frame, pl.DataFrame)
    return frame.lazy(), action


def polars_schema(table: Table) -> pl.Schema:
    """The table's current columns as Polars types (what a scan of it returns)."""
    frame = pl.from_arrow(table.schema().as_arrow().empty_table())
    assert isinstance(frame, pl.DataFrame)
    return frame.schema


def _pushdown(window: Window, schema: pl.Schema, label: str) -> BooleanExpression | None:
    """The window as a pyiceberg expression (OR of AND-groups); ``None`` when a group cannot be pushed."""
    groups = []
    for group in window.groups:
        parts = [_comparison(c, schema, label, window) for c in group]
        if any(p is None for p in parts):
            return None  # the OR of the other groups alone would drop this group's rows
        groups.append(functools.reduce(operator.and_, parts))
    return functools.reduce(operator.or_, groups) if groups else None


def _comparison(comparison: Comparison, schema: pl.Schema, label: str, window: Window) -> Any:
    from pyiceberg.expressions import GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual

    name = resolve_column(comparison.column, schema.names(), label=label, mode=window.mode)
    dtype = schema[name]
    if isinstance(dtype, pl.String) and not isinstance(comparison.value, str):
        return None  # compared as Spark does, through a cast of the column: no Iceberg predicate says it
    if not isinstance(dtype, pl.String | pl.Datetime | pl.Date | pl.Decimal) and not dtype.is_numeric():
        return None
    op, value = typed_bound(comparison.op, comparison.value, dtype, column=name, label=label)
    node: Any = {">": GreaterThan, ">=": GreaterThanOrEqual, "<": LessThan, "<=": LessThanOrEqual}[op]
    return node(term=name, value=value)


def _snapshot_option(source: Source, label: str) -> int | None:
    options = source.read_options
    unknown = [k for k in options if k not in READ_OPTIONS]
    if unknown:
        key = unknown[0]
        raise SourceError(
            f"{label}: unknown Iceberg read option '{key}'{did_you_mean(key, READ_OPTIONS)} "
            f"(known: {', '.join(READ_OPTIONS)})"
        )
    value = options.get("snapshot_id")
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        raise SourceError(f"{label}: read_options.snapshot_id must be an integer snapshot id, not {value!r}") from None


def _catalog(source: Source, label: str) -> Catalog:
    try:
        return ic.get_catalog(source.connection)
    except SourceError:
        raise
    except Exception as e:  # the catalog module speaks for destinations: name the source
        raise SourceError(f"{label}: {e}") from e


def _open(catalog: Catalog, ident: tuple[str, ...], label: str) -> Table:
    with ic.translate_errors(ident, source=True):
        table = ic.load_table(catalog, ident)
        if table is not None:
            return table
        known = _tables(catalog, ident[:-1])
    wanted = ".".join(ident)
    raise SourceError(
        f"{label}: no Iceberg table '{wanted}' in catalog '{catalog.name}'{did_you_mean(wanted, known)} "
        f"(tables: {', '.join(known) or 'none'}); check schema_name/table, or run the dataflow that creates it first"
    )


def _tables(catalog: Catalog, namespace: tuple[str, ...]) -> list[str]:
    try:
        return sorted(".".join(t) for t in catalog.list_tables(namespace))
    except Exception:  # only for the error message: a missing namespace lists nothing
        return []


def _read_query(catalog: Catalog, source: Source, query: str, label: str) -> tuple[pl.LazyFrame, dict[str, Any]]:
    from datacoolie_core.sources.delta import referenced_tables
    from datacoolie_core.sql.references import query_reference_problems

    problems = query_reference_problems(query)
    if problems:
        raise SourceError(f"{label}: source.query is refused: {'; '.join(problems)}")
    context = pl.SQLContext()
    tables: dict[str, dict[str, Any]] = {}
    for schema, name in referenced_tables(query, label):
        namespace = [p for p in (source.connection.database, schema or source.schema_name) if p]
        table = _open(catalog, (*namespace, name), label)
        registered = f"{schema}.{name}" if schema else name
        frame, action = read_table(table, source, ReadRequest(), None, label)
        context.register(registered, frame)
        tables[registered] = {"table": action["table"], "snapshot_id": action["snapshot_id"]}
    try:
        lf = context.execute(query)
    except (pl.exceptions.PolarsError, ValueError) as e:
        raise SourceError(f"{label}: source.query failed on Polars SQL: {e}; use functions Polars SQL supports") from e
    return lf, {"query": query, "tables": tables}
