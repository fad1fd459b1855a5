"""Parse SQL fragments from metadata with sqlglot, allowing exactly one side-effect-free expression.

Metadata holds SQL in ``filter_expression``, computed-column and partition expressions and
``scd2_effective_column``. Each must be ONE scalar expression over the row's own columns: no
statements (``1=1; DROP TABLE x``), no subqueries into other tables. DataCoolie's metadata is written
for Spark SQL, so fragments are read with sqlglot's ``spark`` dialect.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError

from datacoolie_core.errors import TerminalError

READ_DIALECT = "spark"

_STATEMENTS = tuple(
    getattr(exp, name)
    for name in ("DDL", "DML", "Drop", "Command", "Set", "Use", "Alter", "Transaction", "Commit", "Rollback", "Query")
    if hasattr(exp, name)
)
_FORBIDDEN = (exp.Subquery, exp.Table, exp.Star, exp.Placeholder, *_STATEMENTS)


class SqlExpressionError(TerminalError, ValueError):
    """A SQL fragment from metadata is not one supported expression.

    A ``ValueError`` too, so model validators report it with its JSON path.
    """


def parse_expression(sql: str) -> exp.Expression:
    """Parse ``sql`` as a single scalar expression.

    Raises:
        SqlExpressionError: it does not parse, holds several statements, is a statement, or reads
            another table (subquery, ``SELECT``).
    """
    if not sql or not sql.strip():
        raise SqlExpressionError("the SQL expression is empty")
    try:
        statements = [s for s in sqlglot.parse(sql, read=READ_DIALECT) if s is not None]
    except ParseError as e:
        first = e.errors[0] if e.errors else {}
        where = f" near {first.get('highlight')!r}" if first.get("highlight") else ""
        raise SqlExpressionError(
            f"SQL expression {sql!r} does not parse{where}: {first.get('description', e)}"
        ) from None
    except SqlglotError as e:  # the tokenizer's errors (an unclosed quote) are not ParseErrors
        raise SqlExpressionError(f"SQL expression {sql!r} does not parse: {e}") from None
    if len(statements) != 1:
        raise SqlExpressionError(f"SQL expression {sql!r} holds {len(statements)} statements; give one expression")
    node = statements[0]
    if isinstance(node, _STATEMENTS):
        raise SqlExpressionError(f"SQL {sql!r} is a statement; give one expression over the row's own columns")
    for child in node.walk():
        if isinstance(child, _FORBIDDEN):
            kind = "'*'" if isinstance(child, exp.Star) else "a subquery"
            raise SqlExpressionError(
                f"SQL expression {sql!r} contains {kind}; only one expression over the row's own columns is allowed"
            )
    if not isinstance(node, exp.Expression):  # sqlglot types parse() results as its base Expr
        raise SqlExpressionError(f"SQL {sql!r} is not an expression")
    return node


def column_names(node: exp.Expression) -> list[str]:
    """Names of the columns an expression reads, in order of appearance, without repeats."""
    names: list[str] = []
    for column in node.find_all(exp.Column):
        if column.name not in names:
            names.append(column.name)
    return names
