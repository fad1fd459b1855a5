"""DataFusion predicates for delta-rs MERGE and DELETE, built from column names and typed values.

delta-rs parses predicates with DataFusion (standard SQL: ``"double-quoted"`` identifiers,
``'single-quoted'`` strings). Every name is quoted and every value rendered from its Python type
here; nothing is pasted as text. The grammar needed is five node kinds (column, literal, comparison,
``NOT``, ``AND``), so this module prints them itself instead of building sqlglot trees: importing
sqlglot cost every merge process 80-110 ms. The text is exactly what sqlglot printed for the same
trees (``tests/core/destinations/test_predicates.py`` compares the two on generated names and values).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import polars as pl

from datacoolie_core.errors import DestinationError

SOURCE, TARGET = "source", "target"


@dataclass(frozen=True)
class Predicate:
    """A boolean SQL expression; ``conjunction`` when it is an ``AND`` of several parts."""

    text: str
    conjunction: bool = False

    def and_(self, *others: Predicate) -> Predicate:
        """``self AND other ...``; a conjunction operand is parenthesised, as sqlglot's ``and_`` does."""
        return Predicate(" AND ".join(p.operand() for p in (self, *others)), conjunction=True)

    def operand(self) -> str:
        return f"({self.text})" if self.conjunction else self.text

    def sql(self) -> str:
        return self.text


def identifier(name: str) -> str:
    """``name`` double-quoted, inner quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


def column(name: str, alias: str) -> str:
    """``"alias"."name"``."""
    return f"{identifier(alias)}.{identifier(name)}"


def string(value: str) -> str:
    """``'value'``, inner quotes doubled (DataFusion takes backslashes and newlines as they are)."""
    return "'" + value.replace("'", "''") + "'"


def all_of(parts: Sequence[Predicate]) -> Predicate | None:
    """The parts AND-ed (one part: itself; none: ``None``)."""
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else parts[0].and_(*parts[1:])


def assignments(columns: Sequence[str], *, alias: str = SOURCE) -> dict[str, str]:
    """``{"col": "source"."col"}`` for the ``updates`` of a MERGE clause."""
    return {identifier(c): column(c, alias) for c in columns}


def same_value(left: str, right: str) -> Predicate:
    """``(left IS NOT DISTINCT FROM right)`` over two columns: nulls match each other.

    Parenthesised: DataFusion binds ``IS NOT DISTINCT FROM`` looser than ``AND``.
    """
    return Predicate(f"({left} IS NOT DISTINCT FROM {right})")


def keys_match(keys: Sequence[str]) -> Predicate:
    """``(target.k IS NOT DISTINCT FROM source.k)`` for every key, AND-ed (null keys match each other)."""
    matched = all_of([same_value(column(k, TARGET), column(k, SOURCE)) for k in keys])
    if matched is None:
        raise ValueError("a MERGE needs at least one key")
    return matched


def keys_equal(keys: Sequence[str]) -> Predicate:
    """``target.k = source.k`` for every key, AND-ed: a null key matches nothing (DataCoolie's MERGE, D-08)."""
    matched = all_of([Predicate(f"{column(k, TARGET)} = {column(k, SOURCE)}") for k in keys])
    if matched is None:
        raise ValueError("a MERGE needs at least one key")
    return matched


def equals(name: str, alias: str, value: Any) -> Predicate:
    return Predicate(f"{column(name, alias)} = {literal(value)}")


def not_(predicate: Predicate) -> Predicate:
    return Predicate(f"NOT {predicate.operand()}")


def window_predicate(
    bounds: Mapping[str, tuple[Any, Any]],
    *,
    alias: str = TARGET,
    schema: Mapping[str, pl.DataType] | None = None,
) -> Predicate | None:
    """``lower < col AND col <= upper`` for every column (a missing bound is left out); ``None`` if empty.

    ``schema`` (the columns' dtypes) makes decimal literals exactly the column's type.
    """
    parts: list[Predicate] = []
    for name, (lower, upper) in bounds.items():
        dtype = (schema or {}).get(name)
        if lower is not None:
            parts.append(Predicate(f"{column(name, alias)} > {literal(lower, dtype)}"))
        if upper is not None:
            parts.append(Predicate(f"{column(name, alias)} <= {literal(upper, dtype)}"))
    return all_of(parts)


def literal(value: Any, dtype: pl.DataType | None = None) -> str:
    """A typed SQL literal for a Python value (timestamps in UTC, decimals exact).

    ``dtype`` is the compared column's type, when known: a decimal literal then takes its precision.
    """
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return repr(value)
    if isinstance(value, Decimal) and value.is_finite():
        exponent = value.as_tuple().exponent
        precision, scale = (38, max(-int(exponent), 0)) if isinstance(exponent, int) else (38, 0)
        if isinstance(dtype, pl.Decimal):
            precision, scale = dtype.precision or 38, dtype.scale
        return f"CAST({string(str(value))} AS DECIMAL({precision}, {scale}))"
    if isinstance(value, datetime):
        # Exactly Delta's types (microseconds; UTC for "timestamp", none for "timestamp_ntz"): delta-rs
        # file skipping compares without coercion, and CAST(... AS TIMESTAMP) would be nanoseconds.
        zone = 'Some("UTC")' if value.tzinfo else "None"
        text = (value.astimezone(UTC) if value.tzinfo else value).isoformat()
        return f"ARROW_CAST({string(text)}, {string(f'Timestamp(Microsecond, {zone})')})"
    if isinstance(value, date):
        return f"CAST({string(value.isoformat())} AS DATE)"
    if isinstance(value, str):
        return string(value)
    raise DestinationError(
        f"cannot use {type(value).__name__} value {value!r} in a Delta predicate; "
        "use int, float, Decimal, str, date or datetime bounds"
    )
