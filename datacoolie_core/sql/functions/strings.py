"""Spark SQL string functions (positions are 1-based and count characters, as in Spark)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.ansi import guard
from datacoolie_core.sql.functions import formatting, phonetic, rowwise, substrings, urls
from datacoolie_core.sql.functions.registry import Handler, arity, literal, number, text
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

# chr(n) is the Latin-1 character of n & 255 (Spark: Character of the low byte)
_LATIN1 = {code: chr(code) for code in range(256)}


def _arg(c: Compiler, node: exp.Expression, key: str = "this") -> pl.Expr:
    child = node.args.get(key)
    if child is None:
        return c.arg(node, key)
    return text(c, child)


def _trim(c: Compiler, node: exp.Trim) -> pl.Expr:
    # Spark trims the space character only (not tabs or line breaks) unless given the characters
    chars = literal(c, node.args["expression"], "TRIM characters") if node.args.get("expression") else " "
    position = str(node.args.get("position") or "BOTH").upper()
    value = _arg(c, node)
    if chars is None:
        return pl.lit(None, dtype=pl.String)
    if position == "LEADING":
        return value.str.strip_chars_start(str(chars))
    if position == "TRAILING":
        return value.str.strip_chars_end(str(chars))
    return value.str.strip_chars(str(chars))


def _btrim(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    value, *chars = arity(c, node, 1, 2)
    trim = exp.Trim(this=value.copy(), expression=chars[0].copy() if chars else None)
    return _trim(c, trim)


def _length(unit: str, factor: int = 1) -> Handler:
    def handler(c: Compiler, node: exp.Expression) -> pl.Expr:
        value = _arg(c, node)
        counted = value.str.len_chars() if unit == "chars" else value.str.len_bytes()
        return (counted.cast(pl.Int32) * factor).cast(pl.Int32)

    return handler


def _concat(c: Compiler, node: exp.Concat) -> pl.Expr:
    if not node.expressions:
        return pl.lit("", dtype=pl.String)
    return pl.concat_str([text(c, e) for e in node.expressions])


def _concat_ws(c: Compiler, node: exp.ConcatWs) -> pl.Expr:
    separator, *parts = node.expressions
    sep = literal(c, separator, "CONCAT_WS separator")
    if sep is None:
        return pl.lit(None, dtype=pl.String)
    if not parts:
        return pl.lit("", dtype=pl.String)
    # Spark skips NULL arguments; all NULL gives ''
    joined = pl.concat_str([text(c, p) for p in parts], separator=str(sep), ignore_nulls=True)
    return joined.fill_null("")


def _pad(c: Compiler, node: exp.Pad) -> pl.Expr:
    fill = literal(c, node.args["fill_pattern"], "LPAD/RPAD pad") if node.args.get("fill_pattern") else " "
    width = literal(c, node.args["expression"], "LPAD/RPAD length")
    value = _arg(c, node)
    if fill is None or width is None:
        return pl.lit(None, dtype=pl.String)
    width = int(width)
    if width <= 0:
        return pl.when(value.is_not_null()).then(pl.lit("")).otherwise(pl.lit(None, dtype=pl.String))
    if fill == "":
        return value.str.slice(0, width)
    # the pad pattern repeats and is cut to the missing length, the value is cut to the width
    pattern = pl.lit(str(fill) * (width // len(str(fill)) + 1), dtype=pl.String)
    missing = pl.max_horizontal(pl.lit(width) - value.str.len_chars().cast(pl.Int64), pl.lit(0))
    padding = pattern.str.slice(0, missing)
    padded = pl.concat_str([padding, value]) if node.args.get("is_left") else pl.concat_str([value, padding])
    return padded.str.slice(0, width)


def _left_right(c: Compiler, node: exp.Expression) -> pl.Expr:
    count = literal(c, node.args.get("expression"), "LEFT/RIGHT length")
    value = _arg(c, node)
    if count is None:
        return pl.lit(None, dtype=pl.String)
    count = max(int(count), 0)
    return value.str.head(count) if isinstance(node, exp.Left) else value.str.tail(count)


def _chr(c: Compiler, node: exp.Chr) -> pl.Expr:
    code = number(c, node.expressions[0], "BIGINT")
    char = (code % 256).replace_strict(_LATIN1, return_dtype=pl.String)
    return pl.when(code < 0).then(pl.lit("")).otherwise(char)


# Java's Character.toTitleCase (one code point to one) where it differs from the full upper-case
# mapping Polars applies: 'ß' stays 'ß' (not 'SS'), 'ǆ' becomes the title-case 'ǅ' (not 'Ǆ'), Georgian
# Mkhedruli stays (not Mtavruli), 'ﬁ' stays. Derived from the Unicode data: for each code point, its
# title-case mapping when that is one code point, else its upper-case mapping when that is, else itself;
# listed where that differs from the full upper-case mapping.
_TITLE_FROM = "ßŉǄǅǆǇǈǉǊǋǌǰǱǲǳΐΰևაბგდევზთიკლმნოპჟრსტუფქღყშჩცძწჭხჯჰჱჲჳჴჵჶჷჸჹჺჽჾჿẖẗẘẙẚὐὒὔὖᾀᾁᾂᾃᾄᾅᾆᾇᾈᾉᾊᾋᾌᾍᾎᾏᾐᾑᾒᾓᾔᾕᾖᾗᾘᾙᾚᾛᾜᾝᾞᾟᾠᾡᾢᾣᾤᾥᾦᾧᾨᾩᾪᾫᾬᾭᾮᾯᾲᾳᾴᾶᾷᾼῂῃῄῆῇῌῒΐῖῗῢΰῤῦῧῲῳῴῶῷῼﬀﬁﬂﬃﬄﬅﬆﬓﬔﬕﬖﬗ"
_TITLE_TO = "ßŉǅǅǅǈǈǈǋǋǋǰǲǲǲΐΰևაბგდევზთიკლმნოპჟრსტუფქღყშჩცძწჭხჯჰჱჲჳჴჵჶჷჸჹჺჽჾჿẖẗẘẙẚὐὒὔὖᾈᾉᾊᾋᾌᾍᾎᾏᾈᾉᾊᾋᾌᾍᾎᾏᾘᾙᾚᾛᾜᾝᾞᾟᾘᾙᾚᾛᾜᾝᾞᾟᾨᾩᾪᾫᾬᾭᾮᾯᾨᾩᾪᾫᾬᾭᾮᾯᾲᾼᾴᾶᾷᾼῂῌῄῆῇῌῒΐῖῗῢΰῤῦῧῲῼῴῶῷῼﬀﬁﬂﬃﬄﬅﬆﬓﬔﬕﬖﬗ"


def _initcap(c: Compiler, node: exp.Initcap) -> pl.Expr:
    # Spark lower-cases, then title-cases the first letter after each space (only ' ' separates words)
    words = _arg(c, node).str.to_lowercase().str.split(" ")
    first = pl.element().str.slice(0, 1)
    special = list(_TITLE_FROM)
    title = (
        pl.when(first.is_in(special)).then(first.replace(special, list(_TITLE_TO))).otherwise(first.str.to_uppercase())
    )
    return words.list.eval(title + pl.element().str.slice(1)).list.join(" ")


def _repeat(c: Compiler, node: exp.Repeat) -> pl.Expr:
    times = number(c, node.args["times"], "INT")
    value = _arg(c, node)
    repeated = value.repeat_by(pl.max_horizontal(times, pl.lit(0)).cast(pl.UInt32)).list.join("")
    return pl.when(times.is_not_null() & value.is_not_null()).then(repeated).otherwise(pl.lit(None, dtype=pl.String))


def _space(c: Compiler, node: exp.Space) -> pl.Expr:
    times = number(c, node.this, "INT")
    repeated = pl.lit(" ").repeat_by(pl.max_horizontal(times, pl.lit(0)).cast(pl.UInt32)).list.join("")
    return pl.when(times.is_not_null()).then(repeated).otherwise(pl.lit(None, dtype=pl.String))


def _reverse(c: Compiler, node: exp.Reverse) -> pl.Expr:
    # by code point, like Spark (Polars' str.reverse keeps grapheme clusters together)
    return _arg(c, node).str.split("").list.reverse().list.join("")


def _replace(c: Compiler, node: exp.Replace) -> pl.Expr:
    search = literal(c, node.args.get("expression"), "REPLACE search string")
    replacement = literal(c, node.args["replacement"], "REPLACE replacement") if node.args.get("replacement") else ""
    value = _arg(c, node)
    if search is None or replacement is None:
        return pl.lit(None, dtype=pl.String)
    if search == "":
        return value
    return value.str.replace_all(str(search), str(replacement), literal=True)


def _translate(c: Compiler, node: exp.Translate) -> pl.Expr:
    source = literal(c, node.args.get("from_"), "TRANSLATE from")
    target = literal(c, node.args.get("to"), "TRANSLATE to")
    value = _arg(c, node)
    if source is None or target is None:
        return pl.lit(None, dtype=pl.String)
    mapping: dict[str, str] = {}
    for k, char in enumerate(str(source)):
        mapping.setdefault(char, str(target)[k] if k < len(str(target)) else "")
    if not mapping:
        return value
    return value.str.replace_many(list(mapping), list(mapping.values()))


def _contains(method: str) -> Handler:
    def handler(c: Compiler, node: exp.Expression) -> pl.Expr:
        value, other = _arg(c, node), _arg(c, node, "expression")
        if method == "contains":
            return value.str.contains(other, literal=True)
        return getattr(value.str, method)(other)

    return handler


def _elt(c: Compiler, node: exp.Elt) -> pl.Expr:
    index = number(c, node.this, "INT")
    chain: Any = pl.when(index == 1).then(text(c, node.expressions[0]))
    for k, part in enumerate(node.expressions[1:], start=2):
        chain = chain.when(index == k).then(text(c, part))
    result = chain.otherwise(pl.lit(None, dtype=pl.String))
    if not c.ansi:
        return result
    # ANSI: an index beyond the strings raises, as Spark's ELT does
    count = len(node.expressions)
    bad = index.is_not_null() & ((index < 1) | (index > count))
    detail = (
        f"The index {{value}} is out of bounds. The array has {count} elements. Use the SQL function `get()` to "
        "tolerate accessing element at invalid index and return NULL instead."
    )
    return guard(result, pl.String(), bad, index, "INVALID_ARRAY_INDEX", detail, c.text)


# MASK's classes: Java's Character.isUpperCase / isLowerCase / isDigit of each UTF-16 char; a character
# outside the BMP is two surrogate chars of neither class, so it is masked as "other" twice
_ASTRAL = r"[\x{10000}-\x{10FFFF}]"
_MASK_CLASSES = (r"^\p{Uppercase}$", r"^\p{Lowercase}$", r"^\p{Nd}$")
_BMP = r"--[\x{10000}-\x{10FFFF}]"
_MASK_RUNS = (rf"[\p{{Uppercase}}{_BMP}]", rf"[\p{{Lowercase}}{_BMP}]", rf"[\p{{Nd}}{_BMP}]",
              r"[^\p{Uppercase}\p{Lowercase}\p{Nd}\x{10000}-\x{10FFFF}]")  # fmt: skip
_MASK_DEFAULTS = ("X", "x", "n", None)


def _mask(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    value, *given = arity(c, node, 1, 5)
    chars = [literal(c, g, "MASK character") for g in given] + list(_MASK_DEFAULTS[len(given) :])
    if any(ch is not None and (len(str(ch)) != 1 or ord(str(ch)) > 0xFFFF) for ch in chars):
        # Spark keeps one UTF-16 unit of a character outside the BMP, a broken '?'
        raise SqlExpressionError(f"MASK characters must be single characters of the BMP (in {c.text!r})")
    fast = _mask_in_passes(text(c, value), chars)
    if fast is not None:
        return fast
    char = pl.element()
    chain: Any = pl
    for cls, ch in zip(_MASK_CLASSES, chars, strict=False):
        chain = chain.when(char.str.contains(cls) & ~char.str.contains(_ASTRAL))
        chain = chain.then(pl.lit(str(ch)) if ch is not None else char)
    other = chars[3]
    if other is not None:
        chain = chain.when(char.str.contains(_ASTRAL)).then(pl.lit(str(other) * 2)).otherwise(pl.lit(str(other)))
    else:
        chain = chain.otherwise(char)
    # one decision per character, so a replacement is never masked again by another class
    return text(c, value).str.split("").list.eval(chain).list.join("")


def _mask_in_passes(value: pl.Expr, chars: list[Any]) -> pl.Expr | None:
    """MASK as one regex replacement per class (fast), when no replacement is masked by a later pass."""
    passes = [(run, str(ch)) for run, ch in zip(_MASK_RUNS, chars, strict=True) if ch is not None]
    for k, (_, ch) in enumerate(passes):
        masked_again = any(pl.Series([ch]).str.contains(run).item() for run, _ in passes[k + 1 :])
        if masked_again or ch == "$":
            return None
    for run, ch in passes:
        value = value.str.replace_all(run, ch)
    if chars[3] is not None:
        value = value.str.replace_all(_ASTRAL, str(chars[3]) * 2)
    return value


NODES: dict[type[exp.Expression], Handler] = {
    exp.Upper: lambda c, n: _arg(c, n).str.to_uppercase(),
    exp.Lower: lambda c, n: _arg(c, n).str.to_lowercase(),
    exp.Trim: _trim,
    exp.Length: _length("chars"),
    exp.BitLength: _length("bytes", 8),
    exp.Left: _left_right,
    exp.Right: _left_right,
    exp.Concat: _concat,
    exp.ConcatWs: _concat_ws,
    exp.Pad: _pad,
    exp.Chr: _chr,
    exp.Initcap: _initcap,
    exp.Repeat: _repeat,
    exp.Space: _space,
    exp.Reverse: _reverse,
    exp.Replace: _replace,
    exp.Translate: _translate,
    exp.Contains: _contains("contains"),
    exp.StartsWith: _contains("starts_with"),
    exp.EndsWith: _contains("ends_with"),
    exp.Elt: _elt,
    exp.ToBase64: lambda c, n: _arg(c, n).str.encode("base64"),
    **substrings.NODES,
    **phonetic.NODES,
    **formatting.NODES,
    **rowwise.NODES,
}
NAMES: dict[str, Handler] = {
    "BTRIM": _btrim,
    "MASK": _mask,
    "OCTET_LENGTH": lambda c, n: _length("bytes")(c, exp.Length(this=arity(c, n, 1)[0].copy())),
    **substrings.NAMES,
    **phonetic.NAMES,
    **urls.NAMES,
    **formatting.NAMES,
    **rowwise.NAMES,
}
SUPPORTED = ("BASE64", "BIT_LENGTH", "BTRIM", "CHAR", "CHAR_LENGTH", "CHARACTER_LENGTH", "CHR", "CONCAT",
             "CONCAT_WS", "CONTAINS", "ELT", "ENDSWITH", "INITCAP", "LCASE", "LEFT", "LEN", "LENGTH", "LOWER",
             "LPAD", "LTRIM", "MASK", "OCTET_LENGTH", "REPEAT", "REPLACE", "REVERSE", "RIGHT", "RPAD", "RTRIM", "SPACE",
             "STARTSWITH", "TRANSLATE", "TRIM", "UCASE", "UPPER", *substrings.SUPPORTED,
             *phonetic.SUPPORTED, *urls.SUPPORTED,
             *formatting.SUPPORTED, *rowwise.SUPPORTED)  # fmt: skip
