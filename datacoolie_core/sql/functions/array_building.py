"""Spark SQL functions that build arrays: ARRAY_APPEND/PREPEND/INSERT/REPEAT, FLATTEN, SEQUENCE and the set
operations ARRAY_UNION/INTERSECT/EXCEPT and ARRAYS_OVERLAP.

Spark meets the element types without promoting to STRING (``ARRAY<INT>`` and ``BIGINT`` meet in
``BIGINT``, ``ARRAY<INT>`` and ``STRING`` do not meet). The set operations keep the first occurrence of
each element in order and one NULL, as Spark does; they are refused over DOUBLE/FLOAT arrays, where
Spark keeps ``0.0`` and ``-0.0`` apart and Polars merges them.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.ansi import guard_all
from datacoolie_core.sql.coercion import CoercionError, common_type, is_integral, spark_name
from datacoolie_core.sql.functions.registry import Handler, arity, dtype, literal
from datacoolie_core.sql.parse import READ_DIALECT, SqlExpressionError

if TYPE_CHECKING:
    from polars.datatypes import IntegerType

    from datacoolie_core.sql.to_polars import Compiler

_FLOATS = (pl.Float32(), pl.Float64())
MAX_ARRAY_LENGTH = 2_147_483_632
"""Spark's limit on the length of an array it builds (``ByteArrayMethods.MAX_ROUNDED_ARRAY_LENGTH``)."""


def _element(c: Compiler, node: exp.Expression, what: str) -> pl.DataType | None:
    """The element type of an ARRAY argument (``None`` while validating)."""
    found = dtype(c, node)
    if found is None:
        return None
    if not isinstance(found, pl.List):
        raise SqlExpressionError(
            f"{what} takes an ARRAY, got {spark_name(found)} in '{node.sql(dialect=READ_DIALECT)}' (in {c.text!r})"
        )
    return typing.cast(pl.DataType, found.inner)


def _meet(c: Compiler, types: list[pl.DataType | None], what: str) -> pl.DataType | None:
    """Spark's ``findWiderTypeWithoutStringPromotion``: numbers widen, STRING meets only STRING."""
    if any(t is None for t in types):
        return None
    known = [typing.cast(pl.DataType, t) for t in types]
    strings = {t == pl.String() for t in known if t != pl.Null()}
    try:
        common = common_type(list(known))
    except CoercionError as e:
        raise SqlExpressionError(f"{what}: {e} (in {c.text!r})") from None
    decimals = {t for t in known if isinstance(t, pl.Decimal)}
    if len(strings) > 1 or (decimals and len({t for t in known if t != pl.Null()}) > 1):  # tightest type only
        names = " and ".join(spark_name(t) for t in known)
        raise SqlExpressionError(f"{what} needs elements of one type, got {names} (in {c.text!r})")
    return common


def _as_list(c: Compiler, node: exp.Expression, element: pl.DataType | None) -> pl.Expr:
    compiled = c.compile(node)
    return compiled if element is None else compiled.cast(pl.List(element))


def _as_value(c: Compiler, node: exp.Expression, element: pl.DataType | None) -> pl.Expr:
    return c.compile(node) if element is None else c.cast(node, element)


def _adding(prepend: bool) -> Handler:
    """ARRAY_APPEND / ARRAY_PREPEND(arr, v): NULL for a NULL array, a NULL ``v`` is added."""

    def handler(c: Compiler, node: exp.Expression) -> pl.Expr:
        c.allow_args(node, "this", "expression", "null_propagation")
        what = "ARRAY_PREPEND" if prepend else "ARRAY_APPEND"
        values, value = node.this, node.args["expression"]
        element = _meet(c, [_element(c, values, what), dtype(c, value)], what)
        items, item = _as_list(c, values, element), _as_value(c, value, element)
        parts = [item, items] if prepend else [items, item]
        return pl.when(items.is_not_null()).then(pl.concat_list(parts))

    return handler


def _nulls(element: pl.DataType | None, count: pl.Expr) -> pl.Expr:
    """A list of ``count`` NULLs of ``element`` type per row."""
    return pl.lit(None, dtype=element or pl.Null()).repeat_by(count.clip(lower_bound=0))


def _insert(c: Compiler, node: exp.ArrayInsert) -> pl.Expr:
    """ARRAY_INSERT(arr, pos, v): ``pos`` from 1, negative from the end (-1 appends, Spark 3.5); NULLs pad
    the gap when ``pos`` lies beyond either end."""
    c.allow_args(node, "this", "position", "expression", "offset")  # offset: sqlglot's 1 (Spark counts from 1)
    values, value = node.this, node.args["expression"]
    position = literal(c, node.args.get("position"), "the ARRAY_INSERT position")
    if not isinstance(position, int) or isinstance(position, bool) or position == 0:
        raise SqlExpressionError(
            f"the ARRAY_INSERT position must be a non-zero integer literal: Spark stops the query on 0 and "
            f"refuses NULL (in {c.text!r})"
        )
    element = _meet(c, [_element(c, values, "ARRAY_INSERT"), dtype(c, value)], "ARRAY_INSERT")
    items, item = _as_list(c, values, element), _as_value(c, value, element)
    length = items.list.len().cast(pl.Int64)
    if position > 0:
        at = pl.lit(position - 1, dtype=pl.Int64)
        inserted = pl.concat_list([items.list.head(at), _nulls(element, at - length), item, items.list.slice(at)])
    else:
        at = length + position + 1
        inside = pl.concat_list(
            [items.list.head(at.clip(lower_bound=0)), item, items.list.slice(at.clip(lower_bound=0))]
        )
        before = pl.concat_list([item, _nulls(element, -at), items])
        inserted = pl.when(at >= 0).then(inside).otherwise(before)
    return pl.when(items.is_not_null()).then(inserted)


def _repeat(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    """ARRAY_REPEAT(v, n): ``n`` copies of ``v`` (an INT; empty when ``n`` < 1, NULL when ``n`` is NULL)."""
    value, count = arity(c, node, 2)
    counted = dtype(c, count)
    if counted is not None and counted not in (pl.Int32(), pl.Null()):
        raise SqlExpressionError(f"the ARRAY_REPEAT count must be an INT, got {spark_name(counted)} (in {c.text!r})")
    element = dtype(c, value)
    times = c.compile(count).cast(pl.Int64)
    item = c.compile(value) if element is None else c.compile(value).cast(element)
    return pl.when(times.is_not_null()).then(item.repeat_by(times.clip(lower_bound=0)))


def _flatten(c: Compiler, node: exp.Flatten) -> pl.Expr:
    """FLATTEN(arr of arrays): the inner arrays concatenated; NULL when one of them is NULL."""
    c.allow_args(node, "this")
    inner = _element(c, node.this, "FLATTEN")
    if inner is not None and not isinstance(inner, pl.List):
        raise SqlExpressionError(f"FLATTEN takes an ARRAY of ARRAYs, got ARRAY<{spark_name(inner)}> (in {c.text!r})")
    items = c.compile(node.this)
    has_null = items.list.eval(pl.element().is_null().any()).list.first()
    return pl.when(~has_null).then(items.list.eval(pl.element().explode()))


def _set_operands(c: Compiler, left: exp.Expression, right: exp.Expression, what: str) -> tuple[pl.Expr, pl.Expr]:
    """Both arrays in their common element type, refused for DOUBLE/FLOAT elements."""
    element = _meet(c, [_element(c, left, what), _element(c, right, what)], what)
    if element in _FLOATS:
        raise SqlExpressionError(
            f"{what} of a DOUBLE/FLOAT array is not supported: Spark keeps 0.0 and -0.0 apart, Polars merges "
            f"them (in {c.text!r})"
        )
    work = pl.Int8() if element in (pl.Null(), pl.Boolean()) else element  # Polars' set operations lack these
    first, second = _as_list(c, left, work), _as_list(c, right, work)
    # a constant array meets a column row by row (Polars' set operations fail on a length-1 side)
    return _spread(first, second), _spread(second, first)


def _spread(values: pl.Expr, other: pl.Expr) -> pl.Expr:
    return pl.when(other.is_null() | other.is_not_null()).then(values)


def _common_array(c: Compiler, pair: tuple[exp.Expression, exp.Expression]) -> pl.DataType | None:
    element = _meet(c, [_element(c, side, "an array set operation") for side in pair], "an array set operation")
    return None if element is None else pl.List(element)


def _set_result(c: Compiler, result: pl.Expr, found: pl.DataType | None) -> pl.Expr:
    """``result`` back in the arrays' type (BOOLEAN and NULL arrays are computed as TINYINT)."""
    if found == pl.List(pl.Null()):
        return pl.lit(None, dtype=pl.Null()).repeat_by(result.list.len())
    return result if found is None else result.cast(found)


def _two(c: Compiler, node: exp.Expression) -> tuple[exp.Expression, exp.Expression]:
    if isinstance(node, exp.Anonymous) or not node.args.get("expression"):
        pair = arity(c, node, 2)
        return pair[0], pair[1]
    c.allow_args(node, "this", "expression")
    return node.this, node.args["expression"]


def _union(c: Compiler, node: exp.Expression) -> pl.Expr:
    """ARRAY_UNION(a, b): the distinct elements of ``a`` then ``b``, in first-occurrence order."""
    pair = _two(c, node)
    left, right = _set_operands(c, *pair, "ARRAY_UNION")
    return _set_result(c, left.list.set_union(right), _common_array(c, pair))


def _intersect(c: Compiler, node: exp.ArrayIntersect) -> pl.Expr:
    """ARRAY_INTERSECT(a, b): the distinct elements of ``a`` also in ``b`` (NULL too), in ``a``'s order."""
    c.allow_args(node, "expressions")
    if len(node.expressions) != 2:
        raise SqlExpressionError(f"ARRAY_INTERSECT takes 2 arguments, got {len(node.expressions)} (in {c.text!r})")
    pair = (node.expressions[0], node.expressions[1])
    left, right = _set_operands(c, *pair, "ARRAY_INTERSECT")
    return _set_result(c, left.list.set_intersection(right), _common_array(c, pair))


def _except(c: Compiler, node: exp.ArrayExcept) -> pl.Expr:
    """ARRAY_EXCEPT(a, b): the distinct elements of ``a`` not in ``b`` (NULL too), in ``a``'s order."""
    pair = _two(c, node)
    left, right = _set_operands(c, *pair, "ARRAY_EXCEPT")
    # Polars puts a NULL first in a difference; its intersection with ``a`` keeps ``a``'s order
    return _set_result(c, left.list.set_intersection(left.list.set_difference(right)), _common_array(c, pair))


def _overlap(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    """ARRAYS_OVERLAP(a, b): true when they share a non-NULL element; else NULL when both are non-empty
    and either holds a NULL; else false."""
    first, second = arity(c, node, 2)
    left, right = _set_operands(c, first, second, "ARRAYS_OVERLAP")
    shared = left.list.set_intersection(right).list.drop_nulls().list.len() > 0
    has_null = (left.list.drop_nulls().list.len() < left.list.len()) | (
        right.list.drop_nulls().list.len() < right.list.len()
    )
    non_empty = (left.list.len() > 0) & (right.list.len() > 0)
    known = left.is_not_null() & right.is_not_null()
    return pl.when(~known).then(None).when(shared).then(True).when(non_empty & has_null).then(None).otherwise(False)


def _sequence(c: Compiler, node: exp.GenerateSeries) -> pl.Expr:
    """SEQUENCE(start, stop[, step]) of integers: ``step`` defaults to 1 or -1 towards ``stop``; a step
    away from ``stop`` (or 0) stops the query, as in Spark."""
    c.allow_args(node, "start", "end", "step")
    parts = [node.args["start"], node.args["end"], *([node.args["step"]] if node.args.get("step") else [])]
    types = [dtype(c, part) for part in parts]
    known = [t for t in types if t is not None and t != pl.Null()]
    if c.schema is not None and all(t == pl.Null() for t in types[:2]):
        raise SqlExpressionError(f"SEQUENCE needs typed bounds, not two untyped NULLs (in {c.text!r})")
    if any(not is_integral(t) for t in known):
        names = ", ".join(spark_name(t) for t in known)
        raise SqlExpressionError(
            f"SEQUENCE of {names} is not supported: only integers (dates and timestamps need an INTERVAL step) "
            f"(in {c.text!r})"
        )
    element = (_meet(c, types, "SEQUENCE") or pl.Int32()) if c.schema is not None else None
    result = typing.cast("IntegerType", element if element is not None and element != pl.Null() else pl.Int32())
    start, stop = (c.compile(part).cast(pl.Int64) for part in parts[:2])
    toward = pl.when(start <= stop).then(pl.lit(1, pl.Int64)).otherwise(pl.lit(-1, pl.Int64))
    step = c.compile(parts[2]).cast(pl.Int64) if len(parts) == 3 else toward
    illegal = (start != stop) & ((step == 0) | (step.sign() != toward))
    length = (stop - start).cast(pl.Int128).floordiv(pl.when(step == 0).then(1).otherwise(step)) + 1
    too_long = ~illegal & (length > MAX_ARRAY_LENGTH)
    bad = illegal | too_long
    safe_stop = pl.when(bad).then(start).otherwise(stop)  # a bad row never builds its array
    safe_step = pl.when(step == 0).then(pl.lit(1, pl.Int64)).otherwise(step)  # SEQUENCE(1, 1, 0) is [1]
    values = pl.int_ranges(start, safe_stop + safe_step.sign(), safe_step, dtype=result)
    shown = pl.format("{} to {} by {}", start, stop, step)
    checks = [
        (illegal, shown, "", "Illegal sequence boundaries: {value}"),
        (too_long, length, "", "Unsuccessful try to create array with {value} elements due to exceeding the "
         f"array size limit {MAX_ARRAY_LENGTH}."),
    ]  # fmt: skip
    return guard_all(values, pl.List(result), checks, c.text, ansi=False)


NODES: dict[type[exp.Expression], Handler] = {
    exp.ArrayAppend: _adding(prepend=False),
    exp.ArrayPrepend: _adding(prepend=True),
    exp.ArrayInsert: _insert,
    exp.Flatten: _flatten,
    exp.ArrayIntersect: _intersect,
    exp.ArrayExcept: _except,
    exp.GenerateSeries: _sequence,
}
NAMES: dict[str, Handler] = {"ARRAY_REPEAT": _repeat, "ARRAY_UNION": _union, "ARRAYS_OVERLAP": _overlap}
SUPPORTED = ("ARRAY_APPEND", "ARRAY_EXCEPT", "ARRAY_INSERT", "ARRAY_INTERSECT", "ARRAY_PREPEND", "ARRAY_REPEAT",
             "ARRAY_UNION", "ARRAYS_OVERLAP", "FLATTEN", "SEQUENCE")  # fmt: skip
