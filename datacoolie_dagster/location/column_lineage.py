"""Column lineage and column schema of a destination table, from its metadata alone (no data is read).

The transformer slots are replayed on column *names*: value rules and masking keep a column's
sources, schema hints set its type, hash and computed columns (their SQL read with sqlglot) depend
on the columns they name, renames and the slot-90 sanitizer rename, projections keep or drop, and
the framework adds its columns (no upstream). Where a column comes from:

- a ``source.query``: sqlglot's column lineage (:func:`sqlglot.lineage.lineage`) through joins,
  CTEs and aggregates to the columns of the tables it reads;
- a table, file folder or function: the column of the same name there.

Load time knows only the columns the metadata names (a source read whole has columns nobody
declared), so :attr:`TableColumns.complete` says whether the list is the whole table. After a write
:func:`written_lineage` completes it from the Delta schema: an undeclared column comes, under its
own name, from the sources read whole (:attr:`TableColumns.passthrough`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

import dagster as dg

from datacoolie_core import DataFlow
from datacoolie_core.api import TransformError
from datacoolie_core.columns import (
    CREATED_AT,
    DATAFLOW_RUN_ID,
    FILE_COLUMNS,
    IS_CURRENT,
    SYSTEM_COLUMNS,
    TRAILING_COLUMNS,
    UPDATED_AT,
    UPDATED_BY,
    VALID_FROM,
    VALID_TO,
)
from datacoolie_dagster.location.tables import SourceRef, query_tables, source_refs

if TYPE_CHECKING:
    from datacoolie_core.api import ColumnNameMode

MODE: ColumnNameMode = "lower"
"""The resource's ``column_name_mode``: the written table's names."""
Dep = tuple[dg.AssetKey, str]
KeyOf = Callable[[SourceRef], tuple[dg.AssetKey, bool]]
"""A source's asset key, and whether it is one of our tables (its columns have sanitized names)."""

_FRAMEWORK_TYPES = {
    CREATED_AT: ("timestamp", "framework: when the row was first written"),
    UPDATED_AT: ("timestamp", "framework: when the row was last written"),
    UPDATED_BY: ("string", "framework: the writer ('DataCoolie')"),
    DATAFLOW_RUN_ID: ("string", "framework: the dataflow run that wrote the row"),
    "__file_name": ("string", "framework: the source file's name"),
    "__file_path": ("string", "framework: the source file's path"),
    "__file_modification_time": ("timestamp", "framework: the source file's modification time (UTC)"),
}


def sanitize_name(name: str, mode: ColumnNameMode) -> str:
    """Core's ``sanitize_name``."""
    # core's column naming imports Polars: it loads with the first transform, not with a code location of copies
    from datacoolie_core.api import sanitize_name as sanitize

    return sanitize(name, mode)


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table: where its values come from, its type and what the metadata says of it."""

    deps: tuple[Dep, ...] = ()
    type: str | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class TableColumns:
    """The columns of a destination table that its metadata declares or derives, in table order."""

    columns: Mapping[str, Column]
    complete: bool
    """Every column of the written table is listed (a projection, or a query without ``*``)."""
    passthrough: tuple[dg.AssetKey, ...] = ()
    """Sources read whole: a written column not listed comes from the column of its name there."""

    def declared(self) -> TableColumns:
        """What the specs show: the columns the metadata says something about.

        That is every column of a complete list (a projection, a query), else the columns a
        transform computes, types, renames, masks or cleans. Left to the writes, which record every
        column: the framework's audit and file columns (the same on every table) and the plain
        copies of source columns a load only names (keys, watermarks). On all 1,000 tables of
        ``benchmarks/bench_load.py`` those would grow the serialized code location by ~45 % and its
        load by ~10 %, to say what the first write says anyway.
        """
        kept = {
            n: c
            for n, c in self.columns.items()
            if n not in SYSTEM_COLUMNS and n not in FILE_COLUMNS and (self.complete or c.type or c.description)
        }
        return TableColumns(kept, self.complete, self.passthrough)

    @classmethod
    def copied(cls, sources: Sequence[dg.AssetKey]) -> TableColumns:
        """The columns of a plain copy of ``sources``: none declared, each written one from its namesake."""
        return cls(_NO_COLUMNS, False, tuple(sources))

    def lineage(self) -> dg.TableColumnLineage:
        return dg.TableColumnLineage(deps_by_column={name: _deps(c.deps) for name, c in self.columns.items()})

    def schema(self) -> dg.TableSchema:
        return dg.TableSchema(columns=[_table_column(name, c) for name, c in self.columns.items()])


_NO_COLUMNS: Mapping[str, Column] = MappingProxyType({})


@dataclass
class _Col:
    deps: list[Dep] = field(default_factory=list)
    type: str | None = None
    notes: list[str] = field(default_factory=list)


class _Frame:
    """The columns one dataflow's frame has at a slot, by their current names."""

    def __init__(self, source: Callable[[str], list[Dep]]) -> None:
        self.columns: dict[str, _Col] = {}
        self.source = source
        self.complete = False

    def find(self, name: str) -> str | None:
        try:
            from datacoolie_core.api import find_column  # Polars, as sanitize_name

            return find_column(list(self.columns), name, MODE)
        except TransformError:  # ambiguous: the run will say so; the catalog does not guess
            return None

    def get(self, name: str) -> _Col:
        """The column ``name`` names; a column not seen yet comes from the source."""
        found = self.find(name)
        if found is None:
            found = name
            self.columns[name] = _Col(deps=self.source(name))
        return self.columns[found]

    def put(self, name: str, col: _Col) -> None:
        """Add ``col`` as ``name``, replacing (in place) a column of that name."""
        self.columns[self.find(name) or name] = col

    def deps_of(self, sql: str) -> list[Dep]:
        names, _ = _expression(sql)
        return list(dict.fromkeys(dep for name in names for dep in self.get(name).deps))


def table_columns(dataflows: Sequence[DataFlow], key_of: KeyOf) -> TableColumns:
    """The declared and derived columns of the table ``dataflows`` write (fan-in: their union)."""
    plans = [_dataflow_columns(d, key_of) for d in dataflows]
    merged: dict[str, _Col] = {}
    for frame, _ in plans:
        for name, col in frame.items():
            into = merged.setdefault(name, _Col(type=col.type))
            into.deps = list(dict.fromkeys([*into.deps, *col.deps]))
            into.type = into.type or col.type
            into.notes = list(dict.fromkeys([*into.notes, *col.notes]))
    if not merged:  # plain copies (most tables): one shared empty mapping, no garbage-collected dict each
        return TableColumns(_NO_COLUMNS, False, tuple(dict.fromkeys(k for _, keys in plans for k in keys or ())))
    from datacoolie_core.api import trailing_order  # Polars, as sanitize_name

    names = trailing_order(list(merged))
    columns = {n: Column(tuple(merged[n].deps), merged[n].type, "; ".join(merged[n].notes) or None) for n in names}
    passthrough = tuple(dict.fromkeys(k for _, keys in plans for k in keys or ()))
    complete = all(keys is None for _, keys in plans)
    return TableColumns(columns, complete, passthrough)


def written_lineage(columns: TableColumns, written: Iterable[str]) -> dict[str, Column]:
    """Every written column with its lineage: the declared ones, and the others from the sources read whole."""
    result: dict[str, Column] = {}
    for name in written:
        known = columns.columns.get(name) or columns.columns.get(sanitize_name(name, MODE))
        if known is not None:
            result[name] = known
        elif name in TRAILING_COLUMNS:
            result[name] = Column(description=_FRAMEWORK_TYPES.get(name, (None, "framework column"))[1])
        else:
            result[name] = Column(deps=tuple((key, name) for key in columns.passthrough))
    return result


def _dataflow_columns(dataflow: DataFlow, key_of: KeyOf) -> tuple[dict[str, _Col], tuple[dg.AssetKey, ...] | None]:
    """The final columns of one dataflow, and its sources read whole (``None`` when the list is complete)."""
    if copies(dataflow):
        # nothing to replay: its columns are the source's, as every write records them; skipping
        # keeps a code location of plain copies as light to load as without column lineage
        return {}, tuple(key for key, _ in map(key_of, source_refs(dataflow)))
    frame, whole = _source_frame(dataflow, key_of)
    for step in _SLOTS:
        step(frame, dataflow)
    final = {sanitize_name(name, MODE): col for name, col in frame.columns.items()}
    return final, None if frame.complete else whole


def copies(dataflow: DataFlow) -> bool:
    """Whether ``dataflow`` writes its source's columns unchanged (plus the framework's)."""
    transform, destination = dataflow.transform, dataflow.destination
    touched = (
        transform.value_rules, transform.schema_hints, transform.hash_columns, transform.additional_columns,
        transform.masking_rules, transform.select_columns, transform.drop_columns, transform.rename_columns,
    )  # fmt: skip
    return not (
        dataflow.source.query
        or any(touched)
        or destination.load_type == "scd2"
        or any(p.expression for p in destination.partition_columns)
    )


def _source_frame(dataflow: DataFlow, key_of: KeyOf) -> tuple[_Frame, tuple[dg.AssetKey, ...]]:
    source = dataflow.source
    refs = source_refs(dataflow)
    if source.query and refs and refs[0].detail is None:
        return _query_frame(source.query, refs, key_of)
    keyed = [key_of(ref) for ref in refs]

    def read(name: str) -> list[Dep]:
        return [(key, sanitize_name(name, MODE) if ours else name) for key, ours in keyed]

    frame = _Frame(read)
    if source.connection.connection_type == "file":
        for name in FILE_COLUMNS:
            frame.columns[name] = _framework(name)
    return frame, tuple(key for key, _ in keyed)


def _query_frame(query: str, refs: Sequence[SourceRef], key_of: KeyOf) -> tuple[_Frame, tuple[dg.AssetKey, ...]]:
    """The columns a query returns, each traced by sqlglot to the columns of the tables it reads."""
    tables = query_tables(query)  # in the order source_refs made ``refs`` from them
    by_table = {(s.lower() if s else None, t.lower()): key_of(r) for (s, t), r in zip(tables, refs, strict=True)}
    from sqlglot.lineage import lineage  # with sqlglot's optimizer: loaded for query sources only

    from datacoolie_core.api import READ_DIALECT

    try:
        outputs = lineage(None, query, schema={}, dialect=READ_DIALECT)
    except Exception:  # lineage is catalog information: a query sqlglot cannot trace still loads
        return _Frame(lambda name: []), ()
    star: list[tuple[dg.AssetKey, bool]] = []
    traced: dict[str, list[Dep]] = {}
    for name, node in outputs.items():
        leaves = [(n, by_table.get(_table_of(n.expression) or ("", ""))) for n in node.walk() if not n.downstream]
        deps = [(k, _column(n.name, ours)) for n, (k, ours) in ((n, t) for n, t in leaves if t is not None)]
        if name == "*":
            star += [t for _, t in leaves if t is not None]
        else:
            traced[name] = list(dict.fromkeys(deps))
    star_keys = list(dict.fromkeys(star))

    def read(name: str) -> list[Dep]:
        return [(key, _column(name, ours)) for key, ours in star_keys]

    frame = _Frame(read)
    for name, deps in traced.items():
        frame.columns[name] = _Col(deps=deps)
    frame.complete = not star_keys and "*" not in outputs
    return frame, tuple(key for key, _ in star_keys)


def _table_of(node: object) -> tuple[str | None, str] | None:
    from sqlglot import exp

    if not isinstance(node, exp.Table):
        return None  # a literal or COUNT(*): no source column
    return (node.db.lower() or None, node.name.lower())


def _column(name: str, ours: bool) -> str:
    bare = name.rsplit(".", 1)[-1]
    return sanitize_name(bare, MODE) if ours else bare


def _framework(name: str, deps: list[Dep] | None = None, type_: str | None = None) -> _Col:
    known_type, note = _FRAMEWORK_TYPES.get(name, (None, "framework column"))
    return _Col(deps=deps or [], type=type_ or known_type, notes=[note])


# --- the slots, in pipeline order (datacoolie_core.transforms.pipeline) ------------------------------


def _value_rules(frame: _Frame, dataflow: DataFlow) -> None:
    for rule in sorted(dataflow.transform.value_rules, key=lambda r: r.order):
        for name in rule.columns:
            frame.get(name).notes.append(f"value rule: {rule.operation}")


def _schema_hints(frame: _Frame, dataflow: DataFlow) -> None:
    for hint in dataflow.transform.schema_hints:
        if hint.is_active:
            col = frame.get(hint.column_name)
            col.type = hint.type_string
            col.notes.append(f"schema hint: {hint.type_string}")


def _named(frame: _Frame, dataflow: DataFlow) -> None:
    """Columns the load itself names exist in the source: keys, watermarks, dedup order."""
    transform, destination = dataflow.transform, dataflow.destination
    names = [*destination.merge_keys, *dataflow.source.watermark_columns, *transform.deduplicate_columns]
    for name in [*names, *transform.latest_data_columns]:
        if name not in TRAILING_COLUMNS and not name.startswith("__"):
            frame.get(name)


def _hashes(frame: _Frame, dataflow: DataFlow) -> None:
    for definition in dataflow.transform.hash_columns:
        deps = list(dict.fromkeys(d for name in definition.columns for d in frame.get(name).deps))
        note = f"{definition.algorithm} hash ({definition.serialization}) of {', '.join(definition.columns)}"
        frame.put(definition.target_column, _Col(deps=deps, type="string", notes=[note]))


def _computed(frame: _Frame, dataflow: DataFlow) -> None:
    for column in dataflow.transform.additional_columns:
        col = _Col(deps=frame.deps_of(column.expression), type=_cast_type(column.expression))
        col.notes.append(f"computed: {column.expression}")
        frame.put(column.column, col)


def _scd2(frame: _Frame, dataflow: DataFlow) -> None:
    destination = dataflow.destination
    sql = destination.configure.scd2_effective_column
    if destination.load_type != "scd2" or not sql:
        return
    named = frame.find(sql)
    deps = frame.columns[named].deps if named else frame.deps_of(sql)
    type_ = frame.columns[named].type if named else _cast_type(sql)
    frame.columns[VALID_FROM] = _Col(deps=list(deps), type=type_, notes=[f"SCD2: version start, from {sql}"])
    frame.columns[VALID_TO] = _Col(type=type_, notes=["SCD2: version end (null while current)"])
    frame.columns[IS_CURRENT] = _Col(type="boolean", notes=["SCD2: the current version of its key"])


def _system(frame: _Frame, dataflow: DataFlow) -> None:
    for name in SYSTEM_COLUMNS:
        frame.columns.pop(name, None)
        frame.columns[name] = _framework(name)


def _partitions(frame: _Frame, dataflow: DataFlow) -> None:
    for partition in dataflow.destination.partition_columns:
        if partition.expression:
            col = _Col(deps=frame.deps_of(partition.expression), type=_cast_type(partition.expression))
            col.notes.append(f"partition column: {partition.expression}")
            frame.put(partition.column, col)
        else:
            frame.get(partition.column).notes.append("partition column")


def _masking(frame: _Frame, dataflow: DataFlow) -> None:
    for rule in dataflow.transform.masking_rules:
        for name in rule.columns:
            frame.get(name).notes.append(f"masked: {rule.method}")


def _projection(frame: _Frame, dataflow: DataFlow) -> None:
    transform = dataflow.transform
    if transform.select_columns:
        kept = [frame.find(n) or n for n in transform.select_columns]
        for name in kept:
            frame.get(name)
        trailing = [n for n in frame.columns if n in TRAILING_COLUMNS]
        frame.columns = {n: frame.columns[n] for n in dict.fromkeys([*kept, *trailing])}
        frame.complete = True
    for name in transform.drop_columns:
        found = frame.find(name)
        if found is not None:
            del frame.columns[found]
    for old, new in transform.rename_columns.items():
        found = frame.find(old) or old
        col = frame.get(found)
        col.notes.append(f"renamed from {old}")
        frame.columns = {(new if n == found else n): c for n, c in frame.columns.items()}


_SLOTS = (_value_rules, _schema_hints, _named, _hashes, _computed, _scd2, _system, _partitions, _masking, _projection)


def _cast_type(sql: str) -> str | None:
    """The type of an expression that is a ``CAST``, else ``None`` (the written schema will tell)."""
    return _expression(sql)[1]


@functools.lru_cache(maxsize=4096)
def _expression(sql: str) -> tuple[tuple[str, ...], str | None]:
    """The columns a metadata SQL expression reads, and its type when it is a ``CAST``.

    Parsed once per text (a table uses its expressions for lineage and type; parsing dominates the
    cost of a table's columns at load). The model validated it already: unparsable is unknown here.
    """
    from sqlglot import exp  # with the first expression: a code location of copies never parses SQL

    from datacoolie_core.api import READ_DIALECT, SqlExpressionError, column_names, parse_expression

    try:
        node = parse_expression(sql)
    except SqlExpressionError:
        return (), None
    cast = node.to.sql(dialect=READ_DIALECT).lower() if isinstance(node, exp.Cast) else None
    return tuple(column_names(node)), cast


def _deps(deps: Iterable[Dep]) -> list[dg.TableColumnDep]:
    return [dg.TableColumnDep(asset_key=key, column_name=name) for key, name in deps]


def _table_column(name: str, column: Column) -> dg.TableColumn:
    # a type the metadata does not state is left blank: the first write's schema (Delta's) tells it
    return dg.TableColumn(name, column.type or "", description=column_description(column))


def column_description(column: Column) -> str | None:
    """What the metadata says of a column, then where its values come from (``from key.column``).

    The open-source UI shows no ``dagster/column_lineage`` (a Dagster+ view); its Columns table shows
    descriptions, so each column's lineage is also written there.
    """
    sources = ", ".join(f"{key.to_user_string()}.{name}" for key, name in column.deps)
    parts = [p for p in (column.description, f"from {sources}" if sources else None) if p]
    return " · ".join(parts) or None
