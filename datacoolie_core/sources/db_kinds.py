"""The databases a ``format: sql`` source can read, and what each needs (DataCoolie S-21 … S-23).

A plain registry, imported by the reader, the metadata validation and the Dagster sensors: it
names each ``database_type``'s sqlglot dialect, URL schemes, default port, driver and the module
that reads it. It imports no driver: a document validates on a machine without them.

* ``sqlite`` and ``postgresql`` are read by :mod:`~datacoolie_core.sources.database` itself
  (``polars.read_database`` over ``sqlite3`` / ``psycopg2``).
* ``mysql`` (MySQL and MariaDB), ``mssql`` (SQL Server) and ``oracle`` are read through their
  DB-API drivers by :mod:`~datacoolie_core.sources.db_dbapi` and a small module each
  (``pymysql``, ``pymssql``, ``oracledb`` thin mode), all optional extras.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from datacoolie_core.errors import SourceError
from datacoolie_core.models.connection import Connection
from datacoolie_core.suggestions import did_you_mean


@dataclass(frozen=True)
class DatabaseKind:
    """One ``database_type``: its SQL dialect and how it is reached."""

    name: str
    """The ``configure.database_type`` value."""
    dialect: str
    """sqlglot's name of its SQL dialect."""
    schemes: tuple[str, ...]
    """``url`` schemes that stand for it when ``database_type`` is unset."""
    default_port: int | None = None
    driver: str | None = None
    """The driver's module, imported on first use."""
    extra: str | None = None
    """``pip install 'datacoolie-dagster[<extra>]'`` installs the driver."""
    backend: str | None = None
    """The module reading it through the DB-API (``None``: built into the reader)."""
    read_options: tuple[str, ...] = ()
    """``read_options`` keys of a DB-API backend (the others pass theirs to ``polars.read_database``)."""


_DBAPI_OPTIONS = ("batch_size",)

KINDS: dict[str, DatabaseKind] = {
    "postgresql": DatabaseKind("postgresql", "postgres", ("postgres", "postgresql"), 5432, "psycopg2"),
    "sqlite": DatabaseKind("sqlite", "sqlite", ("sqlite",)),
    "mysql": DatabaseKind("mysql", "mysql", ("mysql", "mariadb"), 3306, "pymysql", "mysql",
                          "datacoolie_core.sources.db_mysql", _DBAPI_OPTIONS),
    "mssql": DatabaseKind("mssql", "tsql", ("mssql", "sqlserver"), 1433, "pymssql", "mssql",
                          "datacoolie_core.sources.db_mssql", _DBAPI_OPTIONS),
    "oracle": DatabaseKind("oracle", "oracle", ("oracle",), 1521, "oracledb", "oracledb",
                           "datacoolie_core.sources.db_oracle", _DBAPI_OPTIONS),
}  # fmt: skip
"""``database_type`` -> its kind, for every database this engine reads."""


def get_kind(connection: Connection, label: str) -> DatabaseKind:
    """The kind of ``connection``: its ``database_type``, else its ``url``'s scheme.

    Raises:
        SourceError: neither names a database this engine reads.
    """
    kind = connection.configure.database_type
    scheme = url_scheme(connection.configure.url)
    if kind is None and scheme is not None:
        kind = next((k.name for k in KINDS.values() if scheme in k.schemes), None)
    if kind not in KINDS:
        shown = f"'{kind}'" if kind else (f"unset (url scheme '{scheme}')" if scheme else "unset")
        raise SourceError(
            f"{label}: database_type {shown} is not supported by this engine (supported: {', '.join(KINDS)}); "
            "set configure.database_type, or read the data through a function source"
        )
    return KINDS[kind]


def url_scheme(url: str | None) -> str | None:
    """The scheme of a connection ``url`` (``mysql+pymysql://`` -> ``mysql``), lower-cased."""
    if not url or ("://" not in url and not url.startswith("sqlite:")):
        return None
    return urlsplit(url).scheme.split("+")[0].lower() or None


def database_problems(connection: Connection) -> list[tuple[str, str]]:
    """``(configure path, message)`` for what a run of a database connection would refuse.

    An unknown ``url`` scheme (with the closest known one) and ``read_options`` keys a DB-API
    backend does not take. ``database_type`` itself is checked by the model.
    """
    return list(_database_problems(connection)) if connection.connection_type == "database" else []


def _database_problems(connection: Connection) -> Iterator[tuple[str, str]]:
    c = connection.configure
    scheme = url_scheme(c.url)
    schemes = [s for kind in KINDS.values() for s in kind.schemes]
    if c.database_type is None and scheme is not None and scheme not in schemes:
        yield (
            "configure.url",
            (
                f"url scheme '{scheme}' names no database this engine reads{did_you_mean(scheme, schemes)}; "
                f"known schemes: {', '.join(schemes)}"
            ),
        )
    kind = KINDS.get(c.database_type or "") or next((k for k in KINDS.values() if scheme in k.schemes), None)
    if kind is None or kind.backend is None:
        return
    for key in c.read_options:
        if key not in kind.read_options:
            yield (
                f"configure.read_options.{key}",
                (
                    f"read option '{key}' is not an option of {kind.name} sources{did_you_mean(key, kind.read_options)}; "
                    f"valid options: {', '.join(kind.read_options)}"
                ),
            )
