"""Spark's Java datetime patterns (``yyyy-MM-dd HH:mm:ss``) as chrono formats for Polars.

Only the pattern letters with an exact chrono counterpart are accepted; any other letter is
rejected with the list of supported ones, never approximated. For parsing, a regular expression of
the pattern's field widths guards chrono, which would accept ``2024-2-9`` for ``yyyy-MM-dd`` where
Spark's strict parser returns NULL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.dialects.spark import Spark

from datacoolie_core.sql.parse import SqlExpressionError

# pattern letters -> (chrono format, regex of the text when parsing); the clock fields' regexes hold
# their ranges, as java.time's strict resolver does: chrono reads 23:59:60 as a leap second and Polars
# rolls it over to the next day
_FIELDS: dict[str, tuple[str, str]] = {
    "yyyy": ("%Y", r"\d{4}"),
    "yy": ("%y", r"\d{2}"),
    "MM": ("%m", r"\d{2}"),
    "M": ("%-m", r"\d{1,2}"),
    "MMM": ("%b", r"[A-Za-z]{3}"),
    "MMMM": ("%B", r"[A-Za-z]+"),
    "dd": ("%d", r"\d{2}"),
    "d": ("%-d", r"\d{1,2}"),
    "HH": ("%H", r"(?:[01]\d|2[0-3])"),
    "H": ("%-H", r"(?:[01]?\d|2[0-3])"),
    "hh": ("%I", r"(?:0[1-9]|1[0-2])"),
    "h": ("%-I", r"(?:0?[1-9]|1[0-2])"),
    "mm": ("%M", r"[0-5]\d"),
    "m": ("%-M", r"[0-5]?\d"),
    "ss": ("%S", r"[0-5]\d"),
    "s": ("%-S", r"[0-5]?\d"),
    "SSS": ("%3f", r"\d{3}"),
    "SSSSSS": ("%6f", r"\d{6}"),
    "a": ("%p", r"(?:AM|PM)"),
    "E": ("%a", r"[A-Za-z]{3}"),
    "EE": ("%a", r"[A-Za-z]{3}"),
    "EEE": ("%a", r"[A-Za-z]{3}"),
    "EEEE": ("%A", r"[A-Za-z]+"),
    "DDD": ("%j", r"\d{3}"),
    "D": ("%-j", r"\d{1,3}"),
}
# zone fields print constants: the session time zone is UTC (Java prints 'Z' for a zero offset)
_ZONES = {"X": "Z", "XX": "Z", "XXX": "Z", "x": "+00", "xx": "+0000", "xxx": "+00:00", "Z": "+0000", "ZZ": "+0000",
          "ZZZ": "+0000", "ZZZZZ": "Z", "z": "UTC", "VV": "UTC", "O": "GMT"}  # fmt: skip
_TOKEN = re.compile(r"'[^']*'|([A-Za-z])\1*|.", re.DOTALL)
SUPPORTED_LETTERS = ", ".join(sorted([*_FIELDS, *_ZONES]))


@dataclass(frozen=True)
class Pattern:
    """A Java pattern translated: ``chrono`` for Polars, ``regex`` the text it parses (anchored)."""

    java: str
    chrono: str
    regex: str
    has_time: bool
    has_zone: bool = False


def java_pattern(node: exp.Expression, key: str = "format") -> str | None:
    """The Java pattern of a function node as the user wrote it (sqlglot stores it translated)."""
    found = node.args.get(key)
    if found is None:
        return None
    if not (isinstance(found, exp.Literal) and found.is_string):
        raise SqlExpressionError(f"a datetime pattern must be a string literal, got {found.sql()!r}")
    text = Spark().generator().format_time(node)
    # the Spark generator escapes the quotes in the pattern literal with a backslash
    return text[1:-1].replace("\\'", "'") if text else None


def translate(java: str) -> Pattern:
    """The chrono format and parse regex of a Java datetime pattern.

    Raises:
        SqlExpressionError: a pattern letter (or width) without an exact chrono counterpart.
    """
    chrono, regex, has_time, has_zone = [], [], False, False
    for match in _TOKEN.finditer(java):
        token = match.group(0)
        if token.startswith("'"):
            literal = token[1:-1] if token != "''" else "'"
            chrono.append(literal.replace("%", "%%"))
            regex.append(re.escape(literal))
        elif token in _ZONES:
            chrono.append(_ZONES[token])
            regex.append(re.escape(_ZONES[token]))
            has_zone = True
        elif token[0].isalpha():
            if token not in _FIELDS:
                raise SqlExpressionError(
                    f"datetime pattern {java!r}: '{token}' is not supported (supported: {SUPPORTED_LETTERS})"
                )
            chrono.append(_FIELDS[token][0])
            regex.append(_FIELDS[token][1])
            has_time = has_time or token[0] in "HhmsSa"
        else:
            chrono.append(token.replace("%", "%%"))
            regex.append(re.escape(token))
    return Pattern(java, "".join(chrono), "^" + "".join(regex) + "$", has_time, has_zone)
