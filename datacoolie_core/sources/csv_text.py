"""One CSV file as Spark 3.5 reads it, every column a string (typing is :mod:`csv_types`' job).

Spark splits a file into lines first (``multiLine`` false, its default) and parses each line with
univocity; so does this reader, lazily: ``polars.scan_lines`` and one regular expression that cuts a
line into fields. What Spark does, and so what we do:

* empty and whitespace-only lines are skipped, as are lines starting with ``comment``;
* a field is quoted only when ``quote`` is its first character; inside it ``escape`` + quote is a
  quote and ``escape`` + ``escape`` an escape (RFC 4180's doubled quote needs ``escape`` = ``"``);
  blanks after the closing quote are dropped; a quoted field followed by other text is read raw up
  to the next separator, quotes included; an unclosed quote runs to the end of the line;
* an unquoted empty field is null; a quoted empty one is ``emptyValue``; a value equal to
  ``nullValue`` is null;
* ``ignoreLeadingWhiteSpace`` / ``ignoreTrailingWhiteSpace`` trim unquoted values (both off);
* the first line sets the columns: with ``header`` its fields name them (a null name is ``_c<i>``,
  names equal ignoring case get their position appended, ``id0``/``ID1``), else ``_c0``, ``_c1``…;
  a shorter row is padded with nulls, a longer one cut (``mode`` PERMISSIVE), dropped
  (DROPMALFORMED) or an error (FAILFAST).

``multiLine`` true lets a quoted value hold line breaks; that needs the whole file, so it is read
with Python's ``re`` (eagerly, slower) and fed through the same field rules.
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

import polars as pl

from datacoolie_core.errors import SourceError
from datacoolie_core.sources.csv_native import (
    ENCODED_SURROGATE,
    FileFacts,
    first_line,
    plan_csv,
    rust_literal,
    scan_facts,
    scan_native,
)
from datacoolie_core.sources.options import CsvOptions

_WS = "".join(chr(i) for i in range(33))
"""univocity's whitespace: every character up to the space."""
_RUST_WS = r"[\x{0}-\x{20}]*"
_BOM = "\ufeff"
_LINE = "line"
_rx = rust_literal
_TOKENS = "__tokens"


def read_csv_strings(path: str, options: CsvOptions, *, label: str) -> pl.LazyFrame | None:
    """The rows of one CSV file, every column a String; ``None`` for a file without a line.

    Polars' CSV scan reads it when it reads it as Spark does (:func:`plan_csv`), else the tokenizer
    here; the header is read here in both cases.
    """
    plan, facts = plan_csv(path, options, label=label)
    if plan.reader == "native":  # a native file has a first line (no blank start: not empty)
        line, quoted = first_line(path), plan.quoted
    else:
        lines, quoted, options = _lines(path, options, label, facts)
        first = _collect(lines.head(1), label)
        if first.height == 0:
            return None
        line = first[_LINE][0]
    try:
        width, names = _first_line_columns(line, options, quoted)
    except pl.exceptions.PolarsError as e:
        raise SourceError(f"{label}: cannot read CSV: {e}; check the file and source.read_options") from e
    if plan.reader == "native":
        return scan_native(path, options, list(names), quoted=quoted)
    lines = lines.slice(1) if options.header else lines
    lines = _apply_mode(lines, width, options, quoted, path, label)
    return _fields(lines, list(names), options, quoted)


CACHED_LINE_CHARS = 65_536
"""First lines up to this length are cached (a header); a longer one (a file without line breaks) is not kept."""


def _first_line_columns(line: str, options: CsvOptions, quoted: bool) -> tuple[int, tuple[str, ...]]:
    """The width the first line sets and the column names (its fields with ``header``, else ``_c<i>``).

    Cached on the line: the files of one folder mostly share their header, and each uncached header
    costs two Polars queries (~2 ms) per file.
    """
    if len(line) > CACHED_LINE_CHARS:
        return _columns_of_line(line, options, quoted)
    return _cached_columns_of_line(line, options, quoted)


def _columns_of_line(line: str, options: CsvOptions, quoted: bool) -> tuple[int, tuple[str, ...]]:
    first = pl.LazyFrame({_LINE: [line]}, schema={_LINE: pl.String})
    width = _tokens(first, options, quoted).collect()[_TOKENS][0].len()
    placeholders = [f"_c{i}" for i in range(width)]
    if not options.header:
        return width, tuple(placeholders)
    return width, tuple(_names(list(_fields(first, placeholders, options, quoted).collect().row(0))))


_cached_columns_of_line = functools.lru_cache(maxsize=256)(_columns_of_line)


def _fields(lines: pl.LazyFrame, names: list[str], o: CsvOptions, quoted: bool) -> pl.LazyFrame:
    """The first ``len(names)`` fields of each line as columns ``names`` (null past a line's end)."""
    decode = _value if quoted else _plain
    raw = [f"_c{i}" for i in range(len(names))]
    # the raw fields become columns first, so the decoding below does not re-extract them per use
    tokens = _tokens(lines, o, quoted).select(
        pl.col(_TOKENS).list.get(i, null_on_oob=True).alias(c) for i, c in enumerate(raw)
    )
    return tokens.select(decode(pl.col(c), o).alias(name) for c, name in zip(raw, names, strict=True))


def _tokens(lines: pl.LazyFrame, o: CsvOptions, quoted: bool) -> pl.LazyFrame:
    """Each line as a list of raw fields: split on ``sep`` when no field can be quoted, else cut by
    the field expression (each field then still ends in the separator, appended to the line)."""
    if not quoted:
        return lines.select(pl.col(_LINE).str.split(o.sep).alias(_TOKENS))
    return lines.select((pl.col(_LINE) + o.sep).str.extract_all(_field_pattern(o)).alias(_TOKENS))


def _lines(
    path: str, options: CsvOptions, label: str, facts: FileFacts | None
) -> tuple[pl.LazyFrame, bool, CsvOptions]:
    """The file's non-blank, non-comment lines; whether a field can be quoted (the quote occurs); the
    options for this file (``escape`` off when it never occurs: the same result, a cheaper read)."""
    if options.multi_line:
        text = _text(path, options.encoding, label)
        records = _records(text, options)
        lines = pl.LazyFrame({_LINE: records}, schema={_LINE: pl.String})
        quoted = bool(options.quote) and options.quote in text
        escaped = bool(options.escape) and options.escape in text
    else:
        look = _inspect(path, options, label, facts)
        # another charset or bad UTF-8: Spark decodes with the charset, undecodable bytes become U+FFFD
        lines = pl.scan_lines(path if look.text is None else look.text.encode(), name=_LINE)
        quoted, escaped = look.has_quote, look.has_escape
    lines = lines.with_columns(pl.col(_LINE).str.strip_prefix(_BOM)) if _starts_with_bom(path) else lines
    keep = pl.col(_LINE).str.strip_chars(_WS) != ""
    if options.comment:
        keep &= ~pl.col(_LINE).str.starts_with(options.comment)
    if not escaped and options.escape != options.quote:
        options = replace(options, escape="")
    return lines.filter(keep), quoted, options


def _field_pattern(o: CsvOptions) -> str:
    sep = _rx(o.sep)
    raw = f"[^{sep}]*" if len(o.sep) == 1 else "(?s:.*?)"
    plain = f"{raw}{sep}"
    if not o.quote:
        return plain
    lead = _RUST_WS if o.ignore_leading_white_space else ""
    quoted = _quoted(o, _rx)
    return f"{lead}{quoted}[ \\t]*{sep}|{lead}{quoted}{raw}{sep}|{lead}{_rx(o.quote)}(?s:.*)|{plain}"


def _quoted(o: CsvOptions, esc: Callable[[str], str], *, capture: bool = False) -> str:
    q, e = esc(o.quote), esc(o.escape)
    if not o.escape:
        inner = f"[^{q}]"
    elif o.escape == o.quote:
        inner = f"[^{q}]|{q}{q}"
    else:
        inner = f"[^{q}{e}]|{e}(?s:.)"
    body = f"((?:{inner})*)" if capture else f"(?:{inner})*"
    return f"{q}{body}{q}"


def _plain(token: pl.Expr, o: CsvOptions) -> pl.Expr:
    """An unquoted field as Spark reads it: trimmed if asked, empty -> null, ``nullValue`` -> null."""
    if o.ignore_leading_white_space:
        token = token.str.strip_chars_start(_WS)
    if o.ignore_trailing_white_space:
        token = token.str.strip_chars_end(_WS)
    return _null_value(pl.when(token == "").then(None).otherwise(token), o)


def _value(token: pl.Expr, o: CsvOptions) -> pl.Expr:
    """A raw field (ending in the separator) as the string Spark reads, or null."""
    body = token.str.strip_suffix(o.sep)
    start = body.str.strip_chars_start(_WS) if o.ignore_leading_white_space else body
    opens = start.str.starts_with(o.quote)
    # the quote handling runs on the fields that open with a quote only (null elsewhere: cheap), and
    # with regular expressions without capture groups, which Polars runs as fast automata
    lead = _RUST_WS if o.ignore_leading_white_space else ""
    candidate = pl.when(opens).then(token)
    clean = candidate.str.contains(f"(?s)^{lead}{_quoted(o, _rx)}[ \\t]*{_rx(o.sep)}$")
    junk = candidate.str.contains(f"(?s)^{lead}{_quoted(o, _rx)}")
    opened = pl.when(opens).then(start)
    closed = pl.when(clean).then(opened).str.strip_chars_end(" \t").str.strip_suffix(o.quote)
    inside = pl.coalesce(closed, pl.when(~junk).then(opened)).str.strip_prefix(o.quote)  # unclosed: to the end
    quoted = _unescape(inside, o)
    quoted = pl.when(quoted == "").then(pl.lit(o.empty_value)).otherwise(quoted)
    return pl.when(inside.is_not_null()).then(_null_value(quoted, o)).otherwise(_plain(body, o))


def _unescape(text: pl.Expr, o: CsvOptions) -> pl.Expr:
    if not o.escape:
        return text
    if o.escape == o.quote:
        return text.str.replace_all(o.quote * 2, o.quote, literal=True)
    # left to right, escape + escape pairs first: the same pairing as the field expression's
    placeholder = "\x00"
    text = text.str.replace_all(o.escape * 2, placeholder, literal=True)
    text = text.str.replace_all(o.escape + o.quote, o.quote, literal=True)
    return text.str.replace_all(placeholder, o.escape, literal=True)


def _null_value(value: pl.Expr, o: CsvOptions) -> pl.Expr:
    return pl.when(value == o.null_value).then(None).otherwise(value)


def _names(fields: list[str | None]) -> list[str]:
    """Spark's header names: null -> ``_c<i>``, names equal ignoring case get their index appended."""
    names = [f"_c{i}" if name is None else name for i, name in enumerate(fields)]
    lowered = [name.lower() for name in names]
    return [f"{name}{i}" if lowered.count(name.lower()) > 1 else name for i, name in enumerate(names)]


def _apply_mode(lines: pl.LazyFrame, width: int, o: CsvOptions, quoted: bool, path: str, label: str) -> pl.LazyFrame:
    if o.mode == "PERMISSIVE":
        return lines
    wrong = _token_count(o, quoted) != width
    if o.mode == "DROPMALFORMED":
        return lines.filter(~wrong)
    if _collect(lines.select(wrong.any()), label).item():
        raise SourceError(
            f"{label}: file '{path}' has a row whose number of fields is not {width} (read option mode FAILFAST); "
            "fix the file, or use mode PERMISSIVE (pad/cut) or DROPMALFORMED (drop such rows)"
        )
    return lines


def _token_count(o: CsvOptions, quoted: bool) -> pl.Expr:
    if not quoted:
        return pl.col(_LINE).str.count_matches(o.sep, literal=True) + 1
    return (pl.col(_LINE) + o.sep).str.count_matches(_field_pattern(o))


def _records(text: str, o: CsvOptions) -> list[str]:
    """multiLine: the records of ``text`` (quoted values may span lines), each re-joined as one line."""
    end = r"\r\n|\n|\r"
    lead = r"[\x00-\x20]*" if o.ignore_leading_white_space else ""
    stop = f"[^{re.escape(o.sep[0])}\\r\\n]*" if len(o.sep) == 1 else r"[^\r\n]*?"
    alternatives = [stop]
    if o.quote:
        quoted = _quoted(o, re.escape)
        alternatives = [f"{lead}{quoted}[ \\t]*(?={re.escape(o.sep)}|{end}|$)", f"{lead}{quoted}{stop}",
                        f"{lead}{re.escape(o.quote)}(?s:.*)", stop]  # fmt: skip
    field = re.compile(f"({'|'.join(alternatives)})({re.escape(o.sep)}|{end}|$)")
    records: list[str] = []
    current: list[str] = []
    position = 0
    while position < len(text):
        match = field.match(text, position)
        if match is None:  # cannot happen: the last alternative matches anything up to a stop
            break
        current.append(match.group(1))
        position = match.end()
        if match.group(2) != o.sep:
            records.append(o.sep.join(current))
            current = []
    if current:
        records.append(o.sep.join(current))
    return records


def _text(path: str, encoding: str, label: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        if codecs.lookup(encoding).name == "utf-8":  # Java replaces an encoded surrogate with one U+FFFD
            data = ENCODED_SURROGATE.sub("\ufffd".encode(), data)
        return data.decode(encoding, errors="replace")
    except OSError as e:
        raise SourceError(f"{label}: cannot read file '{path}': {e}") from e


@dataclass(frozen=True)
class _Look:
    text: str | None
    """The decoded text when Polars cannot read the file's bytes itself (another charset, bad UTF-8)."""
    has_quote: bool
    has_escape: bool


def _inspect(path: str, o: CsvOptions, label: str, facts: FileFacts | None) -> _Look:
    """Valid UTF-8 without lone ``\\r`` line ends is read by Polars as is; else the decoded text."""
    if codecs.lookup(o.encoding).name != "utf-8":
        return _decoded(path, o, label)
    facts = facts or scan_facts(path, o, label)
    if facts.lone_cr or not _valid_utf8(path, label):
        return _decoded(path, o, label)
    return _Look(None, facts.has_quote, facts.has_escape)


def _valid_utf8(path: str, label: str) -> bool:
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 24):
                decoder.decode(chunk)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    except OSError as e:
        raise SourceError(f"{label}: cannot read file '{path}': {e}") from e
    return True


def _decoded(path: str, o: CsvOptions, label: str) -> _Look:
    # Spark (Hadoop's line reader) also ends a line at a lone \r; Polars splits at \n only
    text = re.sub("\r(?!\n)", "\n", _text(path, o.encoding, label))
    return _Look(text, bool(o.quote) and o.quote in text, bool(o.escape) and o.escape in text)


def _starts_with_bom(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(3) == codecs.BOM_UTF8


def _collect(lf: pl.LazyFrame, label: str) -> pl.DataFrame:
    try:
        return lf.collect()
    except (pl.exceptions.PolarsError, OSError) as e:
        raise SourceError(f"{label}: cannot read CSV: {e}; check the file and source.read_options") from e
