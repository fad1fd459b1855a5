"""Oracle through ``oracledb`` in thin mode (the ``oracledb`` extra): connection and column dtypes.

The DSN is ``host:port/service`` with ``database`` as the service name (DataCoolie's
``oracle://user:password@host:1521/service``). Sessions run in UTC (``ALTER SESSION SET TIME_ZONE``),
so window bounds written as UTC ``TO_TIMESTAMP`` literals compare right with ``TIMESTAMP WITH
[LOCAL] TIME ZONE`` columns. Dtypes from the cursor: ``NUMBER(p,0)`` (p ≤ 18) is ``Int64``,
``NUMBER(p,s)`` is ``Decimal(p, s)`` (fetched as Python decimals, every digit kept), ``DATE`` and
``TIMESTAMP`` are ``Datetime("us")`` (an Oracle ``DATE`` has a time), text is ``String``; the rest
is inferred. The generated SQL is checked with sqlglot in the tests; no Oracle runs in them.
"""

from __future__ import annotations

import decimal
from typing import Any

import polars as pl

from datacoolie_core.errors import SourceConnectionError
from datacoolie_core.models.connection import Connection
from datacoolie_core.sources.db_dbapi import ColumnTypes, connect_params, import_driver
from datacoolie_core.sources.db_kinds import KINDS

KIND = KINDS["oracle"]
_MAX_INT_DIGITS, _MAX_PRECISION = 18, 38
TIMEOUT_SECONDS = 10


def connect(connection: Connection, label: str) -> Any:
    oracledb = import_driver(KIND, label)
    params = connect_params(connection, KIND)
    dsn = f"{params['host']}:{params['port']}/{params['database'] or ''}"
    try:
        conn = oracledb.connect(user=params["user"], password=params["password"], dsn=dsn,
                                tcp_connect_timeout=TIMEOUT_SECONDS)  # fmt: skip
        conn.outputtypehandler = _decimals
        with conn.cursor() as cursor:
            cursor.execute("ALTER SESSION SET TIME_ZONE = 'UTC'")
    except oracledb.Error as e:
        raise SourceConnectionError(f"{label}: cannot connect to Oracle at {dsn}: {_scrub(e, params)}") from e
    return conn


def errors() -> tuple[type[Exception], ...]:
    import oracledb

    return (oracledb.Error,)


def column_types(cursor: Any) -> ColumnTypes:
    import oracledb

    return [(d.name, _dtype(oracledb, d)) for d in cursor.description or ()]


def _dtype(oracledb: Any, d: Any) -> pl.DataType | None:
    kind = d.type_code
    if kind is oracledb.DB_TYPE_NUMBER and d.precision and 0 < d.precision <= _MAX_PRECISION:
        if d.scale == 0 and d.precision <= _MAX_INT_DIGITS:
            return pl.Int64()
        return pl.Decimal(d.precision, max(d.scale or 0, 0)) if (d.scale or 0) >= 0 else None
    if kind in (oracledb.DB_TYPE_DATE, oracledb.DB_TYPE_TIMESTAMP):
        return pl.Datetime("us")
    if kind in (oracledb.DB_TYPE_VARCHAR, oracledb.DB_TYPE_NVARCHAR, oracledb.DB_TYPE_CHAR, oracledb.DB_TYPE_NCHAR):
        return pl.String()
    return None


def _decimals(cursor: Any, metadata: Any) -> Any:
    """NUMBER columns with decimals as Python ``Decimal`` (the driver's default is a lossy float)."""
    import oracledb

    if metadata.type_code is oracledb.DB_TYPE_NUMBER and (metadata.scale or 0) > 0:
        return cursor.var(decimal.Decimal, arraysize=cursor.arraysize)
    return None


def _scrub(error: Exception, params: dict[str, Any]) -> str:
    message, password = str(error), params.get("password")
    return message.replace(str(password), "***") if password else message
