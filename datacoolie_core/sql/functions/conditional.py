"""Spark SQL null-handling and conditional functions (CASE and IF are constructs of the compiler).

``NULLIF``, ``NVL2`` and ``EQUAL_NULL`` are defined by Spark through ``IF``/``=``/``<=>`` and are
compiled as those, so their types and comparisons are the compiler's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.ansi import guard_all, masked, reached_only
from datacoolie_core.sql.coercion import CoercionError, common_type
from datacoolie_core.sql.functions.math import wider_decimal
from datacoolie_core.sql.functions.registry import Handler, arity, expr_dtype, number, text
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler


def _kind(dtype: pl.DataType | None) -> str:
    if dtype is None or dtype == pl.Null:
        return "null"
    if dtype.is_numeric():
        return "number"
    if dtype.is_temporal():
        return "temporal"
    return "string" if dtype == pl.String else str(dtype)


def common_values(c: Compiler, nodes: list[exp.Expression], name: str) -> list[pl.Expr]:
    """The arguments in Spark's common type: numbers widen, a STRING turns all into strings.

    Raises:
        SqlExpressionError: Spark has no common type (a BOOLEAN or a date with a number).
    """
    values = [c.compile(e) for e in nodes]
    dtypes = [expr_dtype(c, v) for v in values]
    kinds = {_kind(t) for t in dtypes} - {"null"}
    if c.schema is None or (len(kinds) <= 1 and kinds != {"number"}):
        return values
    if "string" in kinds and kinds <= {"string", "number", "temporal"}:
        return [text(c, e) for e in nodes]
    if kinds == {"number"}:
        target = wider_decimal([t for t in dtypes if t is not None]) or expr_dtype(c, pl.coalesce(values))
        return [v.cast(target) for v in values]  # type: ignore[arg-type]
    raise SqlExpressionError(
        f"{name} needs arguments of one type, got {', '.join(str(t) for t in dtypes)} (in {c.text!r})"
    )


def _ansi_coalesce(c: Compiler, nodes: list[exp.Expression]) -> pl.Expr:
    """COALESCE with ANSI on and a STRING among other types: all in ANSI's common type (``COALESCE(s, i)`` is a
    BIGINT), an argument's cast raising only on rows that reach it (the ones before it are NULL)."""
    try:
        common = common_type([c.dtype(e) for e in nodes], ansi=True)
    except CoercionError as e:
        raise SqlExpressionError(f"COALESCE: {e} (in {c.text!r})") from None
    if common is None:  # without a schema (validation): nothing to cast
        return pl.coalesce([c.compile(e) for e in nodes])
    values, checks, earlier_null = [], [], pl.lit(True)
    for node in nodes:
        value, found = c.cast_checked(node, common)
        values.append(value)
        checks += masked(found, earlier_null, conditional=True)
        earlier_null = earlier_null & c.compile(node).is_null()
    coalesced = pl.coalesce(values)
    return guard_all(coalesced, common, checks, c.text) if checks else coalesced


def _compile_in_turn(c: Compiler, nodes: list[exp.Expression]) -> None:
    """Compile (and so memoize) each argument with its ANSI checks on the rows Spark evaluates it on: where
    the arguments before it are NULL (``COALESCE(i, CAST(s AS INT))`` casts no ``s`` where ``i`` is set)."""
    earlier_null = c.compile(nodes[0]).is_null()
    for node in nodes[1:]:
        with reached_only(earlier_null, conditional=True):
            value = c.compile(node)
        earlier_null = earlier_null & value.is_null()


def _coalesce(c: Compiler, node: exp.Coalesce) -> pl.Expr:
    nodes = [node.this, *node.expressions]
    if c.ansi:
        _compile_in_turn(c, nodes)
    if c.ansi and c.schema is not None and pl.String() in {c.dtype(e) for e in nodes} and len(nodes) > 1:
        return _ansi_coalesce(c, nodes)
    return pl.coalesce(common_values(c, nodes, "COALESCE"))


def _nullif(c: Compiler, node: exp.Nullif) -> pl.Expr:
    left, right = node.this, node.args["expression"]
    equal = exp.EQ(this=left.copy(), expression=right.copy())
    return c.compile(exp.If(this=equal, true=exp.Null(), false=left.copy()))


def _nvl2(c: Compiler, node: exp.Nvl2) -> pl.Expr:
    present = exp.Not(this=exp.Is(this=node.this.copy(), expression=exp.Null()))
    otherwise = node.args.get("false")
    return c.compile(exp.If(this=present, true=node.args["true"].copy(), false=otherwise.copy() if otherwise else None))


def _isnan(c: Compiler, node: exp.IsNan) -> pl.Expr:
    # Spark's ISNAN is false (never NULL) for NULL
    return number(c, node.this).is_nan().fill_null(False)


def _nanvl(c: Compiler, node: exp.Nanvl) -> pl.Expr:
    value, fallback = number(c, node.this), number(c, node.args["expression"])
    return pl.when(value.is_nan()).then(fallback).otherwise(value)


def _null_test(negate: bool) -> Handler:
    def handler(c: Compiler, node: exp.Anonymous) -> pl.Expr:
        value = c.compile(arity(c, node, 1)[0])
        return value.is_not_null() if negate else value.is_null()

    return handler


def _decode(c: Compiler, node: exp.DecodeCase) -> pl.Expr:
    # DECODE(x, search1, result1, ..., default): a CASE of null-safe equalities (NULL finds NULL)
    subject, *rest = node.expressions
    pairs, default = rest[: len(rest) // 2 * 2], rest[-1] if len(rest) % 2 else None
    if not pairs:
        raise SqlExpressionError(f"DECODE needs a search value and a result (in {c.text!r})")
    ifs = [
        exp.If(this=exp.NullSafeEQ(this=subject.copy(), expression=search.copy()), true=result.copy())
        for search, result in zip(pairs[::2], pairs[1::2], strict=True)
    ]
    # without a default Spark adds a NULL of type STRING, which makes the result a string with ANSI off
    # (and, with ANSI on, casts STRING results to the others' type: DECODE(i, 1, 2) is a BIGINT)
    otherwise = default.copy() if default is not None else exp.Cast(this=exp.Null(), to=exp.DataType.build("STRING"))
    return c.compile(exp.Case(ifs=ifs, default=otherwise))


NODES: dict[type[exp.Expression], Handler] = {
    exp.DecodeCase: _decode,
    exp.Coalesce: _coalesce,
    exp.Nullif: _nullif,
    exp.Nvl2: _nvl2,
    exp.IsNan: _isnan,
    exp.Nanvl: _nanvl,
    exp.EqualNull: lambda c, n: c.compile(exp.NullSafeEQ(this=n.this.copy(), expression=n.args["expression"].copy())),
}
NAMES: dict[str, Handler] = {"ISNULL": _null_test(negate=False), "ISNOTNULL": _null_test(negate=True)}
SUPPORTED = (
    "COALESCE",
    "DECODE",
    "EQUAL_NULL",
    "IFNULL",
    "ISNAN",
    "ISNOTNULL",
    "ISNULL",
    "NANVL",
    "NULLIF",
    "NVL",
    "NVL2",
)
