"""Spark SQL arrays as Polars lists: SPLIT, ARRAY, indexing (``arr[i]``, ELEMENT_AT), SIZE, ARRAY_CONTAINS.

Enough for the metadata idiom ``SPLIT(code, '-')[1]`` / ``ELEMENT_AT(SPLIT(path, '/'), -1)``: an
ARRAY<T> is a Polars ``List(T)``. SPLIT's pattern is a Java regular expression; only patterns that
match a fixed text (plain characters, or metacharacters escaped with a backslash) are compiled, as a
literal split, so the result is Java's ``String.split(text, -1)``.
"""

from __future__ import annotations

import re
import typing
from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.ansi import guard
from datacoolie_core.sql.coercion import CoercionError, common_type, is_integral
from datacoolie_core.sql.functions import array_building
from datacoolie_core.sql.functions.registry import Handler, arity, dtype, literal, text
from datacoolie_core.sql.parse import READ_DIALECT, SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

_META = set(".$|()[]{}^?*+\\")
_ESCAPED = re.compile(r"\\(.)|(.)", re.DOTALL)


def _fixed_text(c: Compiler, pattern: str) -> str:
    """The text a Java regex matches when it matches one fixed text (else SqlExpressionError)."""
    out = []
    for escaped, plain in _ESCAPED.findall(pattern):
        if (plain and plain in _META) or (escaped and escaped.isalnum()):
            raise SqlExpressionError(
                f"SPLIT pattern {pattern!r} is a regular expression; only a fixed delimiter is supported "
                f"(escape metacharacters: '\\\\|', '\\\\.') (in {c.text!r})"
            )
        out.append(escaped or plain)
    return "".join(out)


def _split(c: Compiler, node: exp.RegexpSplit) -> pl.Expr:
    c.allow_args(node, "this", "expression", "limit")
    limit = literal(c, node.args.get("limit"), "the SPLIT limit") if node.args.get("limit") else -1
    if not isinstance(limit, int) or limit > 0:
        raise SqlExpressionError(f"SPLIT with a positive limit is not supported (in {c.text!r})")
    delimiter = _fixed_text(c, c.literal_str(node.args.get("expression")))
    value = text(c, node.this)
    if delimiter == "":  # Spark splits into characters ('' stays one empty element)
        chars = value.str.split("")
        return pl.when(value == "").then(pl.concat_list([pl.lit("")])).otherwise(chars)
    return value.str.split(delimiter)


def _list_dtype(c: Compiler, node: exp.Expression, what: str) -> pl.List | None:
    found = dtype(c, node)
    if found is None or isinstance(found, pl.List):
        return found
    raise SqlExpressionError(
        f"{what} takes an ARRAY, got {found} in '{node.sql(dialect=READ_DIALECT)}' (in {c.text!r})"
    )


def _index(c: Compiler, node: exp.Expression) -> pl.Expr:
    index = node.expressions[0] if node.expressions else None
    if index is None or len(node.expressions) != 1:
        raise SqlExpressionError(f"an array index takes one position (in {c.text!r})")
    found = dtype(c, index)
    if found == pl.Null() and node.args.get("offset"):
        raise SqlExpressionError(f"ELEMENT_AT needs an INT index, not an untyped NULL (in {c.text!r})")
    if found is not None and not found.is_integer() and found != pl.Null():
        raise SqlExpressionError(f"an array index must be an integer, got {found} (in {c.text!r})")
    return c.compile(index).cast(pl.Int64)


def _bracket(c: Compiler, node: exp.Bracket) -> pl.Expr:
    c.allow_args(node, "this", "expressions", "offset", "safe")
    _list_dtype(c, node.this, "indexing")
    values, index = c.compile(node.this), _index(c, node)
    if not any(isinstance(n, exp.Column) for n in node.this.walk()):
        # Polars gives one row for a constant list indexed by a column: spread the list over the rows
        values = pl.when(index.is_null() | index.is_not_null()).then(values)
    length = values.list.len().cast(pl.Int64)
    if not node.args.get("offset"):  # arr[i]: from 0, a negative or too large index is NULL
        found: pl.Expr = pl.when(index >= 0).then(values.list.get(index, null_on_oob=True))
        beyond = (index < 0) | (index >= length)
        return _ansi_bounds(c, node, found, values, index, beyond, "INVALID_ARRAY_INDEX", "`get()`")
    if isinstance(node.expressions[0], exp.Literal) and str(node.expressions[0].this) == "0":
        raise SqlExpressionError(f"ELEMENT_AT index 0 is invalid: the first element is 1, the last -1 (in {c.text!r})")
    # ELEMENT_AT: from 1, negative from the end (Polars' own negative index), beyond either end NULL
    # an index 0 from a column: Spark stops the query (INVALID_INDEX_OF_ZERO); here the row is NULL
    position = pl.when(index > 0).then(index - 1).when(index < 0).then(index)
    found = values.list.get(position, null_on_oob=True)
    beyond = (index != 0) & (index.abs() > length)
    return _ansi_bounds(c, node, found, values, index, beyond, "INVALID_ARRAY_INDEX_IN_ELEMENT_AT", "`try_element_at`")


def _ansi_bounds(
    c: Compiler,
    node: exp.Bracket,
    found: pl.Expr,
    values: pl.Expr,
    index: pl.Expr,
    beyond: pl.Expr,
    error_class: str,
    tolerant: str,
) -> pl.Expr:
    """``found``, raising Spark's ANSI error for an index beyond the array (``arr[i]``, ELEMENT_AT; not
    GET or TRY_ELEMENT_AT, which stay NULL)."""
    listed = dtype(c, node.this)
    if not c.ansi or node.args.get("safe") or not isinstance(listed, pl.List):
        return found
    if (
        not node.args.get("offset")
        and isinstance(node.this, exp.Array)
        and isinstance(node.expressions[0], (exp.Literal, exp.Neg))
    ):
        return found  # Spark's optimizer reads ARRAY(a, b)[k] as the k-th argument or NULL, never raising
    element = typing.cast(pl.DataType, listed.inner)
    bad = values.is_not_null() & index.is_not_null() & beyond
    shown = pl.format("{} is out of bounds. The array has {} elements", index, values.list.len())
    detail = (
        f"The index {{value}}. Use the SQL function {tolerant} to tolerate accessing element at invalid index "
        "and return NULL instead."
    )
    return guard(found, element, bad, shown, error_class, detail, c.text)


def _spelled_array_size(node: exp.Expression) -> bool:
    """Whether the parsed name was ARRAY_SIZE: sqlglot parses it and SIZE to one node, but keeps where
    the name starts and ends in the text (their NULL results differ)."""
    start, end = node.meta.get("start"), node.meta.get("end")
    return isinstance(start, int) and isinstance(end, int) and end - start + 1 == len("ARRAY_SIZE")


def _size(c: Compiler, node: exp.Expression) -> pl.Expr:
    """SIZE/CARDINALITY: -1 for a NULL array (Spark 3.5, ANSI off; NULL with ANSI on); ARRAY_SIZE: NULL."""
    if isinstance(node, exp.ArraySize):
        c.allow_args(node, "this")
        values = node.this
    else:
        values = arity(c, node, 1)[0]
    _list_dtype(c, values, "SIZE")
    size = c.compile(values).list.len().cast(pl.Int32)
    # Spark's spark.sql.legacy.sizeOfNull holds only with ANSI off: then SIZE(NULL) is -1
    return size if _spelled_array_size(node) or c.ansi else size.fill_null(-1)


def _element_type(c: Compiler, values: exp.Expression, value: exp.Expression) -> pl.DataType | None:
    found = _list_dtype(c, values, "ARRAY_CONTAINS")
    element = typing.cast(pl.DataType, found.inner) if isinstance(found, pl.List) else None
    other = dtype(c, value)
    if other == pl.Null():
        raise SqlExpressionError(f"ARRAY_CONTAINS cannot look for a NULL (in {c.text!r})")
    if element is None or other is None or element == other:
        return element
    try:
        common = common_type([element, other])
    except CoercionError as e:
        raise SqlExpressionError(f"ARRAY_CONTAINS: {e} (in {c.text!r})") from None
    if common is None or other == pl.String() or element == pl.String():
        raise SqlExpressionError(
            f"ARRAY_CONTAINS needs a value of the array's element type {element}, got {other} (in {c.text!r})"
        )
    return element


def _contains(c: Compiler, node: exp.ArrayContains) -> pl.Expr:
    c.allow_args(node, "this", "expression")
    values, value = node.this, node.args["expression"]
    element = _element_type(c, values, value)
    items = c.compile(values)
    other = dtype(c, value)
    if element is not None and other is not None and other != element:  # numbers meet in the wider type
        element = common_type([element, other])
        if element is not None:
            items = items.cast(pl.List(element))
    needle = c.compile(value) if element is None else c.cast(value, element)
    found = items.list.contains(needle, nulls_equal=False)
    # Spark: true when found; else NULL when the array holds a NULL; else false
    has_null = items.list.eval(pl.element().is_null().any()).list.first()
    unknown = items.is_null() | needle.is_null()
    return pl.when(unknown).then(None).when(found).then(True).when(has_null).then(None).otherwise(False)


def _array(c: Compiler, node: exp.Array) -> pl.Expr:
    elements = list(node.expressions)
    if not elements:
        raise SqlExpressionError(f"an empty ARRAY() has no element type; give at least one element (in {c.text!r})")
    types = [dtype(c, e) for e in elements]
    listed = {t for t in types if isinstance(t, pl.List)}
    if len(listed) > 1:
        raise SqlExpressionError(
            f"ARRAY of arrays needs arrays of one element type, got {', '.join(sorted(map(str, listed)))}; CAST "
            f"them to one type (in {c.text!r})"
        )
    try:
        common = common_type(types, ansi=c.ansi)  # ANSI: ARRAY(s, i) is an ARRAY<BIGINT>, s cast raising
    except CoercionError as e:
        raise SqlExpressionError(f"ARRAY elements: {e} (in {c.text!r})") from None
    if isinstance(common, pl.List):  # concat_list would concatenate arrays: wrap each in a struct first
        nested = [pl.struct(c.compile(e).cast(common).alias("v")) for e in elements]
        return pl.concat_list(nested).list.eval(pl.element().struct.field("v"))
    compiled = [c.compile(e) if common is None else c.cast(e, common) for e in elements]
    return pl.concat_list(compiled)


def _get(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    """GET(arr, i): ``arr[i]`` (from 0, NULL out of bounds)."""
    values, index = arity(c, node, 2)
    return c.compile(exp.Bracket(this=values.copy(), expressions=[index.copy()], safe=True))


def _compact(c: Compiler, node: exp.ArrayCompact) -> pl.Expr:
    c.allow_args(node, "this")
    _list_dtype(c, node.this, "ARRAY_COMPACT")
    return c.compile(node.this).list.drop_nulls()


def _join(c: Compiler, node: exp.ArrayToString) -> pl.Expr:
    """ARRAY_JOIN(arr, sep[, null_replacement]): NULL elements skipped, or replaced when a replacement is given."""
    c.allow_args(node, "this", "expression", "null")
    found = _list_dtype(c, node.this, "ARRAY_JOIN")
    inner = found.inner if isinstance(found, pl.List) else None
    if inner is not None and not (inner == pl.String() or is_integral(typing.cast(pl.DataType, inner))):
        raise SqlExpressionError(f"ARRAY_JOIN of {found} is not supported (STRING or integer arrays) (in {c.text!r})")
    separator = literal(c, node.args.get("expression"), "the ARRAY_JOIN delimiter")
    replacement = (
        literal(c, node.args.get("null"), "the ARRAY_JOIN null replacement") if node.args.get("null") else None
    )
    if separator is None or (node.args.get("null") is not None and replacement is None):
        return pl.lit(None, dtype=pl.String)
    items = c.compile(node.this).cast(pl.List(pl.String))
    items = (
        items.list.drop_nulls() if replacement is None else items.list.eval(pl.element().fill_null(str(replacement)))
    )
    return items.list.join(str(separator))


def _slice(c: Compiler, node: exp.ArraySlice) -> pl.Expr:
    """SLICE(arr, start, length): from 1 (negative: from the end), an empty array beyond either end."""
    c.allow_args(node, "this", "start", "end", "is_length")
    _list_dtype(c, node.this, "SLICE")
    start = literal(c, node.args.get("start"), "the SLICE start")
    length = literal(c, node.args.get("end"), "the SLICE length")
    if start is None or length is None:
        return pl.lit(None).cast(dtype(c, node.this) or pl.List(pl.Null()))
    if not isinstance(start, int) or not isinstance(length, int) or start == 0 or length < 0:
        raise SqlExpressionError(
            f"SLICE start must be a non-zero integer and length a non-negative integer: Spark stops the query "
            f"otherwise (in {c.text!r})"
        )
    values = c.compile(node.this)
    if start > 0:
        return values.list.slice(start - 1, length)
    offset = values.list.len().cast(pl.Int64) + start
    return pl.when(offset >= 0).then(values.list.slice(start, length)).otherwise(values.list.slice(0, 0))


def _items_and_value(c: Compiler, values: exp.Expression, value: exp.Expression, what: str) -> tuple[pl.Expr, pl.Expr]:
    """The array and a value of its element type (numbers meet in the wider type), as ARRAY_CONTAINS reads them."""
    element = _element_type(c, values, value)
    items, other = c.compile(values), dtype(c, value)
    if element is not None and other is not None and other != element:
        element = common_type([element, other])
        if element is not None:
            items = items.cast(pl.List(element))
    needle = c.compile(value) if element is None else c.cast(value, element)
    return items, needle


def _literal_value(c: Compiler, node: exp.Expression, what: str) -> None:
    if not isinstance(node, (exp.Literal, exp.Neg, exp.Boolean)):
        raise SqlExpressionError(f"the value of {what} must be a literal (in {c.text!r})")


def _position(c: Compiler, node: exp.ArrayPosition) -> pl.Expr:
    """ARRAY_POSITION(arr, v): the first position of ``v`` from 1, 0 when absent."""
    c.allow_args(node, "this", "expression")
    _literal_value(c, node.args["expression"], "ARRAY_POSITION")
    items, needle = _items_and_value(c, node.this, node.args["expression"], "ARRAY_POSITION")
    first = items.list.eval((pl.element() == needle).arg_true().first()).list.first()
    return pl.when(items.is_not_null()).then((first.cast(pl.Int64) + 1).fill_null(0))


def _remove(c: Compiler, node: exp.ArrayRemove) -> pl.Expr:
    """ARRAY_REMOVE(arr, v): every element equal to ``v`` removed (NULL elements stay)."""
    c.allow_args(node, "this", "expression", "null_propagation")
    _literal_value(c, node.args["expression"], "ARRAY_REMOVE")
    items, needle = _items_and_value(c, node.this, node.args["expression"], "ARRAY_REMOVE")
    kept = items.list.eval(pl.element().filter(pl.element().is_null() | (pl.element() != needle)))
    return pl.when(needle.is_not_null()).then(kept)


def _sort(c: Compiler, node: exp.ArraySort) -> pl.Expr:
    """SORT_ARRAY(arr[, asc]): NULLs first ascending, last descending; NaN above every number."""
    c.allow_args(node, "this", "asc", "nulls_first")
    _list_dtype(c, node.this, "SORT_ARRAY")
    ascending = literal(c, node.args["asc"], "the SORT_ARRAY order") if node.args.get("asc") else True
    if not isinstance(ascending, bool):
        raise SqlExpressionError(f"the SORT_ARRAY order must be TRUE or FALSE (in {c.text!r})")
    return c.compile(node.this).list.sort(descending=not ascending, nulls_last=not ascending)


def _extreme(largest: bool) -> Handler:
    def handler(c: Compiler, node: exp.Expression) -> pl.Expr:
        c.allow_args(node, "this")
        found = _list_dtype(c, node.this, "ARRAY_MAX" if largest else "ARRAY_MIN")
        items = c.compile(node.this)
        if not largest:
            return items.list.min()
        if isinstance(found, pl.List) and found.inner in (pl.Float32(), pl.Float64()):  # Spark: NaN is the largest
            has_nan = items.list.eval(pl.element().is_nan().any()).list.first()
            return pl.when(has_nan).then(pl.lit(float("nan"), dtype=found.inner)).otherwise(items.list.max())
        return items.list.max()

    return handler


def _distinct(c: Compiler, node: exp.ArrayDistinct) -> pl.Expr:
    c.allow_args(node, "this")
    found = _list_dtype(c, node.this, "ARRAY_DISTINCT")
    if isinstance(found, pl.List) and found.inner in (pl.Float32(), pl.Float64()):
        raise SqlExpressionError(
            f"ARRAY_DISTINCT of a DOUBLE/FLOAT array is not supported: Spark keeps 0.0 and -0.0 apart, Polars "
            f"merges them (in {c.text!r})"
        )
    return c.compile(node.this).list.unique(maintain_order=True)


NODES: dict[type[exp.Expression], Handler] = {
    exp.ArrayPosition: _position,
    exp.ArrayRemove: _remove,
    exp.ArraySort: _sort,
    exp.ArrayMax: _extreme(True),
    exp.ArrayMin: _extreme(False),
    exp.ArrayDistinct: _distinct,
    exp.ArrayCompact: _compact,
    exp.ArrayToString: _join,
    exp.ArraySlice: _slice,
    exp.RegexpSplit: _split,
    exp.Bracket: _bracket,
    exp.ArraySize: _size,
    exp.ArrayContains: _contains,
    exp.Array: _array,
    **array_building.NODES,
}
NAMES: dict[str, Handler] = {"CARDINALITY": _size, "GET": _get, **array_building.NAMES}
SUPPORTED = ("ARRAY", "ARRAY_COMPACT", "ARRAY_CONTAINS", "ARRAY_DISTINCT", "ARRAY_JOIN", "ARRAY_MAX", "ARRAY_MIN",
             "ARRAY_POSITION", "ARRAY_REMOVE", "ARRAY_SIZE", "CARDINALITY", "ELEMENT_AT", "GET", "SIZE", "SLICE",
             "SORT_ARRAY", "SPLIT", "TRY_ELEMENT_AT", *array_building.SUPPORTED)  # fmt: skip
