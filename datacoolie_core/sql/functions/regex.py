"""Spark SQL regular-expression functions, with Java's regex syntax translated for Polars (Rust).

Java and Rust agree on most syntax; where they differ in meaning the pattern is rewritten so the
match is Java's: ``\\d \\w \\s`` are ASCII-only in Java (Unicode in Rust), ``.`` does not match
``\\r`` or other line terminators in Java, ``\\p{Alpha}``-style POSIX classes are ASCII. Java features
Rust lacks (look-around, back-references, possessive quantifiers) are rejected when the expression
is compiled, with the pattern in the message.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions.registry import Handler, arity, literal, text
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

_CLASSES = {"d": "digit", "w": "word", "s": "space"}
_POSIX = {"Lower": "lower", "Upper": "upper", "ASCII": "ascii", "Alpha": "alpha", "Digit": "digit",
          "Alnum": "alnum", "Punct": "punct", "Graph": "graph", "Print": "print", "Blank": "blank",
          "Cntrl": "cntrl", "XDigit": "xdigit", "Space": "space"}  # fmt: skip
_DOT = r"[^\n\r\x{85}\x{2028}\x{2029}]"
_NULL = pl.lit(None, dtype=pl.String)
_ASTRAL = r"[\x{10000}-\x{10FFFF}]"
_END = r"(?:\r\n|[\n\r\x{85}\x{2028}\x{2029}])?\z"


def java_regex(pattern: str, *, final_break: bool = False) -> str:
    """A Java regex rewritten for Rust's engine with Java's meaning.

    Java's ``$`` also matches before a line break that ends the text. With ``final_break`` the
    rewritten ``$`` may consume that break, which keeps a match's existence and start exact (RLIKE,
    REGEXP_COUNT, REGEXP_INSTR); otherwise ``$`` matches only at the very end.

    Raises:
        SqlExpressionError: a construct without a faithful Rust counterpart, or an invalid pattern.
    """
    out, depth, k = [], 0, 0
    dotall = pattern.startswith("(?s)")
    while k < len(pattern):
        char = pattern[k]
        if char == "\\" and k + 1 < len(pattern):
            rewritten, used = _escape(pattern, k, depth > 0)
            out.append(rewritten)
            k += used
            continue
        if char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
        elif char == "." and not depth and not dotall:
            char = _DOT
        elif char == "$" and not depth and final_break:
            char = _END
        out.append(char)
        k += 1
    rust = "".join(out)
    flags = "".join(re.findall(r"\(\?([a-zA-Z-]*)[:)]", pattern[4:] if dotall else pattern))
    if set(flags) - {"i"} or ("i" in flags and not pattern.isascii()):
        # Java's (?m) and (?i) on non-ASCII letters mean something else in Rust
        raise SqlExpressionError(f"regex {pattern!r}: only a leading (?s) and (?i) with ASCII text are supported")
    try:
        pl.Series([""]).str.contains(rust)
    except pl.exceptions.PolarsError as e:
        raise SqlExpressionError(f"regex {pattern!r} is not supported: {str(e).splitlines()[0]}") from None
    return rust


def _escape(pattern: str, k: int, in_class: bool) -> tuple[str, int]:
    """The Rust form of the escape at ``pattern[k]`` and how many characters it spans."""
    letter = pattern[k + 1]
    if letter.lower() in _CLASSES:
        name = ("^" if letter.isupper() else "") + _CLASSES[letter.lower()]
        return (f"[:{name}:]" if in_class else f"[[:{name}:]]"), 2
    if letter in "pP":
        found = re.match(r"\{(\w+)\}", pattern[k + 2 :])
        if found is None:
            return pattern[k : k + 3], 3
        name = found.group(1)
        if name in _POSIX:
            posix = ("^" if letter == "P" else "") + _POSIX[name]
            return (f"[:{posix}:]" if in_class else f"[[:{posix}:]]"), 2 + len(found.group(0))
        if name.startswith(("Is", "In", "java")):
            raise SqlExpressionError(f"regex {pattern!r}: \\{letter}{{{name}}} is not supported")
        return pattern[k : k + 2 + len(found.group(0))], 2 + len(found.group(0))
    if letter in "QEZGhHvVRX" or (letter.isdigit() and letter != "0"):
        raise SqlExpressionError(f"regex {pattern!r}: '\\{letter}' is not supported")
    return pattern[k : k + 2], 2


def java_replacement(replacement: str, groups: int) -> str:
    """A Java ``Matcher.replaceAll`` replacement (``$1``, ``\\$``) in Rust's syntax (``${1}``, ``$$``)."""
    out, k = [], 0
    while k < len(replacement):
        char = replacement[k]
        if char == "\\" and k + 1 < len(replacement):
            out.append("$$" if replacement[k + 1] == "$" else replacement[k + 1])
            k += 2
        elif char == "$":
            digits = re.match(r"\d+", replacement[k + 1 :])
            if digits is None:
                raise SqlExpressionError(f"replacement {replacement!r}: '$' must be followed by a group number")
            number = digits.group(0)
            # Java takes the longest prefix of the digits that names an existing group
            while len(number) > 1 and int(number) > groups:
                number = number[:-1]
            if int(number) > groups:
                raise SqlExpressionError(f"replacement {replacement!r}: there is no group {number}")
            out.append("${" + number + "}")
            k += 1 + len(number)
        else:
            out.append(char)
            k += 1
    return "".join(out)


def _groups(rust: str) -> int:
    return len(pl.select(pl.lit("").str.extract_groups(rust)).to_series().struct.fields)


def _pattern(
    c: Compiler,
    node: exp.Expression | None,
    *,
    repeated: bool = False,
    final_break: bool = False,
    what: str = "REGEXP_REPLACE/REGEXP_COUNT",
) -> str | None:
    pattern = literal(c, node, "the regex")
    if pattern is None:
        return None
    try:
        rust = java_regex(str(pattern), final_break=final_break)
    except SqlExpressionError as e:
        raise SqlExpressionError(f"{e} (in {c.text!r})") from None
    if repeated and not str(pattern).startswith("^") and pl.Series([""]).str.contains(rust).item():
        # Java also finds an empty match right after a match and between UTF-16 surrogates; Rust does not
        raise SqlExpressionError(
            f"regex {pattern!r} can match the empty string, which {what} repeat differently "
            f"in Spark; make it match at least one character (in {c.text!r})"
        )
    return rust


def _replace(c: Compiler, node: exp.RegexpReplace) -> pl.Expr:
    c.allow_args(node, "this", "expression", "replacement")
    pattern = _pattern(c, node.args.get("expression"), repeated=True)
    replacement = literal(c, node.args.get("replacement"), "the replacement") if node.args.get("replacement") else ""
    if pattern is None or replacement is None:
        return _NULL
    try:
        rust = java_replacement(str(replacement), _groups(pattern))
    except SqlExpressionError as e:
        raise SqlExpressionError(f"{e} (in {c.text!r})") from None
    return text(c, node.this).str.replace_all(pattern, rust)


def _extract(c: Compiler, node: exp.RegexpExtract) -> pl.Expr:
    c.allow_args(node, "this", "expression", "group", "null_if_pos_overflow")
    pattern = _pattern(c, node.args.get("expression"))
    group = literal(c, node.args["group"], "the group") if node.args.get("group") else 1
    value = text(c, node.this)
    if pattern is None or group is None:
        return _NULL
    if not 0 <= int(group) <= _groups(pattern):
        raise SqlExpressionError(f"REGEXP_EXTRACT group {group} does not exist in the regex (in {c.text!r})")
    # Spark returns '' when the regex does not match (and for a group that took no part)
    found = value.str.extract(pattern, int(group)).fill_null("")
    return pl.when(value.is_null()).then(_NULL).otherwise(found)


_CONTEXT = re.compile(r"\\[bBAzZG]|\$|(?<!\[)\^")
"""Java regex tokens whose match depends on the text around the match (anchors, word boundaries)."""


def _extract_all(c: Compiler, node: exp.RegexpExtractAll) -> pl.Expr:
    """REGEXP_EXTRACT_ALL(s, regex[, group]): every match's ``group`` (default 1; '' when the group took
    no part), as an ARRAY<STRING>.

    Polars finds the matches; a group other than 0 is read by matching each found text again with the
    regex anchored at both ends, which is the same match unless the regex looks outside it (``^``,
    ``$``, ``\\b``): those are refused for groups.
    """
    c.allow_args(node, "this", "expression", "group")
    source = literal(c, node.args.get("expression"), "the regex")
    pattern = _pattern(c, node.args.get("expression"), repeated=True, what="REGEXP_EXTRACT_ALL")
    group = literal(c, node.args["group"], "the group") if node.args.get("group") else 1
    value = text(c, node.this)
    if pattern is None or group is None:
        return pl.lit(None, dtype=pl.List(pl.String))
    if not isinstance(group, int) or not 0 <= group <= _groups(pattern):
        # Spark fails the query on the first match instead; a wrong group is a mistake in the metadata
        raise SqlExpressionError(f"REGEXP_EXTRACT_ALL group {group} does not exist in the regex (in {c.text!r})")
    matches = value.str.extract_all(pattern)
    if group == 0:
        return matches
    if _CONTEXT.search(str(source)):
        raise SqlExpressionError(
            f"REGEXP_EXTRACT_ALL of a group with a regex that looks outside its match (^, $, \\b) is not "
            f"supported; extract group 0 or drop the anchor (in {c.text!r})"
        )
    anchored = f"^(?:{pattern})$"
    return matches.list.eval(pl.element().str.extract(anchored, group).fill_null(""))


def _substr(c: Compiler, node: exp.RegexpSubstr) -> pl.Expr:
    # Spark: NULLIF(REGEXP_EXTRACT(s, p, 0), '')
    c.allow_args(node, "this", "expression")
    pattern = _pattern(c, node.args.get("expression"))
    if pattern is None:
        return _NULL
    found = text(c, node.this).str.extract(pattern, 0)
    return pl.when(found == "").then(_NULL).otherwise(found)


def _count(c: Compiler, node: exp.RegexpCount) -> pl.Expr:
    c.allow_args(node, "this", "expression")
    pattern = _pattern(c, node.args.get("expression"), repeated=True, final_break=True)
    if pattern is None:
        return pl.lit(None, dtype=pl.Int32)
    return text(c, node.this).str.count_matches(pattern).cast(pl.Int32)


def _instr(c: Compiler, node: exp.RegexpInstr) -> pl.Expr:
    c.allow_args(node, "this", "expression")
    pattern = _pattern(c, node.args.get("expression"), final_break=True)
    value = text(c, node.this)
    if pattern is None:
        return pl.lit(None, dtype=pl.Int32)
    # the shortest prefix before a match is where the leftmost match starts, counted in characters
    before = value.str.extract(f"^((?s:.)*?)(?:{pattern})", 1)
    # Java counts UTF-16 code units: a character outside the BMP (an emoji) counts twice
    units = before.str.len_chars().cast(pl.Int32) + before.str.count_matches(_ASTRAL).cast(pl.Int32)
    position = (units + 1).fill_null(0)
    return pl.when(value.is_null()).then(None).otherwise(position).cast(pl.Int32)


def _rlike(c: Compiler, node: exp.RegexpLike) -> pl.Expr:
    c.allow_args(node, "this", "expression")
    pattern = _pattern(c, node.args.get("expression"), final_break=True)
    return pl.lit(None, dtype=pl.Boolean) if pattern is None else text(c, node.this).str.contains(pattern)


def _like(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    value, pattern = arity(c, node, 2)
    return _rlike(c, exp.RegexpLike(this=value.copy(), expression=pattern.copy()))


NODES: dict[type[exp.Expression], Handler] = {
    exp.RegexpExtractAll: _extract_all,
    exp.RegexpLike: _rlike,
    exp.RegexpReplace: _replace,
    exp.RegexpExtract: _extract,
    exp.RegexpSubstr: _substr,
    exp.RegexpCount: _count,
    exp.RegexpInstr: _instr,
}
NAMES: dict[str, Handler] = {"REGEXP": _like}
SUPPORTED = ("REGEXP", "REGEXP_COUNT", "REGEXP_EXTRACT", "REGEXP_EXTRACT_ALL", "REGEXP_INSTR", "REGEXP_LIKE",
             "REGEXP_REPLACE",
             "REGEXP_SUBSTR", "RLIKE")  # fmt: skip
