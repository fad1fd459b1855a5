"""SQL for a database read, built as sqlglot trees: the watermark window and filter pushed down.

Nothing from metadata or a stored watermark is pasted into SQL text (DESIGN contract 7):
identifiers are quoted :class:`sqlglot.exp.Identifier` nodes, values are typed literal nodes, and
``filter_expression`` is parsed (Spark dialect, as DataCoolie metadata is written) and generated in
the target dialect. The OR of the per-column windows is parenthesised before it is AND-ed with the
filter — ``(window) AND (filter)`` — which DataCoolie forgot (F-21).

A bound is first converted to its column's dtype when the driver reports one (the rules of
:mod:`~datacoolie_core.sources.window`: a stored ISO string against a timestamp column becomes a
timestamp, a float against an integer column is floored), then written as a literal by Python type:
``int``/``float``/``Decimal`` as numbers, ``bool`` as a boolean (``1``/``0`` in SQL Server and
Oracle), ``str`` as a string (quotes escaped by sqlglot), ``date``/``datetime`` per dialect:
PostgreSQL ``CAST('…' AS DATE/TIMESTAMP)`` (``TIMESTAMPTZ`` when aware), SQL Server
``CAST('…' AS DATE/DATETIME2)`` (``DATETIMEOFFSET`` when aware), MySQL/MariaDB
``CAST('… .ffffff' AS DATETIME(6))``, Oracle ``TO_DATE('…', 'YYYY-MM-DD')`` and
``TO_TIMESTAMP('…', 'YYYY-MM-DD HH24:MI:SS.FF6')`` (DataCoolie S-22); MySQL and Oracle sessions
run in UTC, so aware values are written as UTC there. SQLite has no temporal types and stores timestamps as
text written either ``2024-01-02 10:00:00`` or ``2024-01-02T10:00:00``; lower bounds are written
with a space and upper bounds with a ``T`` (aware values in UTC), which makes the SQL window a
superset of the exact one for both spellings. The reader applies the exact, typed window to the
rows returned, so pushing down never changes the result, only how much is transferred.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import polars as pl
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from datacoolie_core.errors import SourceError
from datacoolie_core.sources.window import Comparison, Window, resolve_column, typed_bound
from datacoolie_core.sql import SqlExpressionError, parse_expression
from datacoolie_core.transforms.base import ColumnNameMode

_OPS: dict[str, type[exp.Binary]] = {">": exp.GT, ">=": exp.GTE, "<": exp.LT, "<=": exp.LTE}
_UPPER = ("<", "<=")
SUBQUERY_ALIAS = "t1"
_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_$#]*")
_NO_BOOLEAN = ("tsql", "oracle")
"""Dialects whose comparisons take no TRUE/FALSE: a BIT / NUMBER(1) flag compares with 1/0."""
_ORACLE_TIMESTAMP = "%Y-%m-%d %H:%M:%S.%f"  # sqlglot writes it as 'YYYY-MM-DD HH24:MI:SS.FF6'
_ORACLE_DATE = "%Y-%m-%d"

Columns = Mapping[str, pl.DataType | None]
"""The query's columns and, where the driver tells, their type (bounds are typed like the column)."""


def table_query(schema: str | None, table: str, dialect: str | None = None) -> exp.Select:
    """``SELECT * FROM "schema"."table"``.

    Oracle folds unquoted names to upper case, and DataCoolie's ``SELECT * FROM schema.table`` is
    unquoted: a name that is a plain identifier is quoted in upper case there, so ``orders`` reads
    ``ORDERS`` as it does in DataCoolie, and nothing in a name is ever read as SQL.
    """

    table_name = exp.Table(this=identifier(table, dialect), db=identifier(schema, dialect) if schema else None)
    return exp.select(exp.Star()).from_(table_name)


def identifier(name: str, dialect: str | None) -> exp.Identifier:
    """``name`` quoted; in Oracle a plain identifier in upper case, as Oracle reads it unquoted."""
    return _ident(name.upper() if dialect == "oracle" and _PLAIN_IDENTIFIER.fullmatch(name) else name)


def parse_query(sql: str, dialect: str, *, label: str) -> exp.Query:
    """The user's ``source.query`` as a tree (one SELECT-like statement)."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except ParseError as e:
        raise SourceError(f"{label}: source.query does not parse as {dialect} SQL: {e}; fix the query") from e
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        raise SourceError(f"{label}: source.query must be exactly one SELECT query; fix the query")
    return statements[0]


def wrap(query: exp.Query) -> exp.Select:
    """``SELECT * FROM (<query>) AS t1``: a user query filtered from outside."""
    return exp.select(exp.Star()).from_(exp.Subquery(this=query, alias=exp.TableAlias(this=_ident(SUBQUERY_ALIAS))))


def probe(query: exp.Query) -> exp.Select:
    """The query's columns without its rows: ``SELECT * FROM (<query>) AS t1 LIMIT 0``."""
    return wrap(query.copy()).limit(0)


def where_condition(
    window: Window | None, filter_sql: str | None, columns: Columns, dialect: str, *, label: str
) -> exp.Expr | None:
    """``(window) AND (filter)``, either part optional; ``None`` when neither is given."""
    parts: list[exp.Expr] = []
    if window is not None:
        parts.append(exp.paren(window_condition(window, columns, dialect, label=label), copy=False))
    if filter_sql:
        parts.append(exp.paren(filter_condition(filter_sql, columns, label=label), copy=False))
    return exp.and_(*parts, copy=False) if parts else None


def window_condition(window: Window, columns: Columns, dialect: str, *, label: str) -> exp.Expr:
    """The OR of the window's AND-groups, with columns resolved against ``columns``."""
    groups = [
        exp.and_(*(_comparison(c, columns, dialect, label, window.mode) for c in group), copy=False)
        for group in window.groups
    ]
    return exp.or_(*groups, copy=False)


def filter_condition(sql: str, columns: Columns, *, label: str) -> exp.Expr:
    """``filter_expression`` parsed (Spark SQL), its columns resolved and quoted."""
    try:
        node = parse_expression(sql)
    except SqlExpressionError as e:
        raise SqlExpressionError(f"{label}: filter_expression: {e}") from e
    for column in list(node.find_all(exp.Column)):
        try:
            name = resolve_column(column.name, columns, label=label)
        except SourceError as e:
            raise SqlExpressionError(
                f"{label}: filter_expression {sql!r}: column '{column.name}' does not exist"
            ) from e
        column.replace(exp.Column(this=_ident(name)))
    return node


def literal(value: Any, dialect: str, *, upper: bool = False) -> exp.Expr:
    """A typed SQL literal of a Python watermark value (see the module rules).

    Raises:
        TypeError: a value no SQL literal is built for (lists, bytes, ...).
        ValueError: a non-finite number.
    """
    if isinstance(value, bool):
        return exp.Literal.number(int(value)) if dialect in _NO_BOOLEAN else exp.Boolean(this=value)
    if isinstance(value, int | float | Decimal):
        if not math.isfinite(value):
            raise ValueError(f"watermark value {value!r} is not a finite number")
        return exp.Literal.number(repr(value) if isinstance(value, float) else str(value))
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, datetime):
        return _timestamp(value, dialect, upper)
    if isinstance(value, date):
        text = exp.Literal.string(value.isoformat())
        if dialect == "oracle":
            return exp.StrToDate(this=text, format=exp.Literal.string(_ORACLE_DATE))
        return text if dialect == "sqlite" else exp.cast(text, exp.DataType.build("date"))
    raise TypeError(f"no SQL literal for a {type(value).__name__} watermark value")


def _timestamp(value: datetime, dialect: str, upper: bool) -> exp.Expr:
    if dialect == "sqlite":
        naive = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
        return exp.Literal.string(naive.isoformat(sep="T" if upper else " "))
    if dialect in ("mysql", "oracle"):
        # sessions run in UTC (TIMESTAMP / TIMESTAMP WITH TIME ZONE compare as UTC); microseconds
        # always written, as DATETIME without (6) would cut them off
        naive = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
        text = exp.Literal.string(naive.isoformat(sep=" ", timespec="microseconds"))
        if dialect == "oracle":
            return exp.StrToTime(this=text, format=exp.Literal.string(_ORACLE_TIMESTAMP))
        return exp.cast(text, exp.DataType.build("DATETIME(6)", dialect="mysql"))
    kind = "timestamptz" if value.tzinfo else "timestamp"  # SQL Server: DATETIMEOFFSET / DATETIME2
    return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), exp.DataType.build(kind))


def _comparison(
    comparison: Comparison, columns: Columns, dialect: str, label: str, mode: ColumnNameMode = "lower"
) -> exp.Expr:
    name = resolve_column(comparison.column, columns, label=label, mode=mode)
    op, value, dtype = comparison.op, comparison.value, columns[name]
    if dtype is not None:
        op, value = typed_bound(op, value, dtype, column=name, label=label)
    try:
        node = literal(value, dialect, upper=op in _UPPER)
    except (TypeError, ValueError) as e:
        raise SourceError(f"{label}: watermark column '{name}': {e}; fix or delete the stored watermark") from e
    return _OPS[op](this=exp.Column(this=_ident(name)), expression=node)


def _ident(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)
