"""Deliberate differences from Spark 3.5 (ANSI off): cases the oracle does not compare, with why.

Each entry is a predicate over a case's SQL and the reason. Keep it nearly empty: a difference is a
promise to users, listed in docs/sql.md.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime

import polars as pl
from sqlglot import exp

from datacoolie_core.sql import SqlExpressionError, parse_expression
from datacoolie_core.sql.coercion import CoercionError, numeric_operands
from datacoolie_core.sql.to_polars import Compiler
from tests.core.sql.oracle import table


def _double_remainder(sql: str) -> bool:
    """``%``/``MOD``/``PMOD`` computed in DOUBLE (an operand is DOUBLE or a string)."""
    if "%" not in sql and "MOD" not in sql.upper():
        return False
    try:
        node = parse_expression(sql)
    except SqlExpressionError:
        return False
    compiler = Compiler(_schema(), datetime.now(UTC), sql)
    for found in node.walk():
        if isinstance(found, exp.Mod):
            pair = (found.this, found.args["expression"])
        elif isinstance(found, exp.Anonymous) and str(found.name).upper() == "PMOD" and len(found.expressions) == 2:
            pair = (found.expressions[0], found.expressions[1])
        else:
            continue
        try:
            if numeric_operands("%", *(compiler.dtype(side) for side in pair)) == pl.Float64():
                return True
        except (CoercionError, SqlExpressionError):
            continue
    return False


@functools.cache
def _schema() -> pl.Schema:
    from tests.core.sql.oracle.harness import polars_dtype  # the harness imports this module

    return table.polars_frame(polars_dtype).schema


DIFFERENCES: dict[str, tuple[Callable[[str], bool], str]] = {
    "double-remainder": (
        _double_remainder,
        "% / MOD / PMOD in DOUBLE is a - b*trunc(a/b): exact while |a/b| < 2**53 and the product is exact; "
        "Java's fmod is exact for any operands (Polars has no native fmod, e.g. 1e300 % 3 differs)",
    ),
}


def _runtime_failure(*names: str) -> Callable[[str], bool]:
    return lambda sql: any(f"{name}(" in sql.upper() for name in names)


DIFFERENCES["runtime-errors"] = (
    _runtime_failure("URL_DECODE", "TIMESTAMP_SECONDS"),
    "Spark fails the whole query at run time on some values even with ANSI off (URL_DECODE of a malformed "
    "%-escape, TIMESTAMP_SECONDS beyond the timestamp range); we give NULL (or the value) instead of "
    "failing a load mid-write",
)

REFUSALS = ("must be a literal", "integer literal", "only a fixed delimiter is supported",
            "SPLIT with a positive limit is not supported", "ELEMENT_AT index 0 is invalid",
            "with a DecimalFormat pattern", "SLICE start must be a non-zero integer", "ARRAY_JOIN of",
            "of a DOUBLE/FLOAT array is not supported", "is not supported: only integers",
            "REGEXP_EXTRACT_ALL group", "ARRAY of arrays needs arrays of one element type", "looks outside its match", "can match the empty string")  # fmt: skip
"""Errors that refuse a form Spark accepts on purpose (docs/sql-functions.md): an argument that must
be a literal (a pattern, a length, a format) so the expression stays one native Polars expression;
a SPLIT by a regular expression or with a positive limit; an ELEMENT_AT index 0, which makes Spark stop
the query on every non-NULL array; a FORMAT_NUMBER pattern."""


def refused(error: str) -> bool:
    """Whether our compile error is one of the documented refusals."""
    return any(text in error for text in REFUSALS)


def deliberate(sql: str) -> str | None:
    """The reason ``sql`` is a deliberate difference, or ``None``."""
    for applies, reason in DIFFERENCES.values():
        if applies(sql):
            return reason
    return None


ANSI_DIFFERENCES: dict[str, tuple[Callable[[str], bool], str]] = {
    "decimal-pmod": (
        lambda sql: "PMOD(" in sql.upper() and any(ch in sql for ch in ".m"),
        "with ANSI on, Spark 3.5's PMOD of a DECIMAL raises NUMERIC_VALUE_OUT_OF_RANGE for values that fit "
        "(an intermediate of its own); we give the remainder",
    ),
}


def deliberate_in_ansi(sql: str) -> str | None:
    """The reason ``sql`` is a deliberate difference in ANSI mode, or ``None``."""
    for applies, reason in ANSI_DIFFERENCES.values():
        if applies(sql):
            return reason
    return deliberate(sql)
