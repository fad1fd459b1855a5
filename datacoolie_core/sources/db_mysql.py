"""MySQL and MariaDB through ``pymysql`` (the ``mysql`` extra): connection and column dtypes.

Sessions are ``utf8mb4``, in UTC (``time_zone = '+00:00'``: ``TIMESTAMP`` values come back as UTC
instants, ``DATETIME`` as written) and read-only. Column dtypes come from the result's field
descriptions: ``TINYINT(1)`` (MySQL's ``BOOLEAN``) is ``Boolean``, other integers ``Int64``
(``BIGINT UNSIGNED``: ``UInt64``), ``DECIMAL(p,s)`` is ``Decimal(p, s)`` (p ≤ 38), ``DATE`` is ``Date``,
``DATETIME(n)`` is ``Datetime("us")``, ``TIMESTAMP(n)`` is ``Datetime("us", "UTC")``, text is
``String``; the rest (``TIME``, ``BIT``, binary, JSON) is inferred from the values.

pymysql was chosen over connectorx (measured in docs/databases.md: connectorx reads ~14x faster)
because connectorx rounds ``DECIMAL(30,15)`` to 10 decimals without a word and panics on
``DECIMAL(38,0)`` and on zero dates, where pymysql returns every digit and lets the reader name the
column.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from datacoolie_core.errors import SourceConnectionError, SourceError
from datacoolie_core.models.connection import Connection
from datacoolie_core.sources.db_dbapi import ColumnTypes, connect_params, import_driver
from datacoolie_core.sources.db_kinds import KINDS

KIND = KINDS["mysql"]
_SESSION = ("SET time_zone = '+00:00'", "SET SESSION TRANSACTION READ ONLY")
"""Run one by one: the form both MySQL 8 and MariaDB take (their read-only variables differ)."""

# pymysql.constants.FIELD_TYPE codes
_DECIMALS = {0, 246}
_TINY, _INTEGERS = 1, {2, 3, 8, 9, 13}  # SHORT, LONG, LONGLONG, INT24, YEAR
_FLOATS = {4, 5}
_DATES = {10, 14}
_TIMESTAMP, _DATETIME = 7, 12
_TEXT = {15, 247, 248, 249, 250, 251, 252, 253, 254}  # VARCHAR, ENUM, SET, the BLOB/TEXT sizes, VAR_STRING, STRING
_BINARY_CHARSET, _UNSIGNED_FLAG = 63, 32
_MAX_PRECISION = 38


def connect(connection: Connection, label: str) -> Any:
    pymysql = import_driver(KIND, label)
    params = connect_params(connection, KIND)
    try:
        conn = pymysql.connect(**params, charset="utf8mb4", autocommit=True, connect_timeout=10)
        with conn.cursor() as cursor:
            for statement in _SESSION:
                cursor.execute(statement)
        return conn
    except pymysql.Error as e:
        where = f"{params['host']}:{params['port']}"
        raise SourceConnectionError(f"{label}: cannot connect to MySQL/MariaDB at {where}: {_scrub(e, params)}") from e


def errors() -> tuple[type[Exception], ...]:
    import pymysql

    return (pymysql.Error,)


def column_types(cursor: Any) -> ColumnTypes:
    """The dtype of each column of the cursor's result (its field packets: type, length, flags)."""
    fields = getattr(getattr(cursor, "_result", None), "fields", None) or []  # pymysql keeps no public flags
    return [_dtype(desc, fields[i] if i < len(fields) else None) for i, desc in enumerate(cursor.description or ())]


def _dtype(desc: tuple[Any, ...], field: Any) -> tuple[str, pl.DataType | None]:
    name, code, _, length, _, scale = desc[:6]
    flags = getattr(field, "flags", 0)
    charset = getattr(field, "charsetnr", None)
    if code in _DECIMALS:
        # length counts the digits, the sign and the decimal point
        precision = int(length) - (1 if scale else 0) - (0 if flags & _UNSIGNED_FLAG else 1)
        if precision > _MAX_PRECISION:
            raise SourceError(
                f"column '{name}' is a DECIMAL of {precision} digits, more than the 38 Polars holds; "
                "cast it in a source query (CAST(... AS DECIMAL(38, s)) or AS CHAR)"
            )
        return name, pl.Decimal(max(precision, 1), int(scale))
    if code == _TINY:
        return name, pl.Boolean() if length == 1 else pl.Int64()
    if code in _INTEGERS:
        return name, pl.UInt64() if code == 8 and flags & _UNSIGNED_FLAG else pl.Int64()
    return name, _other(code, charset)


def _other(code: int, charset: int | None) -> pl.DataType | None:
    if code in _FLOATS:
        return pl.Float64()
    if code in _DATES:
        return pl.Date()
    if code == _DATETIME:
        return pl.Datetime("us")
    if code == _TIMESTAMP:
        return pl.Datetime("us", "UTC")
    if code in _TEXT and charset != _BINARY_CHARSET:
        return pl.String()
    return None


def _scrub(error: Exception, params: dict[str, Any]) -> str:
    message, password = str(error), params.get("password")
    return message.replace(str(password), "***") if password else message
