"""Which tables a SQL query reads: the one reading shared by the Delta reader and the Dagster lineage."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from datacoolie_core.sql.parse import READ_DIALECT


def query_tables(query: str) -> list[tuple[str | None, str]]:
    """``(schema, table)`` of every table ``query`` reads, in order, without repeats.

    An unqualified name matching a CTE (case-insensitively) is the CTE, not a table; a qualified one
    never is.

    Raises:
        sqlglot.errors.ParseError: the query does not parse (Spark dialect).
    """
    tree = sqlglot.parse_one(query, read=READ_DIALECT)
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    found: list[tuple[str | None, str]] = []
    for table in tree.find_all(exp.Table):
        key = (table.db or None, table.name)
        if table.name and key not in found and not (key[0] is None and table.name.lower() in ctes):
            found.append(key)
    return found
