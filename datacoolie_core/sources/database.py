"""The database reader: SQLite, PostgreSQL, MySQL/MariaDB, SQL Server and Oracle tables and queries (DataCoolie S-21 … S-23, F-21).

Table mode reads ``SELECT * FROM "schema"."table"``; query mode (``source.query``, which wins when
both are set) runs the user's query, wrapped as ``SELECT * FROM (<query>) AS t1 WHERE …`` when a
watermark window or ``filter_expression`` must be applied. The WHERE clause is built by
:mod:`~datacoolie_core.sources.pushdown` from sqlglot trees in the database's dialect: quoted
identifiers, literals typed like their column, ``(window) AND (filter)``. To resolve column names
case-insensitively and type the bounds, the query's columns are described first (a probe that
returns no row: ``LIMIT 0`` / ``TOP 0`` / ``FETCH FIRST 0 ROWS ONLY``, and the cursor's types;
SQLite: the declared types of a temporary view of the query). The exact SQL submitted is recorded
in ``source_action["query"]``; it never holds credentials.

Connections (``connection.configure``; :mod:`~datacoolie_core.sources.db_kinds` lists the kinds):

* SQLite: ``database`` is the file path (relative to the working directory), or
  ``url = "sqlite:///path"``. Opened read-only; a missing file is an error, never a new database.
  SQLite has no temporal types: columns declared ``DATE`` / ``DATETIME`` / ``TIMESTAMP`` holding ISO
  text are parsed into ``Date`` / ``Datetime`` columns.
* PostgreSQL (``psycopg2``), MySQL/MariaDB (``pymysql``), SQL Server (``pymssql``), Oracle
  (``oracledb``): ``host``, ``port`` (default 5432 / 3306 / 1433 / 1521), ``database`` (Oracle: the
  service name), ``username``, ``password``, or ``url`` (``postgresql://``, ``mysql://`` or
  ``mariadb://``, ``mssql://``, ``oracle://``; ``{user}``/``{password}``/``{host}``/``{port}``/
  ``{database}`` placeholders are filled in). Sessions are read-only where the database allows
  it, and in UTC, so naive timestamps compare as UTC and zoned ones come back in UTC.

PostgreSQL rows are fetched with ``polars.read_database`` (``read_options`` are its keyword
arguments); MySQL, SQL Server and Oracle rows by :mod:`~datacoolie_core.sources.db_dbapi`, in the
dtypes of their database types (``read_options``: ``batch_size``). The exact typed window is
applied again to the rows returned, then count and new watermark as usual. Driver errors become
:class:`SourceError` (cause kept, password never in the message).
"""

from __future__ import annotations

import os
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import polars as pl
from sqlglot import exp

from datacoolie_core.errors import SourceConnectionError, SourceError
from datacoolie_core.models.connection import Connection
from datacoolie_core.models.dataflow import Source
from datacoolie_core.sources import db_dbapi
from datacoolie_core.sources.base import ReadRequest, ReadResult
from datacoolie_core.sources.collect_and_watermark import collect_scan, plan_read, read_window, source_label
from datacoolie_core.sources.db_kinds import KINDS, get_kind
from datacoolie_core.sources.options import polars_options
from datacoolie_core.sources.pushdown import Columns, parse_query, probe, table_query, where_condition, wrap

DIALECTS = {kind.name: kind.dialect for kind in KINDS.values()}
"""``database_type`` -> sqlglot dialect, for the databases this engine reads."""
_BY_DIALECT = {kind.dialect: kind for kind in KINDS.values()}

_PG_TYPES: dict[int, pl.DataType] = {
    16: pl.Boolean(), 20: pl.Int64(), 21: pl.Int64(), 23: pl.Int64(), 700: pl.Float64(), 701: pl.Float64(),
    1082: pl.Date(), 1114: pl.Datetime("us"), 1184: pl.Datetime("us", "UTC"), 25: pl.String(), 1042: pl.String(),
    1043: pl.String(), 19: pl.String(),
}  # fmt: skip
"""PostgreSQL type OIDs -> the dtype ``polars.read_database`` gives those columns."""
_NUMERIC_OID = 1700


class DatabaseReader:
    """Reads a table or query of a SQLite, PostgreSQL, MySQL/MariaDB, SQL Server or Oracle database."""

    def read(self, source: Source, request: ReadRequest) -> ReadResult | None:
        label = source_label(source)
        connection = source.connection
        dialect = get_dialect(connection, label)
        base = base_query(source, dialect, label)
        window = read_window(source, request)
        with connect(connection, dialect, label) as conn:
            declared = _sqlite_types(conn, base, label) if dialect == "sqlite" else None
            condition = None
            if window is not None or source.filter_expression:
                columns = declared if declared is not None else _describe(conn, base, connection, dialect, label)
                condition = where_condition(window, source.filter_expression, columns, dialect, label=label)
            sql = final_sql(source.query, base, condition, dialect)
            data = _fetch(conn, sql, source.read_options, connection, dialect, label)
        if declared:
            data = _parse_sqlite_temporals(data, declared, label)
        if data.height == 0:
            return None
        action = {"database_type": connection.configure.database_type or dialect, "query": sql}
        return collect_scan(plan_read(data.lazy(), source, request, source_action=action, apply_filter=False))


def get_dialect(connection: Connection, label: str) -> str:
    """The sqlglot dialect of the connection's ``database_type`` (or its ``url`` scheme).

    Raises:
        SourceError: not a database this engine reads.
    """
    return get_kind(connection, label).dialect


def _table(source: Source, dialect: str, label: str) -> exp.Select:
    if not source.table:
        raise SourceError(f"{label}: a database source needs table or query")
    return table_query(source.schema_name, source.table, dialect)


def base_query(source: Source, dialect: str, label: str) -> exp.Query:
    """The source's query (parsed ``source.query``) or its table's ``SELECT *``, in ``dialect``."""
    return parse_query(source.query, dialect, label=label) if source.query else _table(source, dialect, label)


def final_sql(user_query: str | None, base: exp.Query, condition: exp.Expr | None, dialect: str) -> str:
    """The SQL submitted: ``base`` (the table, or the parsed ``user_query``) filtered by ``condition``.

    A user query with nothing to filter is submitted as written; otherwise it is wrapped.
    """
    if condition is None:
        return user_query if user_query else base.sql(dialect=dialect)
    outer = wrap(base) if user_query else base.copy()
    assert isinstance(outer, exp.Select)  # table mode builds a SELECT; query mode is wrapped in one
    return outer.where(condition, copy=False).sql(dialect=dialect)


@contextmanager
def connect(connection: Connection, dialect: str, label: str) -> Iterator[Any]:
    """An open connection of ``connection`` (a DB-API connection), closed on exit."""
    if dialect == "sqlite":
        conn = _open_sqlite(connection, label)
    elif dialect == "postgres":
        conn = _open_postgres(connection, label)
    else:
        conn = _backend(dialect).connect(connection, label)
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
        params["dsn"] = db_dbapi.fill_url(c.url, connection)
    else:
        params |= {"host": c.host, "port": c.port or 5432, "dbname": c.database or connection.database,
                   "user": c.username, "password": c.password}  # fmt: skip
    try:
        conn = psycopg2.connect(**params)
        conn.set_session(readonly=True, autocommit=True)
    except psycopg2.Error as e:
        raise SourceConnectionError(f"{label}: cannot connect to PostgreSQL: {scrub(str(e), connection)}") from e
    return conn


def _backend(dialect: str) -> db_dbapi.Backend:
    return db_dbapi.get_backend(_BY_DIALECT[dialect])


def _describe(conn: Any, base: exp.Query, connection: Connection, dialect: str, label: str) -> Columns:
    if dialect != "postgres":
        return db_dbapi.describe(conn, base, _backend(dialect), dialect, label, lambda m: scrub(m, connection))
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


def _fetch(
    conn: Any, sql: str, options: dict[str, Any], connection: Connection, dialect: str, label: str
) -> pl.DataFrame:
    if dialect not in ("sqlite", "postgres"):
        return db_dbapi.fetch(conn, sql, _backend(dialect), options, label, lambda m: scrub(m, connection))
    kwargs = {"infer_schema_length": None} | polars_options(pl.read_database, options, label=label)
    try:
        result = pl.read_database(sql, conn, **kwargs)
        return result if isinstance(result, pl.DataFrame) else pl.concat(list(result))  # iter_batches=True
    except driver_errors() as e:
        raise SourceError(f"{label}: the source query failed: {scrub(str(e), connection)}; query: {sql}") from e


def driver_errors() -> tuple[type[Exception], ...]:
    """The exception bases of Polars and of the drivers in use (a driver never imported raised nothing)."""
    errors: list[type[Exception]] = [sqlite3.Error, pl.exceptions.PolarsError]
    try:
        import psycopg2
    except ImportError:
        pass
    else:
        errors.append(psycopg2.Error)
    for kind in KINDS.values():
        if kind.backend and kind.driver in sys.modules:
            errors += _backend(kind.dialect).errors()
    return tuple(errors)


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
    """``message`` without the connection's password (given as ``password`` or inside ``url``)."""
    c = connection.configure
    url_password = urlsplit(db_dbapi.fill_url(c.url, connection)).password if c.url else None
    for password in {c.password, url_password, unquote(url_password or "")} - {None, ""}:
        assert password is not None
        message = message.replace(password, "***").replace(quote(password, safe=""), "***")
    return message
