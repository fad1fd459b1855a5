"""The generated corpus: operators and constructs crossed with the input columns and literals."""

from __future__ import annotations

from collections.abc import Iterator

from tests.core.sql.oracle.harness import Case

# Operands by Spark kind: the table's columns, literals of the kind (including a typed NULL).
OPERANDS: dict[str, tuple[str, ...]] = {
    "int": ("i", "j", "7", "-3", "0", "2147483647", "CAST(NULL AS INT)"),
    "bigint": ("l", "3L", "-9223372036854775808L"),
    "double": ("d", "e", "2.5D", "-1.5e0", "0.0D"),
    "decimal": ("m", "1.5", "-0.25", "0.00"),
    "string": ("s", "t", "n", "'abc'", "''", "' 42 '", "'tst%'"),
    "boolean": ("b", "c", "true", "false", "CAST(NULL AS BOOLEAN)"),
    "date": ("dt", "DATE'2024-02-29'"),
    "timestamp": ("ts", "TIMESTAMP'2024-03-31 01:30:00'"),
    "timestamp_ntz": ("tn",),
    "null": ("NULL",),
}
NUMERIC = ("int", "bigint", "double", "decimal")


def operands(*kinds: str) -> tuple[str, ...]:
    """The operands of the given kinds, in order."""
    return tuple(value for kind in kinds for value in OPERANDS[kind])


def operator_cases() -> Iterator[Case]:
    """Every operator/construct over operand pairs of every kind it accepts."""
    numbers = operands(*NUMERIC, "null")
    for op in ("+", "-", "*", "/", "%", "DIV"):
        for left in numbers:
            for right in numbers:
                yield Case(f"{left} {op} {right}", origin=f"arithmetic {op}")
