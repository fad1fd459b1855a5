"""Reading MySQL/MariaDB, SQL Server and Oracle through their DB-API drivers, typed by the driver.

``polars.read_database`` does not take these drivers' connections (pymysql's ``execute`` returns a
row count, not a cursor), and would type columns from their values. Here the rows are fetched in
batches of ``read_options.batch_size`` (default 50,000) and each column is built in the dtype its
database type stands for (a backend's :meth:`Backend.column_types`, read from the cursor): a
``DECIMAL(20,6)`` is ``Decimal(20, 6)`` with every digit, a MySQL ``TIMESTAMP`` is a UTC
``Datetime``, a column whose type says nothing precise is inferred from its values. An empty result
still has its columns and dtypes, so a window can be typed from a ``LIMIT 0`` probe.

A value the column's dtype cannot hold (MySQL's zero date ``0000-00-00``, which pymysql hands back
as text) is a :class:`SourceError` naming the column and the fix, never a silent null.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from types import ModuleType
from typing import Any, Protocol
from urllib.parse import quote, unquote, urlsplit

import polars as pl
from sqlglot import exp

from datacoolie_core.errors import SourceError
from datacoolie_core.models.connection import Connection
from datacoolie_core.sources.db_kinds import DatabaseKind
from datacoolie_core.sources.pushdown import Columns, probe
from datacoolie_core.suggestions import did_you_mean

ColumnTypes = list[tuple[str, pl.DataType | None]]
Scrub = Callable[[str], str]
"""A driver message -> the same without the connection's password."""
DEFAULT_BATCH_SIZE = 50_000


class Backend(Protocol):
    """A DB-API database: how to connect, and the dtypes of a cursor's columns.

    ``connect`` returns a connection whose sessions read in UTC (naive timestamps are UTC wall
    clock) and, where the database allows it, read-only; connection failures are
    :class:`~datacoolie_core.errors.SourceConnectionError` without the password.
    """

    def connect(self, connection: Connection, label: str) -> Any: ...

    def column_types(self, cursor: Any) -> ColumnTypes: ...

    def errors(self) -> tuple[type[Exception], ...]: ...


def get_backend(kind: DatabaseKind) -> Backend:
    """The backend module of a DB-API ``kind`` (imported on first use)."""
    assert kind.backend is not None, f"{kind.name} is read by the reader itself"
    module: Any = importlib.import_module(kind.backend)
    return module  # a module implementing the Backend protocol


def import_driver(kind: DatabaseKind, label: str) -> ModuleType:
    """The driver module of ``kind``.

    Raises:
        SourceError: the driver is not installed (with the install command).
    """
    assert kind.driver is not None
    try:
        return importlib.import_module(kind.driver)
    except ImportError as e:
        raise SourceError(
            f"{label}: reading {kind.name} needs the {kind.driver} driver, which is not installed; "
            f"install it: pip install 'datacoolie-dagster[{kind.extra}]'"
        ) from e


def connect_params(connection: Connection, kind: DatabaseKind) -> dict[str, Any]:
    """``host``/``port``/``user``/``password``/``database`` from ``url`` (placeholders filled) or the keys."""
    c = connection.configure
    if c.url:
        url = urlsplit(fill_url(c.url, connection))
        return {"host": url.hostname, "port": url.port or kind.default_port,
                "user": unquote(url.username) if url.username else None,
                "password": unquote(url.password) if url.password else None,
                "database": unquote(url.path.lstrip("/")) or None}  # fmt: skip
    return {"host": c.host, "port": c.port or kind.default_port, "user": c.username, "password": c.password,
            "database": c.database or connection.database}  # fmt: skip


def fill_url(url: str, connection: Connection) -> str:
    """``url`` with ``{user}``, ``{password}``, ``{host}``, ``{port}``, ``{database}`` filled in (URL-quoted)."""
    c = connection.configure
    values = {"user": c.username, "username": c.username, "password": c.password, "host": c.host,
              "port": c.port, "database": c.database or connection.database}  # fmt: skip
    for key, value in values.items():
        url = url.replace("{" + key + "}", quote(str(value), safe="") if value is not None else "")
    return url


def describe(conn: Any, base: exp.Query, backend: Backend, dialect: str, label: str, scrub: Scrub) -> Columns:
    """The columns of ``base`` and their dtypes, from a probe that returns no row."""
    sql = probe(base).sql(dialect=dialect)
    with closing(conn.cursor()) as cursor:
        try:
            cursor.execute(sql)
            types = _column_types(backend, cursor, label)
            cursor.fetchall()
        except backend.errors() as e:
            raise SourceError(f"{label}: the source query failed: {scrub(str(e))}; query: {sql}") from e
    return dict(types)


def fetch(conn: Any, sql: str, backend: Backend, options: dict[str, Any], label: str, scrub: Scrub) -> pl.DataFrame:
    """Every row of ``sql``, each column in its database type's dtype."""
    batch_size = _batch_size(options, label)
    with closing(conn.cursor()) as cursor:
        try:
            cursor.execute(sql)
            types = _column_types(backend, cursor, label)
            frames = [_frame(rows, types, label) for rows in _batches(cursor, batch_size)]
        except backend.errors() as e:
            raise SourceError(f"{label}: the source query failed: {scrub(str(e))}; query: {sql}") from e
    if not frames:
        return pl.DataFrame(schema={name: dtype or pl.Null() for name, dtype in types})
    return pl.concat(frames, how="vertical_relaxed")


def _column_types(backend: Backend, cursor: Any, label: str) -> ColumnTypes:
    try:
        return backend.column_types(cursor)
    except SourceError as e:  # a column no dtype holds: name the source too
        raise SourceError(f"{label}: {e}") from e


def _batch_size(options: dict[str, Any], label: str) -> int:
    unknown = sorted(set(options) - {"batch_size"})
    if unknown:
        raise SourceError(
            f"{label}: read option '{unknown[0]}' is not an option of this database"
            f"{did_you_mean(unknown[0], ['batch_size'])}; valid options: batch_size"
        )
    size = options.get("batch_size", DEFAULT_BATCH_SIZE)
    if isinstance(size, str) and size.strip().isdigit():
        size = int(size)
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise SourceError(f"{label}: read option batch_size must be a positive integer, got {options['batch_size']!r}")
    return size


def _batches(cursor: Any, size: int) -> Iterator[Sequence[Sequence[Any]]]:
    while rows := cursor.fetchmany(size):
        yield rows


def _frame(rows: Sequence[Sequence[Any]], types: ColumnTypes, label: str) -> pl.DataFrame:
    columns = list(zip(*rows, strict=True))
    return pl.DataFrame(
        [_series(name, list(values), dtype, label) for (name, dtype), values in zip(types, columns, strict=True)]
    )


def _series(name: str, values: list[Any], dtype: pl.DataType | None, label: str) -> pl.Series:
    if dtype is None:
        return pl.Series(name, values, strict=False)
    zone = dtype.time_zone if isinstance(dtype, pl.Datetime) else None
    built = pl.Datetime(dtype.time_unit) if isinstance(dtype, pl.Datetime) else dtype
    flags = isinstance(dtype, pl.Boolean) and any(isinstance(v, int) and not isinstance(v, bool) for v in values)
    try:
        series = pl.Series(name, values, dtype=pl.Int64() if flags else built, strict=True)
    except (TypeError, pl.exceptions.PolarsError) as e:
        raise SourceError(_invalid_value(name, values, dtype, label)) from e
    if flags:  # a BOOLEAN stored as a small integer (MySQL TINYINT(1)): any non-zero value is true
        return series != 0
    return series.dt.replace_time_zone(zone) if zone else series


def _invalid_value(name: str, values: list[Any], dtype: pl.DataType, label: str) -> str:
    bad = next((v for v in values if isinstance(v, str)), None)
    if bad is not None and bad.startswith("0000-00-00"):
        return (
            f"{label}: column '{name}' holds the MySQL zero date '{bad}', which no {dtype} can hold; "
            f"read it as NULL with a source query (NULLIF(`{name}`, '{bad}')) or fix the rows"
        )
    return f"{label}: column '{name}' holds a value that is not a {dtype}: {bad if bad is not None else '?'!r}"
