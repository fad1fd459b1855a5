"""Which reader a CSV file needs: Polars' own CSV scan when it reads the file as Spark does, else
the exact tokenizer of :mod:`csv_text`.

A look at the file mapped in memory (``mmap.find`` and one automaton, GB/s, no copy) establishes facts
about it; :func:`plan_csv` routes a file to ``pl.scan_csv`` only when none of Spark's tokenizing rules
can apply to it, so both read the same rows:

* no quote character in the file: no field is quoted, so escape, ``emptyValue`` and Spark's quote
  rules never apply (an escape outside quotes is plain text to both); or only clean quoted fields
  and no ``nullValue`` (:func:`_quotes_reason`, one more Polars pass), read with the quote;
* no line starting with a byte up to the space: no empty or whitespace-only line for Spark to skip
  (Polars would read a row from a blank one), and no leading blanks (read as is by both, but cheaper
  to route than to prove);
* ``encoding`` UTF-8 and no ``\\r`` outside ``\\r\\n``: Polars splits lines as Spark does, and
  its lossy decoding replaces bad UTF-8 with U+FFFD as Spark does (but for an encoded surrogate);
* no ``comment`` character in the file, a one-byte ASCII separator, mode PERMISSIVE (short rows padded
  with nulls, long ones cut: ``truncate_ragged_lines``), no ``multiLine`` and no white-space trimming.

The header (names, width) is read from :func:`first_line` by the exact tokenizer in :mod:`csv_text`;
an unquoted empty field and one equal to ``nullValue`` are null in both readers (``null_values``).
Anything else takes the exact path.
"""

from __future__ import annotations

import codecs
import mmap
import os
import re
from dataclasses import dataclass
from typing import Literal

import polars as pl

from datacoolie_core.errors import SourceError
from datacoolie_core.sources.options import CsvOptions

Reader = Literal["native", "exact"]
_BLANK_START = re.compile(rb"\n[\x00-\x20]")
"""A line starting with univocity's whitespace: maybe blank or whitespace-only, which Spark skips."""
_LONE_CR = re.compile(rb"\r(?!\n)")
ENCODED_SURROGATE = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]?")
"""A UTF-16 surrogate encoded as UTF-8 (invalid), whole or cut after two bytes: Java replaces it with
one U+FFFD, Python and Polars with one per byte."""


@dataclass(frozen=True)
class FileFacts:
    """What a look at a file's bytes found."""

    lone_cr: bool
    has_quote: bool
    doubled_quote: bool
    """Two quotes in a row: a quoted empty or a doubled quote, never in a clean file."""
    has_escape: bool
    """Looked for only when the quote occurs (an escape matters inside quotes only)."""
    has_comment: bool
    has_surrogate: bool
    """An :data:`ENCODED_SURROGATE` occurs."""
    blank_start: bool
    """Some line (or the file, after a BOM) starts with a byte up to the space, or the file is empty."""


@dataclass(frozen=True)
class CsvPlan:
    """The reader a file takes and, for the exact one, why."""

    reader: Reader
    reason: str = ""
    quoted: bool = False
    """The native scan honours the quote (every quoted field in the file is a clean one)."""


def plan_csv(path: str, options: CsvOptions, *, label: str) -> tuple[CsvPlan, FileFacts | None]:
    """The reader for ``path`` and the facts it was decided on (``None`` when the options decide)."""
    reason = _options_reason(options)
    if reason:
        return CsvPlan("exact", reason), None
    facts = scan_facts(path, options, label)
    reason = _facts_reason(facts)
    if reason or not facts.has_quote:
        return CsvPlan("exact" if reason else "native", reason), facts
    reason = "a doubled quote" if facts.doubled_quote else _quotes_reason(path, options)
    return CsvPlan("exact", reason) if reason else CsvPlan("native", quoted=True), facts


def _quotes_reason(path: str, o: CsvOptions) -> str:
    """Why the quotes in ``path`` could read differently in Polars (RFC 4180) and Spark, or ``""``.

    They read alike when every line is fields that are either unquoted without the quote, or a
    quote, one or more characters that are neither quote, escape nor line break, and a quote right
    before the separator or the line end: no escapes, doubled quotes, quoted empties, blanks or text
    around quotes, unclosed quotes or quoted line breaks, where the two differ.
    """
    if o.null_value:
        return "nullValue with quotes"
    q, e, sep = rust_literal(o.quote), rust_literal(o.escape), rust_literal(o.sep)
    field = f"(?:{q}[^{q}{e}\\n]+{q}|[^{q}{sep}\\n]*)"
    clean = pl.col("line").str.contains(f"^{field}(?:{sep}{field})*\\r?$")
    try:
        alike = pl.scan_lines(path, name="line").select(clean.all()).collect().item()
    except pl.exceptions.PolarsError:  # not UTF-8: the exact reader decodes it
        alike = False
    return "" if alike else "a quoted field the readers differ on"


def rust_literal(text: str) -> str:
    """``text`` as a literal in a Rust (Polars) regular expression."""
    return "".join(c if c.isalnum() else f"\\x{{{ord(c):X}}}" for c in text)


def _options_reason(o: CsvOptions) -> str:
    if o.multi_line:
        return "multiLine"
    if codecs.lookup(o.encoding).name != "utf-8":
        return f"encoding {o.encoding}"
    if o.mode != "PERMISSIVE":
        return f"mode {o.mode}"
    if o.ignore_leading_white_space or o.ignore_trailing_white_space:
        return "white-space trimming"
    if len(o.sep) != 1 or not o.sep.isascii() or o.sep in "\r\n" or o.sep in (o.quote, o.comment):
        return f"separator {o.sep!r}"
    return ""


def _facts_reason(f: FileFacts) -> str:
    checks = [(f.lone_cr, "a lone \\r line end"),
              (f.has_comment, "the comment character occurs"), (f.blank_start, "a line starts with a blank"),
              (f.has_surrogate, "an encoded surrogate")]  # fmt: skip
    return next((reason for failed, reason in checks if failed), "")


def scan_facts(path: str, o: CsvOptions, label: str) -> FileFacts:
    """The facts, from the file mapped in memory (no copy: ``find`` and the automaton run on the pages)."""
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size == 0:
                return FileFacts(False, False, False, False, False, False, blank_start=True)
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _facts(data, o)
    except OSError as e:
        raise SourceError(f"{label}: cannot read file '{path}': {e}") from e


def _facts(data: mmap.mmap, o: CsvOptions) -> FileFacts:
    quote, escape, comment = o.quote.encode(), o.escape.encode(), o.comment.encode()
    quoted = bool(quote) and data.find(quote) >= 0
    start = len(codecs.BOM_UTF8) if data[:3] == codecs.BOM_UTF8 else 0
    # a final line break ends the file: nothing follows it for the automaton to match
    blank = data[start : start + 1] <= b" " or _BLANK_START.search(data, start) is not None
    return FileFacts(
        lone_cr=data.find(b"\r") >= 0 and _LONE_CR.search(data) is not None,
        has_quote=quoted,
        doubled_quote=quoted and data.find(quote * 2) >= 0,
        has_escape=quoted and bool(escape) and data.find(escape) >= 0,
        has_comment=bool(comment) and data.find(comment) >= 0,
        has_surrogate=data.find(b"\xed") >= 0 and ENCODED_SURROGATE.search(data) is not None,
        blank_start=blank,
    )


def scan_native(path: str, options: CsvOptions, names: list[str], *, quoted: bool) -> pl.LazyFrame:
    """``path`` through Polars' CSV scan, every column a String named ``names``.

    The first line sets the width (with ``header`` Polars reads it as the header), as in Spark.
    """
    placeholders = [f"_c{i}" for i in range(len(names))]
    scan = pl.scan_csv(
        path, has_header=options.header, new_columns=placeholders, separator=options.sep,
        quote_char=options.quote if quoted else None, null_values=options.null_value or None,
        truncate_ragged_lines=True, infer_schema=False, encoding="utf8-lossy",
    )  # fmt: skip
    return scan.select(pl.col(c).alias(name) for c, name in zip(placeholders, names, strict=True))


def first_line(path: str) -> str:
    """The file's first line (the header or first row: the native scan has no blank or comment lines)."""
    with open(path, "rb") as handle:
        line = handle.readline().removeprefix(codecs.BOM_UTF8).decode(errors="replace")
    return line.removesuffix("\n").removesuffix("\r")
