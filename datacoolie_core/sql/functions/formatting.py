"""Spark SQL FORMAT_STRING/PRINTF: Java's ``String.format`` for the ``%s``, ``%S``, ``%d``, ``%%`` and
``%n`` conversions with a width and the ``-``/``0`` flags. Other conversions (``%f``, ``%x``,
precisions, argument indexes) are rejected at load rather than approximated."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions.registry import Handler, args, dtype, literal, text
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

_ASTRAL = r"[\x{10000}-\x{10FFFF}]"
_SPEC = re.compile(r"%(-?)(0?)(\d*)([sSdn%])|%")


def _format_string(c: Compiler, node: exp.Expression) -> pl.Expr:
    pattern_node, *values = args(node)
    pattern = literal(c, pattern_node, "the FORMAT_STRING format")
    if pattern is None:
        return pl.lit(None, dtype=pl.String)
    pieces: list[pl.Expr] = []
    position, used = 0, 0
    for match in _SPEC.finditer(str(pattern)):
        pieces.append(pl.lit(str(pattern)[position : match.start()]))
        position = match.end()
        left, zero, width, conversion = match.groups()
        if conversion is None:
            raise SqlExpressionError(f"format {pattern!r}: only %s, %S, %d, %% and %n are supported (in {c.text!r})")
        if conversion in "%n":
            pieces.append(pl.lit("%" if conversion == "%" else "\n"))
            continue
        if used >= len(values):
            raise SqlExpressionError(f"format {pattern!r} needs more arguments (in {c.text!r})")
        pieces.append(_piece(c, values[used], conversion, left == "-", zero == "0", int(width or 0), str(pattern)))
        used += 1
    pieces.append(pl.lit(str(pattern)[position:]))
    return pl.concat_str(pieces)


def _piece(
    c: Compiler, node: exp.Expression, conversion: str, left: bool, zero: bool, width: int, pattern: str
) -> pl.Expr:
    found = dtype(c, node)
    if ((left or zero) and not width) or (left and zero) or (zero and conversion != "d"):
        raise SqlExpressionError(f"format {pattern!r}: Java refuses these flags (in {c.text!r})")
    if conversion == "d":
        if found is not None and not found.is_integer() and found != pl.Null:
            raise SqlExpressionError(f"format {pattern!r}: %d needs an integer, got {found} (in {c.text!r})")
        value = c.compile(node).cast(pl.Int128)
        digits = value.abs().cast(pl.String)
        negative = pl.concat_str([pl.lit("-"), digits.str.pad_start(width - 1, "0")])
        padded = pl.when(value < 0).then(negative).otherwise(digits.str.pad_start(width, "0"))
        rendered: pl.Expr = padded if zero else value.cast(pl.String)
    else:
        if found is not None and found.is_temporal():
            raise SqlExpressionError(f"format {pattern!r}: %s of a date or timestamp is not supported (in {c.text!r})")
        rendered = text(c, node)
        rendered = rendered.str.to_uppercase() if conversion == "S" else rendered
    # Java prints a NULL argument as "null" (upper case for %S)
    rendered = rendered.fill_null("NULL" if conversion == "S" else "null")
    if not width:
        return rendered
    # Java's width counts UTF-16 units: a character outside the BMP (an emoji) takes two
    units = rendered.str.len_chars().cast(pl.Int64) + rendered.str.count_matches(_ASTRAL).cast(pl.Int64)
    padding = pl.lit(" " * width).str.slice(0, pl.max_horizontal(pl.lit(width) - units, pl.lit(0)))
    return pl.concat_str([rendered, padding] if left else [padding, rendered])


NAMES: dict[str, Handler] = {"PRINTF": _format_string}
NODES: dict[type[exp.Expression], Handler] = {exp.Format: _format_string}
SUPPORTED = ("FORMAT_STRING", "PRINTF")
