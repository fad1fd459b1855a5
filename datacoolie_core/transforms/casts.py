"""Cast expressions for schema hints: from whatever the source delivered to the hinted dtype.

Casts are strict: a value that does not fit the hinted type fails the collect with Polars'
message naming the column and the offending values, instead of turning into a silent null.
Strings are trimmed first (CSV padding), decimals round half away from zero like Spark, and
timestamps follow D-19: an ISO string with an offset is converted to UTC, a naive one is stamped
UTC without shifting its wall clock.
"""

from __future__ import annotations

import re

import polars as pl

_ISO = r"^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2})(:\d{2}(?:\.\d+)?)?)?\s*([Zz]|[+-]\d{2}(?::?\d{2})?)?$"
_ISO_FORMAT = "%Y-%m-%dT%H:%M:%S%.f%:z"
_TRUE = ("true", "t", "yes", "y", "1")
_FALSE = ("false", "f", "no", "n", "0")
_JAVA_TOKENS = {
    "yyyy": "%Y", "uuuu": "%Y", "y": "%Y", "yy": "%y", "uu": "%y",
    "M": "%m", "MM": "%m", "MMM": "%b", "MMMM": "%B",
    "d": "%d", "dd": "%d", "D": "%j", "DDD": "%j",
    "H": "%H", "HH": "%H", "h": "%I", "hh": "%I", "a": "%p",
    "m": "%M", "mm": "%M", "s": "%S", "ss": "%S",
    "SSS": "%3f", "SSSSSS": "%6f", "SSSSSSSSS": "%9f",
    "EEE": "%a", "EEEE": "%A",
    "XXX": "%:z", "xxx": "%:z", "ZZZZZ": "%:z", "XX": "%z", "xx": "%z", "Z": "%z", "ZZ": "%z",
}  # fmt: skip


def java_to_strftime(pattern: str) -> str:
    """Translate a Java/Spark date pattern (``yyyy-MM-dd'T'HH:mm:ss.SSS``) to chrono strftime.

    A pattern that already holds ``%`` is taken as strftime and returned unchanged.

    Raises:
        ValueError: the pattern uses a Java letter with no strftime equivalent.
    """
    if "%" in pattern:
        return pattern
    out: list[str] = []
    for match in _JAVA_PIECE.finditer(pattern):
        if match.group("quoted") is not None:
            # 'T' is literal text; '' (inside quotes or alone) is one quote
            out.append((match.group("quoted") or "'").replace("''", "'"))
        elif match.group("letters"):
            out.append(_java_token(match.group("letters"), pattern))
        else:
            out.append(match.group(0))
    return "".join(out)


_JAVA_PIECE = re.compile(r"'(?P<quoted>(?:[^']|'')*)'|(?P<letters>(?P<letter>[A-Za-z])(?P=letter)*)|.", re.DOTALL)


def _java_token(token: str, pattern: str) -> str:
    if token not in _JAVA_TOKENS:
        raise ValueError(
            f"date pattern {pattern!r}: '{token}' has no strftime equivalent "
            f"(supported: {', '.join(sorted(_JAVA_TOKENS))}, or give a strftime pattern with '%')"
        )
    return _JAVA_TOKENS[token]


def cast_expr(name: str, source: pl.DataType, target: pl.DataType, fmt: str | None = None) -> pl.Expr:
    """Column ``name`` of dtype ``source`` cast to ``target``; ``fmt`` parses strings into dates and times."""
    column = pl.col(name)
    if source == pl.String:
        return _from_string(column.str.strip_chars(), target, fmt)
    if isinstance(source, pl.Datetime) and isinstance(target, pl.Datetime):
        return _to_zone(column, aware=source.time_zone is not None, target=target)
    if isinstance(source, pl.Datetime) and target == pl.Date:
        return column.dt.date()
    if source == pl.Date and isinstance(target, pl.Datetime):
        return column.cast(pl.Datetime(target.time_unit)).dt.replace_time_zone(target.time_zone)
    if isinstance(target, pl.Decimal) and source.is_float():
        return _rounded_decimal(column, target)
    return column.cast(target)


def _from_string(text: pl.Expr, target: pl.DataType, fmt: str | None) -> pl.Expr:
    if fmt and isinstance(target, (pl.Date, pl.Datetime)):
        return _parse_with_format(text, target, java_to_strftime(fmt))
    if isinstance(target, pl.Datetime):
        return _to_zone(iso_timestamp(text), aware=True, target=target)
    if target == pl.Time:
        return text.str.to_time(java_to_strftime(fmt) if fmt else "%H:%M:%S%.f")
    if target == pl.Date:
        return pl.when(text.str.contains(_ISO)).then(text.str.extract(_ISO, 1)).otherwise(text).str.to_date("%Y-%m-%d")
    if isinstance(target, pl.Decimal):
        return _rounded_decimal(text, target)
    if target == pl.Boolean:
        words = dict.fromkeys(_TRUE, True) | dict.fromkeys(_FALSE, False)
        return text.str.to_lowercase().replace_strict(words, return_dtype=pl.Boolean)
    return text.cast(target)


def _parse_with_format(text: pl.Expr, target: pl.Date | pl.Datetime, strftime: str) -> pl.Expr:
    if isinstance(target, pl.Date):
        return text.str.to_date(strftime)
    has_offset = "%z" in strftime or "%:z" in strftime
    parsed = text.str.to_datetime(strftime, time_unit="us", time_zone="UTC" if has_offset else None)
    return _to_zone(parsed, aware=has_offset, target=target)


def iso_timestamp(text: pl.Expr) -> pl.Expr:
    """ISO-8601 strings (date, ``T`` or space, optional seconds/fraction/offset) as ``Datetime(us, UTC)``.

    Row by row: an offset (``Z``, ``+02``, ``+0200``, ``+02:00``) is converted to UTC, a naive value is
    read as UTC. A string that is not ISO fails the (strict) parse with its value in the message.
    """
    offset = (
        text.str.extract(_ISO, 4)
        .str.replace(r"^[Zz]$", "+00:00")
        .str.replace(r"^([+-]\d{2})$", "${1}:00")
        .str.replace(r"^([+-]\d{2})(\d{2})$", "${1}:${2}")
        .fill_null("+00:00")
    )
    canonical = pl.concat_str(
        text.str.extract(_ISO, 1),
        pl.lit("T"),
        text.str.extract(_ISO, 2).fill_null("00:00"),
        text.str.extract(_ISO, 3).fill_null(":00"),
        offset,
    )
    iso = pl.when(text.str.contains(_ISO)).then(canonical).otherwise(text)
    return iso.str.to_datetime(_ISO_FORMAT, time_unit="us", time_zone="UTC")


def _to_zone(column: pl.Expr, *, aware: bool, target: pl.Datetime) -> pl.Expr:
    """An aware value is converted to the target zone (UTC then naive for a naive target); a naive one is stamped."""
    if aware:
        moved = column.dt.convert_time_zone(target.time_zone or "UTC")
        column = moved if target.time_zone else moved.dt.replace_time_zone(None)
    elif target.time_zone:
        column = column.dt.replace_time_zone(target.time_zone)
    return column.cast(target)


def _rounded_decimal(column: pl.Expr, target: pl.Decimal) -> pl.Expr:
    # Polars truncates extra digits on a decimal cast; Spark rounds half up (away from zero)
    precision, scale = target.precision or 38, target.scale or 0
    wide = pl.Decimal(38, 38 - (precision - scale))
    return column.cast(wide).round(scale, mode="half_away_from_zero").cast(target)
