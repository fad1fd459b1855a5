"""Spark SQL string functions."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions.registry import Handler, unary
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler


def _trim(c: Compiler, node: exp.Trim) -> pl.Expr:
    chars = c.literal_str(node.args["expression"]) if node.args.get("expression") else " "
    position = str(node.args.get("position") or "BOTH").upper()
    value = c.arg(node)
    if position == "LEADING":
        return value.str.strip_chars_start(chars)
    if position == "TRAILING":
        return value.str.strip_chars_end(chars)
    return value.str.strip_chars(chars)


def _substring(c: Compiler, node: exp.Substring) -> pl.Expr:
    start = c.literal_int(node.args.get("start"))
    length = node.args.get("length")
    return c.arg(node).str.slice(max(start - 1, 0), c.literal_int(length) if length is not None else None)


def _pad(c: Compiler, node: exp.Pad) -> pl.Expr:
    fill = c.literal_str(node.args["fill_pattern"]) if node.args.get("fill_pattern") else " "
    if len(fill) != 1:
        raise SqlExpressionError(f"LPAD/RPAD fill must be one character (in {c.text!r})")
    width = c.literal_int(node.args["expression"])
    value = c.arg(node)
    padded = value.str.pad_start(width, fill) if node.args.get("is_left") else value.str.pad_end(width, fill)
    return padded.str.slice(0, width)


def _concat_ws(c: Compiler, node: exp.ConcatWs) -> pl.Expr:
    separator, *parts = node.expressions
    return pl.concat_str([c.compile(p) for p in parts], separator=c.literal_str(separator), ignore_nulls=True)


NODES: dict[type[exp.Expression], Handler] = {
    exp.Upper: unary(lambda a: a.str.to_uppercase()),
    exp.Lower: unary(lambda a: a.str.to_lowercase()),
    exp.Trim: _trim,
    exp.Length: unary(lambda a: a.str.len_chars()),
    exp.Substring: _substring,
    exp.Left: lambda c, n: c.arg(n).str.head(c.literal_int(n.args["expression"])),
    exp.Right: lambda c, n: c.arg(n).str.tail(c.literal_int(n.args["expression"])),
    exp.Concat: lambda c, n: pl.concat_str([c.compile(e) for e in n.expressions]),
    exp.ConcatWs: _concat_ws,
    exp.Pad: _pad,
    exp.RegexpReplace: lambda c, n: c.arg(n).str.replace_all(
        c.literal_str(n.args["expression"]), c.literal_str(n.args["replacement"]) if n.args.get("replacement") else ""
    ),
}
NAMES: dict[str, Handler] = {}
SUPPORTED = ("CONCAT", "CONCAT_WS", "LEFT", "LENGTH", "LOWER", "LPAD", "LTRIM", "REGEXP_REPLACE", "RIGHT", "RPAD",
             "RTRIM", "SUBSTRING", "TRIM", "UPPER")  # fmt: skip
