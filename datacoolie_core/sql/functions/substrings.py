"""Spark SQL functions that find or cut parts of strings, with Spark's 1-based, signed positions."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions.registry import Handler, arity, literal, number, text
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

_NULL = pl.lit(None, dtype=pl.String)
_MAX_INT = 2**31 - 1


def substring_sql(value: pl.Expr, pos: pl.Expr, length: pl.Expr | None) -> pl.Expr:
    """Spark's ``UTF8String.substringSQL``: 1-based ``pos``, 0 = 1, negative counts from the end."""
    size = value.str.len_chars().cast(pl.Int64)
    pos = pos.cast(pl.Int64)
    start = pl.when(pos > 0).then(pos - 1).when(pos < 0).then(size + pos).otherwise(0)
    end = start + (length.cast(pl.Int64) if length is not None else pl.lit(_MAX_INT, dtype=pl.Int64))
    first = pl.max_horizontal(start, pl.lit(0, dtype=pl.Int64))
    cut = (
        pl.when(first >= end)
        .then(pl.lit(""))
        .otherwise(value.str.slice(first, pl.max_horizontal(end - first, pl.lit(0, dtype=pl.Int64))))
    )
    missing = value.is_null() | pos.is_null() | (length.is_null() if length is not None else pl.lit(False))
    return pl.when(missing).then(_NULL).otherwise(cut)


def _substring(c: Compiler, node: exp.Substring) -> pl.Expr:
    length = node.args.get("length")
    return substring_sql(
        text(c, node.this),
        number(c, node.args["start"], "INT"),
        number(c, length, "INT") if length is not None else None,
    )


def _position(c: Compiler, node: exp.StrPosition) -> pl.Expr:
    # LOCATE(sub, s[, start]) / INSTR(s, sub) / POSITION(sub IN s): 1-based, 0 when absent
    sub = literal(c, node.args.get("substr"), "the string searched for")
    start = literal(c, node.args["position"], "LOCATE start") if node.args.get("position") else 1
    value = text(c, node.this)
    if start is None:
        return pl.lit(0, dtype=pl.Int32)  # Spark (like Hive): a NULL start gives 0, whatever the string
    if sub is None:
        return pl.lit(None, dtype=pl.Int32)
    start = int(start)
    if start < 1:
        return pl.when(value.is_null()).then(None).otherwise(pl.lit(0)).cast(pl.Int32)
    if sub == "":
        return pl.when(value.is_null()).then(None).otherwise(pl.lit(1)).cast(pl.Int32)
    rest = value.str.slice(start - 1)
    before = rest.str.splitn(str(sub), 2).struct.field("field_0").str.len_chars().cast(pl.Int64)
    found = pl.when(rest.str.contains(str(sub), literal=True)).then(before + start).otherwise(0)
    return pl.when(value.is_null()).then(None).otherwise(found).cast(pl.Int32)


def _split_part(c: Compiler, node: exp.SplitPart) -> pl.Expr:
    delimiter = literal(c, node.args.get("delimiter"), "SPLIT_PART delimiter")
    part = literal(c, node.args.get("part_index"), "SPLIT_PART part")
    value = text(c, node.this)
    if delimiter is None or part is None:
        return _NULL
    if int(part) == 0:
        raise SqlExpressionError(f"SPLIT_PART part must not be 0 (Spark fails on it) (in {c.text!r})")
    parts = value.str.split(str(delimiter)) if delimiter != "" else pl.concat_list([value])
    index = int(part) - 1 if int(part) > 0 else int(part)
    picked = parts.list.get(index, null_on_oob=True).fill_null("")
    return pl.when(value.is_null()).then(_NULL).otherwise(picked)


def _substring_index(c: Compiler, node: exp.SubstringIndex) -> pl.Expr:
    delimiter = literal(c, node.args.get("delimiter"), "SUBSTRING_INDEX delimiter")
    count = literal(c, node.args.get("count"), "SUBSTRING_INDEX count")
    value = text(c, node.this)
    if delimiter is None or count is None:
        return _NULL
    count = int(count)
    if count == 0 or delimiter == "":
        return pl.when(value.is_null()).then(_NULL).otherwise(pl.lit(""))
    parts = value.str.split(str(delimiter))
    kept = parts.list.head(count) if count > 0 else parts.list.tail(-count)
    return kept.list.join(str(delimiter))


def _overlay(c: Compiler, node: exp.Overlay) -> pl.Expr:
    value = text(c, node.this)
    replacement = text(c, node.args["expression"])
    pos = number(c, node.args["from_"], "INT").cast(pl.Int64)
    given = node.args.get("for_")
    size = number(c, given, "INT").cast(pl.Int64) if given is not None else pl.lit(-1, dtype=pl.Int64)
    length = pl.when(size >= 0).then(size).otherwise(replacement.str.len_chars().cast(pl.Int64))
    head = substring_sql(value, pl.lit(1, dtype=pl.Int64), pos - 1)
    tail = substring_sql(value, pos + length, None)
    return pl.concat_str([head, replacement, tail])


def _find_in_set(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    needle, haystack = arity(c, node, 2)
    items = literal(c, haystack, "FIND_IN_SET list")
    value = text(c, needle)
    if items is None:
        return pl.lit(None, dtype=pl.Int32)
    positions: dict[str, int] = {}
    for k, item in enumerate(str(items).split(","), start=1):
        positions.setdefault(item, k)
    found = value.replace_strict(positions, default=0, return_dtype=pl.Int32)
    return (
        pl.when(value.is_null()).then(None)
        .when(value.str.contains(",", literal=True)).then(pl.lit(0, dtype=pl.Int32))
        .otherwise(found)
    )  # fmt: skip


def _ascii(c: Compiler, node: exp.Ascii) -> pl.Expr:
    # the code point of the first character, decoded from its UTF-8 bytes; '' gives 0
    first = text(c, node.this).str.slice(0, 1)
    raw = first.cast(pl.Binary)
    size = first.str.len_bytes()
    byte = [raw.bin.get(k, null_on_oob=True).cast(pl.Int32) for k in range(4)]
    tail = [(b % 64) for b in byte[1:]]
    code = (
        pl.when(size == 0).then(0)
        .when(size == 1).then(byte[0])
        .when(size == 2).then((byte[0] % 32) * 64 + tail[0])
        .when(size == 3).then((byte[0] % 16) * 4096 + tail[0] * 64 + tail[1])
        .otherwise((byte[0] % 8) * 262144 + tail[0] * 4096 + tail[1] * 64 + tail[2])
    )  # fmt: skip
    return pl.when(first.is_null()).then(None).otherwise(code).cast(pl.Int32)


NODES: dict[type[exp.Expression], Handler] = {
    exp.Substring: _substring,
    exp.StrPosition: _position,
    exp.SplitPart: _split_part,
    exp.SubstringIndex: _substring_index,
    exp.Overlay: _overlay,
    exp.Ascii: _ascii,
}
NAMES: dict[str, Handler] = {"FIND_IN_SET": _find_in_set}
SUPPORTED = ("ASCII", "FIND_IN_SET", "INSTR", "LOCATE", "OVERLAY", "POSITION", "SPLIT_PART", "SUBSTR", "SUBSTRING",
             "SUBSTRING_INDEX")  # fmt: skip
