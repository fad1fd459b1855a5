"""Spark SQL URL_ENCODE and URL_DECODE: ``application/x-www-form-urlencoded`` in UTF-8, as Java's
``URLEncoder``/``URLDecoder`` (a space is ``+``; letters, digits and ``.-*_`` stay as they are)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions.registry import Handler, arity, text

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler


def _encode(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    char = pl.element()
    escaped = char.str.encode("hex").str.to_uppercase().str.replace_all("(..)", "%$1")
    encoded = (
        pl.when(char.str.contains("^[A-Za-z0-9.*_-]$")).then(char)
        .when(char == " ").then(pl.lit("+"))
        .otherwise(escaped)
    )  # fmt: skip
    value = text(c, arity(c, node, 1)[0])
    return value.str.split("").list.eval(encoded).list.join("")


def _decode(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    # as hex bytes: the text before the first '%' is encoded, each later piece starts with its escape
    value = text(c, arity(c, node, 1)[0]).str.replace_all("+", " ", literal=True)
    piece = pl.element()
    escaped = pl.concat_str([piece.str.slice(0, 2), piece.str.slice(2).str.encode("hex")])
    as_hex = pl.when(pl.int_range(pl.len()) == 0).then(piece.str.encode("hex")).otherwise(escaped)
    hexed = value.str.split("%").list.eval(as_hex).list.join("")
    # a malformed escape makes Spark fail the query; here it is NULL
    return hexed.str.decode("hex", strict=False).cast(pl.String, strict=False)


NAMES: dict[str, Handler] = {"URL_ENCODE": _encode, "URL_DECODE": _decode}
SUPPORTED = ("URL_DECODE", "URL_ENCODE")
