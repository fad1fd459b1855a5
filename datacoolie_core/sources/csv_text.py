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
import re
from collections.abc import Callable

import polars as pl

from datacoolie_core.errors import SourceError
from datacoolie_core.sources.options import CsvOptions

_WS = "".join(chr(i) for i in range(33))
"""univocity's whitespace: every character up to the space."""
_RUST_WS = r"[\x{0}-\x{20}]*"
_BOM = "\ufeff"
_LINE = "line"
_TOKENS = "__tokens"


def read_csv_strings(path: str, options: CsvOptions, *, label: str) -> pl.LazyFrame | None:
    """The rows of one CSV file, every column a String; ``None`` for a file without a line."""
    lines = _lines(path, options, label)
    first = _collect(lines.head(1), label)
    if first.height == 0:
        return None
    header = _split(first.lazy(), _LINE, options).select(pl.col(_TOKENS).list.eval(_value(pl.element(), options)))
    fields = _collect(header, label)[_TOKENS][0].to_list()
    names = _names(fields) if options.header else [f"_c{i}" for i in range(len(fields))]
    body = lines.slice(1) if options.header else lines
    tokens = _split(body, _LINE, options)
    tokens = _apply_mode(tokens, len(names), options, path, label)
    return tokens.select(_value(pl.col(_TOKENS).list.get(i, null_on_oob=True), options).alias(name) for i, name in enumerate(names))


def _lines(path: str, options: CsvOptions, label: str) -> pl.LazyFrame:
    utf8 = codecs.lookup(options.encoding).name == "utf-8"
    if options.multi_line:
        lines = pl.LazyFrame({_LINE: _records(_text(path, options.encoding, label), options)}, schema={_LINE: pl.String})
    elif utf8 and _is_valid_utf8(path):
        lines = pl.scan_lines(path, name=_LINE)
    else:  # Spark decodes with the charset and replaces undecodable bytes (U+FFFD)
        lines = pl.scan_lines(_text(path, options.encoding, label).encode(), name=_LINE)
    if _starts_with_bom(path):
        lines = lines.with_columns(pl.col(_LINE).str.strip_prefix(_BOM))
    blank = pl.col(_LINE).str.strip_chars(_WS) == ""
    keep = ~blank
    if options.comment:
        keep &= ~pl.col(_LINE).str.starts_with(options.comment)
    return lines.filter(keep)


def _split(lines: pl.LazyFrame, column: str, options: CsvOptions) -> pl.LazyFrame:
    """Each line as a list of raw fields, each still ending in the separator (appended to the line)."""
    return lines.select((pl.col(column) + options.sep).str.extract_all(_field_pattern(options)).alias(_TOKENS))


def _field_pattern(o: CsvOptions) -> str:
    sep = _rx(o.sep)
    raw = f"[^{sep}]*" if len(o.sep) == 1 else "(?s:.*?)"
    plain = f"{raw}{sep}"
    if not o.quote:
        return plain
    lead = _RUST_WS if o.ignore_leading_white_space else ""
    quoted = _quoted(o, _rx)
    return f"{lead}{quoted}[ \\t]*{sep}|{lead}{quoted}{raw}{sep}|{lead}{_rx(o.quote)}(?s:.*)|{plain}"


def _rx(text: str) -> str:
    """``text`` as a literal in a Rust (Polars) regular expression."""
    return "".join(c if c.isalnum() else f"\\x{{{ord(c):X}}}" for c in text)


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


def _value(token: pl.Expr, o: CsvOptions) -> pl.Expr:
    """A raw field (ending in the separator) as the string Spark reads, or null."""
    raw = token.str.strip_suffix(o.sep)
    if o.ignore_leading_white_space:
        raw = raw.str.strip_chars_start(_WS)
    if o.ignore_trailing_white_space:
        raw = raw.str.strip_chars_end(_WS)
    unquoted = pl.when(raw == "").then(None).otherwise(raw)
    if not o.quote:
        return _null_value(unquoted, o)
    lead = _RUST_WS if o.ignore_leading_white_space else ""
    sep, q = _rx(o.sep), _rx(o.quote)
    clean = token.str.extract(f"(?s)^{lead}{_quoted(o, _rx, capture=True)}[ \\t]*{sep}$", 1)
    junk = token.str.contains(f"(?s)^{lead}{_quoted(o, _rx)}")
    unclosed = token.str.extract(f"(?s)^{lead}{q}(.*){sep}$", 1)
    quoted = pl.when(clean.is_not_null()).then(clean).when(junk).then(None).otherwise(unclosed)
    quoted = _unescape(quoted, o)
    quoted = pl.when(quoted == "").then(pl.lit(o.empty_value)).otherwise(quoted)
    return _null_value(pl.when(quoted.is_not_null()).then(quoted).otherwise(unquoted), o)


def _unescape(text: pl.Expr, o: CsvOptions) -> pl.Expr:
    if not o.escape:
        return text
    if o.escape == o.quote:
        return text.str.replace_all(o.quote * 2, o.quote, literal=True)
    return text.str.replace_all(f"{_rx(o.escape)}([{_rx(o.quote)}{_rx(o.escape)}])", "$1")


def _null_value(value: pl.Expr, o: CsvOptions) -> pl.Expr:
    return pl.when(value == o.null_value).then(None).otherwise(value)


def _names(fields: list[str | None]) -> list[str]:
    """Spark's header names: null -> ``_c<i>``, names equal ignoring case get their index appended."""
    names = [f"_c{i}" if name is None else name for i, name in enumerate(fields)]
    lowered = [name.lower() for name in names]
    return [f"{name}{i}" if lowered.count(name.lower()) > 1 else name for i, name in enumerate(names)]


def _apply_mode(tokens: pl.LazyFrame, width: int, o: CsvOptions, path: str, label: str) -> pl.LazyFrame:
    if o.mode == "PERMISSIVE":
        return tokens
    wrong = pl.col(_TOKENS).list.len() != width
    if o.mode == "DROPMALFORMED":
        return tokens.filter(~wrong)
    if _collect(tokens.select(wrong.any()), label).item():
        raise SourceError(
            f"{label}: file '{path}' has a row whose number of fields is not {width} (read option mode FAILFAST); "
            "fix the file, or use mode PERMISSIVE (pad/cut) or DROPMALFORMED (drop such rows)"
        )
    return tokens


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
            return handle.read().decode(encoding, errors="replace")
    except OSError as e:
        raise SourceError(f"{label}: cannot read file '{path}': {e}") from e


def _is_valid_utf8(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            codecs.decode(handle.read(), "utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _starts_with_bom(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(3) == codecs.BOM_UTF8


def _collect(lf: pl.LazyFrame, label: str) -> pl.DataFrame:
    try:
        return lf.collect()
    except (pl.exceptions.PolarsError, OSError) as e:
        raise SourceError(f"{label}: cannot read CSV: {e}; check the file and source.read_options") from e
