"""What a lakehouse ``source.query`` may reference: registered tables of its own connection, no files.

Polars' SQL engine has table functions (``read_csv('/etc/passwd')``, ``read_parquet``, ``read_ipc``,
``read_json``, ``read_delta``) that read any file the process can read. A query from metadata may
therefore name only plain tables — ``table`` or ``schema.table`` — that the Delta reader registers
from the connection's ``base_path``; every table-valued function, every file-reading function and
every name that is not one clean path component is refused. This is an allow-list on the parsed
query (sqlglot), not a search of its text, so quoting and comments cannot hide a reference.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from datacoolie_core.platform.paths import name_problem, shown
from datacoolie_core.sql.parse import READ_DIALECT

FILE_FUNCTION_PREFIXES = ("read_", "scan_")
"""Function names that read files in Polars SQL (``read_csv`` ...) or its relatives; never allowed."""


def query_reference_problems(query: str) -> list[str]:
    """Every reason ``query`` may not run over a lakehouse connection (empty when it may).

    Walks every ``exp.Table`` and every function call of the parsed query: a table must be an
    identifier (``t`` or ``s.t``, no catalog part) whose parts pass :func:`name_problem`; a function
    must not be table-valued in ``FROM`` / ``JOIN`` nor read files.
    """
    try:
        trees = [t for t in sqlglot.parse(query, read=READ_DIALECT) if t is not None]
    except ParseError as e:
        return [f"does not parse as SQL ({_first_line(e)}); fix the query"]
    if len(trees) != 1:
        return [f"holds {len(trees)} statements; a source query is one SELECT"]
    tree = trees[0]
    problems: list[str] = []
    for table in tree.find_all(exp.Table):
        problems += _table_problems(table)
    for func in tree.find_all(exp.Func):
        name = _function_name(func)
        if isinstance(func.parent, exp.Table):
            continue  # a table-valued function: reported by the table walk
        if isinstance(func, (exp.ReadCSV, exp.ReadParquet)) or name.startswith(FILE_FUNCTION_PREFIXES):
            problems.append(
                f"function {name}() reads files; a query may read only the connection's Delta tables by name"
            )
    return list(dict.fromkeys(problems))


def _table_problems(table: exp.Table) -> list[str]:
    if not isinstance(table.this, exp.Identifier):
        if isinstance(table.this, exp.Func):
            name = _function_name(table.this)
            return [
                f"table function {name}() is not allowed; a query may read only the connection's Delta tables by name"
            ]
        return [
            f"{shown(table.sql())} is not a table name; name a Delta table of the connection (table or schema.table)"
        ]
    if table.catalog:
        return [
            f"table {shown(table.sql())} has a catalog part; write table or schema.table under the connection's base_path"
        ]
    found = []
    for kind, part in (("schema", table.db), ("table", table.name)):
        problem = part and name_problem(part)
        if problem:
            found.append(f"{kind} name {shown(part)} in the query: {problem}")
    return found


def _function_name(func: exp.Func) -> str:
    if isinstance(func, exp.Anonymous):
        return str(func.this).lower()
    return func.sql_name().lower()


def _first_line(error: ParseError) -> str:
    details = error.errors[0] if error.errors else {}
    description = details.get("description") or str(error).splitlines()[0]
    where = f" at line {details['line']}, column {details['col']}" if "line" in details else ""
    return shown(description.split(" but got ")[0]) + where
