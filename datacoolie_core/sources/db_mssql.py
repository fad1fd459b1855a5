"""SQL Server through ``pymssql`` (the ``mssql`` extra): connection and column dtypes.

Password authentication only (DataCoolie's Entra ID ``auth_type`` values are refused with a clear
error). pymssql's cursor tells a column's type only coarsely (string / number / datetime /
decimal / binary): text is ``String`` and the rest is inferred from the values the driver returns
(``DECIMAL`` as ``Decimal``, ``DATETIME2`` as ``Datetime``, ``DATE`` as ``Date``), so window bounds
are typed by their own Python type. The generated SQL is checked per dialect with sqlglot in the
tests; no SQL Server runs in them (docs/databases.md).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from datacoolie_core.errors import SourceConnectionError, SourceError
from datacoolie_core.models.connection import Connection
from datacoolie_core.sources.db_dbapi import ColumnTypes, connect_params, import_driver
from datacoolie_core.sources.db_kinds import KINDS

KIND = KINDS["mssql"]
_STRING = 1  # pymssql.STRING's type code
LOGIN_TIMEOUT = 10


def connect(connection: Connection, label: str) -> Any:
    auth = connection.configure.auth_type
    if auth not in (None, "password"):
        raise SourceError(
            f"{label}: SQL Server auth_type '{auth}' needs Entra ID (ODBC Driver 18), which this engine does not "
            "support; use a SQL login (auth_type password) or a function source"
        )
    pymssql = import_driver(KIND, label)
    params = connect_params(connection, KIND)
    try:
        conn = pymssql.connect(server=params["host"], port=str(params["port"]), user=params["user"],
                               password=params["password"], database=params["database"] or "",
                               login_timeout=LOGIN_TIMEOUT, autocommit=True)  # fmt: skip
    except pymssql.Error as e:
        where = f"{params['host']}:{params['port']}"
        raise SourceConnectionError(f"{label}: cannot connect to SQL Server at {where}: {_scrub(e, params)}") from e
    return conn


def errors() -> tuple[type[Exception], ...]:
    import pymssql

    return (pymssql.Error,)


def column_types(cursor: Any) -> ColumnTypes:
    return [(d[0], pl.String() if d[1] == _STRING else None) for d in cursor.description or ()]


def _scrub(error: Exception, params: dict[str, Any]) -> str:
    message, password = str(error), params.get("password")
    return message.replace(str(password), "***") if password else message
