"""Spark SQL SOUNDEX and LUHN_CHECK, on ASCII letters and digits as Spark reads them."""

from __future__ import annotations

import string
from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions.registry import Handler, arity, dtype, text
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

# Spark's US English mapping for A..Z; 7 (H, W) is skipped without ending a run of equal codes
_CODES = dict(zip(string.ascii_uppercase, "01230127022455012623017202", strict=True))
_LETTER_CODES = {**_CODES, **{k.lower(): v for k, v in _CODES.items()}}


def _soundex(c: Compiler, node: exp.Soundex) -> pl.Expr:
    found = dtype(c, node.this)
    if found is not None and found not in (pl.String(), pl.Null()):
        raise SqlExpressionError(f"SOUNDEX takes a STRING, got {found} (in {c.text!r})")  # no implicit cast
    value = text(c, node.this)
    first = value.str.slice(0, 1)
    # every byte that is not an ASCII letter counts as a vowel (code 0): it ends a run
    rest = value.str.slice(1).str.replace_all("[^A-Za-z]", "0")
    codes = pl.concat_str([first, rest]).str.replace_many(list(_LETTER_CODES), list(_LETTER_CODES.values()))
    codes = codes.str.replace_all("7", "")
    for digit in "0123456":
        codes = codes.str.replace_all(f"{digit}+", digit)
    # the first letter's own code only suppresses an equal code right after it
    tail = codes.str.slice(1).str.replace_all("0", "").str.head(3).str.pad_end(3, "0")
    coded = pl.concat_str([first.str.to_uppercase(), tail])
    return pl.when(first.str.contains("^[A-Za-z]$")).then(coded).otherwise(value)


def _luhn_check(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    value = text(c, arity(c, node, 1)[0])
    digits = value.str.reverse().str.split("").list.eval(pl.element().cast(pl.Int32, strict=False))
    # every second digit from the right is doubled; a two-digit product counts its digit sum
    doubled = digits.list.eval(pl.element() * (1 + pl.int_range(pl.len()) % 2))
    total = doubled.list.eval(pl.when(pl.element() > 9).then(pl.element() - 9).otherwise(pl.element())).list.sum()
    valid = value.str.contains("^[0-9]+$")
    return pl.when(value.is_null()).then(None).otherwise(valid & (total % 10 == 0))


NODES: dict[type[exp.Expression], Handler] = {exp.Soundex: _soundex}
NAMES: dict[str, Handler] = {"LUHN_CHECK": _luhn_check}
SUPPORTED = ("LUHN_CHECK", "SOUNDEX")
