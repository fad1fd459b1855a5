"""The database reader: SQLite and PostgreSQL tables and queries (DataCoolie S-21 … S-23, F-21).

Table mode reads ``SELECT * FROM "schema"."table"``; query mode (``source.query``, which wins when
both are set) runs the user's query, wrapped as ``SELECT * FROM (<query>) AS t1 WHERE …`` when a
watermark window or ``filter_expression`` must be applied. The WHERE clause is built by
:mod:`~datacoolie_core.sources.pushdown` from sqlglot trees: quoted identifiers, literals typed
like their column, ``(window) AND (filter)``. To resolve column names case-insensitively and type
the bounds, the query's columns are described first (PostgreSQL: ``LIMIT 0`` and the cursor's type
codes; SQLite: the declared types of a temporary view of the query). The exact SQL submitted is
recorded in ``source_action["query"]``; it never holds credentials.

Connections (``connection.configure``):

* SQLite: ``database`` is the file path (relative to the working directory), or
  ``url = "sqlite:///path"``. Opened read-only; a missing file is an error, never a new database.
  SQLite has no temporal types: columns declared ``DATE`` / ``DATETIME`` / ``TIMESTAMP`` holding ISO
  text are parsed into ``Date`` / ``Datetime`` columns.
* PostgreSQL (``psycopg2``): ``host``, ``port`` (5432), ``database``, ``username``, ``password``, or
  ``url`` (``postgresql://…``, ``{user}``/``{password}``/``{host}``/``{port}``/``{database}``
  placeholders are filled in). Sessions are read-only and in UTC, so naive timestamps compare
  as UTC and ``timestamptz`` values come back in UTC.

Rows are fetched with ``polars.read_database`` (``read_options`` are its keyword arguments); the
exact typed window is applied again to the rows returned, then count and new watermark as usual.
Driver errors become :class:`SourceError` (cause kept, password never in the message).
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import Any
from urllib.parse import quote

import polars as pl
from sqlglot import exp

from datacoolie_core.errors import SourceConnectionError, SourceError
from datacoolie_core.models.connection import Connection
from datacoolie_core.models.dataflow import Source
from datacoolie_core.sources.base import ReadRequest, ReadResult
from datacoolie_core.sources.finalize import finalize, read_window, source_label
from datacoolie_core.sources.options import polars_options
from datacoolie_core.sources.pushdown import Columns, parse_query, probe, table_query, where_condition, wrap

DIALECTS = {"postgresql": "postgres", "sqlite": "sqlite"}
"""``database_type`` -> sqlglot dialect, for the databases this engine reads."""

_PG_TYPES: dict[int, pl.DataType] = {
    16: pl.Boolean(), 20: pl.Int64(), 21: pl.Int64(), 23: pl.Int64(), 700: pl.Float64(), 701: pl.Float64(),
    1082: pl.Date(), 1114: pl.Datetime("us"), 1184: pl.Datetime("us", "UTC"), 25: pl.String(), 1042: pl.String(),
    1043: pl.String(), 19: pl.String(),
}  # fmt: skip
"""PostgreSQL type OIDs -> the dtype ``polars.read_database`` gives those columns."""
_NUMERIC_OID = 1700


class DatabaseReader:
    """Reads a table or query of a SQLite or PostgreSQL database."""

    def read(self, source: Source, request: ReadRequest) -> ReadResult | None:
        label = source_label(source)
        connection = source.connection
        dialect = get_dialect(connection, label)
        base = parse_query(source.query, dialect, label=label) if source.query else _table(source, dialect, label)
        window = read_window(source, request)
        with connect(connection, dialect, label) as conn:
            declared = _sqlite_types(conn, base, label) if dialect == "sqlite" else None
            condition = None
            if window is not None or source.filter_expression:
                columns = declared if declared is not None else _describe(conn, base, connection, label)
                condition = where_condition(window, source.filter_expression, columns, dialect, label=label)
            sql = _final_sql(source, base, condition, dialect)
            data = _fetch(conn, sql, source.read_options, connection, label)
        if declared:
            data = _parse_sqlite_temporals(data, declared, label)
        if data.height == 0:
            return None
        action = {"database_type": connection.configure.database_type or dialect, "query": sql}
        return finalize(data.lazy(), source, request, source_action=action, apply_filter=False)


def get_dialect(connection: Connection, label: str) -> str:
    """The sqlglot dialect of the connection's ``database_type`` (or its ``url`` scheme)."""
    kind = connection.configure.database_type
    url = connection.configure.url or ""
    if kind is None and url.startswith(("postgres://", "postgresql://")):
        kind = "postgresql"
    elif kind is None and url.startswith("sqlite:"):
        kind = "sqlite"
    if kind not in DIALECTS:
        raise SourceError(
            f"{label}: database_type '{kind or 'unset'}' is not supported by this engine (supported: "
            f"{', '.join(DIALECTS)}); set configure.database_type, or read the data through a function source"
        )
    return DIALECTS[kind]


def _table(source: Source, dialect: str, label: str) -> exp.Select:
    if not source.table:
        raise SourceError(f"{label}: a database source needs table or query")
    return table_query(source.schema_name, source.table)


def _final_sql(source: Source, base: exp.Query, condition: exp.Expr | None, dialect: str) -> str:
    if condition is None:
        return source.query if source.query else base.sql(dialect=dialect)
    outer = wrap(base) if source.query else base.copy()
    assert isinstance(outer, exp.Select)  # table mode builds a SELECT; query mode is wrapped in one
    return outer.where(condition, copy=False).sql(dialect=dialect)


@contextmanager
def connect(connection: Connection, dialect: str, label: str) -> Iterator[Any]:
    conn = _open_sqlite(connection, label) if dialect == "sqlite" else _open_postgres(connection, label)
    with closing(conn):
        yield conn


def _open_sqlite(connection: Connection, label: str) -> sqlite3.Connection:
    url = connection.configure.url or ""
    path = connection.configure.database or connection.database or url.removeprefix("sqlite:///")
    if not path or not os.path.isfile(path):
        raise SourceError(
            f"{label}: SQLite database file '{path}' does not exist (resolved against {os.getcwd()}); "
            "fix configure.database"
        )
    try:
        return sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise SourceError(f"{label}: cannot open SQLite database '{path}': {e}") from e


def _open_postgres(connection: Connection, label: str) -> Any:
    try:
        import psycopg2
    except ImportError as e:
        raise SourceError(f"{label}: reading PostgreSQL needs psycopg2; install it: pip install psycopg2-binary") from e
    c = connection.configure
    params: dict[str, Any] = {"options": "-c TimeZone=UTC"}
    if c.url:
        params["dsn"] = _fill_url(c.url, connection)
    else:
        params |= {"host": c.host, "port": c.port or 5432, "dbname": c.database or connection.database,
                   "user": c.username, "password": c.password}  # fmt: skip
    try:
        conn = psycopg2.connect(**params)
        conn.set_session(readonly=True, autocommit=True)
    except psycopg2.Error as e:
        raise SourceConnectionError(f"{label}: cannot connect to PostgreSQL: {scrub(str(e), connection)}") from e
    return conn


def _fill_url(url: str, connection: Connection) -> str:
    c = connection.configure
    values = {"user": c.username, "username": c.username, "password": c.password, "host": c.host,
              "port": c.port, "database": c.database or connection.database}  # fmt: skip
    for key, value in values.items():
        url = url.replace("{" + key + "}", quote(str(value), safe="") if value is not None else "")
    return url


def _describe(conn: Any, base: exp.Query, connection: Connection, label: str) -> Columns:
    sql = probe(base).sql(dialect="postgres")
    try:
        with conn.cursor() as cursor:
            cursor.execute(sql)
            return {col.name: _pg_dtype(col) for col in cursor.description}
    except driver_errors() as e:
        raise SourceError(f"{label}: the source query failed: {scrub(str(e), connection)}; query: {sql}") from e


def _pg_dtype(column: Any) -> pl.DataType | None:
    if column.type_code == _NUMERIC_OID:
        return pl.Decimal(38, column.scale) if column.scale is not None and column.scale >= 0 else None
    return _PG_TYPES.get(column.type_code)


def _sqlite_types(conn: sqlite3.Connection, base: exp.Query, label: str) -> Columns:
    """Columns of ``base`` and the dtypes their SQLite declared types stand for."""
    view = f"datacoolie_probe_{uuid.uuid4().hex}"
    create = exp.Create(this=exp.to_table(view), kind="VIEW", expression=base.copy(),
                        properties=exp.Properties(expressions=[exp.TemporaryProperty()]))  # fmt: skip
    try:
        conn.execute(create.sql(dialect="sqlite"))
        rows = conn.execute("SELECT name, type FROM pragma_table_info(?, 'temp')", (view,)).fetchall()
        conn.execute(exp.Drop(tables=[exp.to_table(view)], kind="VIEW").sql(dialect="sqlite"))
    except sqlite3.Error as e:
        raise SourceError(f"{label}: the source query failed on SQLite: {e}; check the table/query") from e
    return {name: sqlite_dtype(declared or "") for name, declared in rows}


def sqlite_dtype(declared: str) -> pl.DataType | None:
    """The dtype a SQLite declared type stands for (its affinity rules, plus dates and timestamps)."""
    kind = declared.upper()
    if "TIMESTAMP" in kind or "DATETIME" in kind:
        return pl.Datetime("us")
    if "DATE" in kind:
        return pl.Date()
    if "INT" in kind:
        return pl.Int64()
    if any(word in kind for word in ("CHAR", "CLOB", "TEXT")):
        return pl.String()
    if any(word in kind for word in ("REAL", "FLOA", "DOUB")):
        return pl.Float64()
    return None


def _fetch(conn: Any, sql: str, options: dict[str, Any], connection: Connection, label: str) -> pl.DataFrame:
    kwargs = {"infer_schema_length": None} | polars_options(pl.read_database, options, label=label)
    try:
        result = pl.read_database(sql, conn, **kwargs)
        return result if isinstance(result, pl.DataFrame) else pl.concat(list(result))  # iter_batches=True
    except driver_errors() as e:
        raise SourceError(f"{label}: the source query failed: {scrub(str(e), connection)}; query: {sql}") from e


def driver_errors() -> tuple[type[Exception], ...]:
    """The exception bases of the drivers (psycopg2 only when installed) and of Polars."""
    errors: tuple[type[Exception], ...] = (sqlite3.Error, pl.exceptions.PolarsError)
    try:
        import psycopg2
    except ImportError:
        return errors
    return (*errors, psycopg2.Error)


def _parse_sqlite_temporals(data: pl.DataFrame, declared: Columns, label: str) -> pl.DataFrame:
    parse = []
    for name, dtype in declared.items():
        if name in data.columns and data.schema[name] == pl.String and isinstance(dtype, pl.Date | pl.Datetime):
            text = pl.col(name).str.replace(r"^(\d{4}-\d{2}-\d{2})T", "${1} ")  # both ISO spellings
            parse.append(text.str.to_date() if isinstance(dtype, pl.Date) else text.str.to_datetime(time_unit="us"))
    try:
        return data.with_columns(parse)
    except pl.exceptions.PolarsError as e:
        raise SourceError(
            f"{label}: a SQLite column declared as a date/timestamp holds text that is not one ISO format: {e}; "
            "store one ISO format per column, or declare the column TEXT"
        ) from e


def scrub(message: str, connection: Connection) -> str:
    password = connection.configure.password
    if not password:
        return message
    return message.replace(password, "***").replace(quote(password, safe=""), "***")
