"""Spark 3.5's CSV ``inferSchema``: the type of each string column, over every row, then the cast.

Spark types each value by the first of these it parses as, then widens across the column's values;
nulls do not vote and an all-null column stays a string:

====================  ==============================================================================
int, bigint           ``[+-]digits`` in the int / long range (``"0179"`` is the int 179)
decimal(p, 0)         a whole number beyond long, or one written ``"5."`` — Java ``BigDecimal``
                      with scale 0, at most 38 digits (``"1,000"`` is a string)
double                anything Java ``Double.parseDouble`` takes (blanks around it, ``1e3``, ``.5``,
                      ``1d``, ``NaN``, ``Infinity``) and ``Inf`` / ``-Inf``
date                  ``dateFormat`` (default ``yyyy-MM-dd``)
timestamp             ``timestampFormat``, or without it Spark's ISO cast (``yyyy-M[-d][( |T)H[:m[:s
                      [.fraction]]]][zone]``), read in UTC
boolean               ``true`` / ``false`` in any case
string                anything else, or a mix the rules below do not join
====================  ==============================================================================

Widening: int < bigint < decimal < double; date + timestamp = timestamp (string when
``timestampFormat`` is set); any other mix is a string. The cost: inference reads the files once
more (an aggregate over every row) before the read that keeps the rows.
"""

from __future__ import annotations

import polars as pl

from datacoolie_core.sources.options import CsvOptions
from datacoolie_core.transforms.casts import java_to_strftime

_INT, _LONG, _DECIMAL, _DOUBLE, _DATE, _TIMESTAMP, _BOOLEAN, _STRING = range(8)
_TS = pl.Datetime("us", "UTC")
_JAVA_BLANK = r"[\x{0}-\x{20}]*"
_WHITESPACE = "".join(chr(i) for i in range(33))
"""Java's ``trim``: every character up to the space."""
_DOUBLE_RE = rf"^{_JAVA_BLANK}[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?){_JAVA_BLANK}$"
_DECIMAL_RE = r"^[+-]?\d+\.?$"
"""A whole number as Java ``BigDecimal`` reads it with scale 0."""
_SPARK_TS = (
    r"^\s*(\d{4})-(\d{1,2})(?:-(\d{1,2}))?"
    r"(?:[T ](\d{1,2})(?::(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?)?)?"
    r"\s*(Z|UTC|GMT|[+-]\d{2}:?\d{2}|[+-]\d{1,2})?\s*$"
)


_SPARK_TS_SHAPE = (
    r"^\s*\d{4}-(?:0?[1-9]|1[0-2])(?:-(?:0?[1-9]|[12]\d|3[01]))?"
    r"(?:[T ](?:[01]?\d|2[0-3])(?::[0-5]?\d(?::[0-5]?\d(?:\.\d{1,9})?)?)?)?"
    r"\s*(?:Z|UTC|GMT|[+-]\d{2}:?\d{2}|[+-]\d{1,2})?\s*$"
)
"""The shapes Spark's string -> timestamp cast takes, with each field in its range."""


def infer_and_cast(lf: pl.LazyFrame, columns: list[str], options: CsvOptions) -> pl.LazyFrame:
    """``lf`` with each of ``columns`` (strings) cast to the type Spark infers for it."""
    if not columns:
        return lf
    found = lf.select(_kind(pl.col(c), options).unique().implode().alias(c) for c in columns).collect()
    kinds = {c: {k for k in found[c][0].to_list() if k is not None} for c in columns}
    types = {c: _join(kinds[c], options) for c in columns}
    decimals = [c for c in columns if types[c] == _DECIMAL]
    widest = lf.select(_digits(pl.col(c)).max().alias(c) for c in decimals).collect() if decimals else None
    casts = []
    for column, kind in types.items():
        precision = 0
        if widest is not None and kind == _DECIMAL:
            # an int widens to decimal(10, 0), a bigint to decimal(20, 0)
            found_kinds = kinds[column]
            precision = max(widest[column][0] or 1, 10 if _INT in found_kinds else 1, 20 if _LONG in found_kinds else 1)
        if kind != _STRING:
            casts.append(_cast(pl.col(column), kind, precision, options).alias(column))
    return lf.with_columns(casts) if casts else lf


def _kind(value: pl.Expr, o: CsvOptions) -> pl.Expr:
    """The first type a value parses as (null for a null value).

    Only automata (regular expressions without captures) and casts on the candidates: the chain is
    evaluated for every value, so a costly parse here would be paid once per cell.
    """
    integer = value.str.contains(r"^[+-]?\d+$")
    whole = value.str.contains(_DECIMAL_RE)
    long_whole = pl.when(whole & (value.str.len_bytes() > 38)).then(value)  # rare: count digits only there
    whole &= long_whole.str.count_matches(r"\d").fill_null(0) <= 38
    return (
        pl.when(value.is_null()).then(None)
        .when(integer & pl.when(integer).then(value).cast(pl.Int32, strict=False).is_not_null()).then(_INT)
        .when(integer & pl.when(integer).then(value).cast(pl.Int64, strict=False).is_not_null()).then(_LONG)
        .when(whole).then(_DECIMAL)
        .when(value.str.contains(_DOUBLE_RE) | value.is_in(["Inf", "-Inf"])).then(_DOUBLE)
        .when(_is_date(value, o)).then(_DATE)
        .when(_is_timestamp(value, o)).then(_TIMESTAMP)
        .when(value.str.contains("(?i)^(true|false)$")).then(_BOOLEAN)
        .otherwise(_STRING)
    )  # fmt: skip


def _is_date(value: pl.Expr, o: CsvOptions) -> pl.Expr:
    if o.date_format == "yyyy-MM-dd":  # Spark's default pattern is strict: two-digit month and day
        candidate = value.str.contains(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$")
        return candidate & _parse_date(pl.when(candidate).then(value), o).is_not_null()
    return _parse_date(value, o).is_not_null()


def _is_timestamp(value: pl.Expr, o: CsvOptions) -> pl.Expr:
    if o.timestamp_format is not None:
        return _parse_timestamp(value, o).is_not_null()
    return value.str.contains(_SPARK_TS_SHAPE)


def _digits(value: pl.Expr) -> pl.Expr:
    """The precision of a whole-number value (a decimal column's width)."""
    return pl.when(value.str.contains(_DECIMAL_RE)).then(_digit_count(value))


def _digit_count(number: pl.Expr) -> pl.Expr:
    digits = number.str.replace_all(r"[^0-9]", "").str.strip_chars_start("0")
    return pl.max_horizontal(digits.str.len_chars(), pl.lit(1))


def _join(kinds: set[int], o: CsvOptions) -> int:
    """Spark's widening of the per-value types of one column."""
    if not kinds:
        return _STRING
    if len(kinds) == 1:
        return kinds.pop()
    if kinds <= {_INT, _LONG}:
        return _LONG
    if kinds <= {_INT, _LONG, _DECIMAL}:
        return _DECIMAL
    if kinds <= {_INT, _LONG, _DECIMAL, _DOUBLE}:
        return _DOUBLE
    if kinds == {_DATE, _TIMESTAMP} and o.timestamp_format is None:
        return _TIMESTAMP
    return _STRING


def _cast(value: pl.Expr, kind: int, precision: int, o: CsvOptions) -> pl.Expr:
    if kind == _INT:
        return value.cast(pl.Int32)
    if kind == _LONG:
        return value.cast(pl.Int64)
    if kind == _DECIMAL:
        number = value.str.strip_suffix(".")
        return number.cast(pl.Decimal(min(precision, 38), 0))
    if kind == _DOUBLE:
        return _double(value)
    if kind == _DATE:
        return _parse_date(value, o)
    if kind == _TIMESTAMP:
        return _parse_timestamp(value, o)
    return value.str.to_lowercase() == "true"


def _double(value: pl.Expr) -> pl.Expr:
    text = value.str.strip_chars(_WHITESPACE).str.replace(r"[fFdD]$", "")
    text = text.str.replace(r"^([+-]?)(Infinity|Inf)$", "${1}inf")
    return text.cast(pl.Float64, strict=False)


def _parse_date(value: pl.Expr, o: CsvOptions) -> pl.Expr:
    if o.date_format == "yyyy-MM-dd":  # Spark's default pattern is strict: two-digit month and day
        value = pl.when(value.str.contains(r"^\d{4}-\d{2}-\d{2}$")).then(value)
    return value.str.to_date(java_to_strftime(o.date_format), strict=False)


def _parse_timestamp(value: pl.Expr, o: CsvOptions) -> pl.Expr:
    if o.timestamp_format is not None:
        fmt = java_to_strftime(o.timestamp_format)
        aware = "%z" in fmt or "%:z" in fmt
        parsed = value.str.to_datetime(fmt, time_unit="us", time_zone="UTC" if aware else None, strict=False)
        return parsed if aware else parsed.dt.replace_time_zone("UTC")
    return _iso_cast(value)


def _iso_cast(value: pl.Expr) -> pl.Expr:
    """Spark's string -> timestamp cast for the ISO shapes, in UTC (session time zone).

    The common shapes parse directly; only the values they miss go through the slower rewriting
    into one canonical shape (single-digit fields, a missing part, a zone).
    """
    fast = pl.coalesce(
        value.str.to_datetime(fmt, time_unit="us", strict=False)
        for fmt in ("%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f")
    ).dt.replace_time_zone("UTC")
    return pl.coalesce(fast, _canonical_cast(pl.when(fast.is_null()).then(value)))


def _canonical_cast(value: pl.Expr) -> pl.Expr:

    def part(group: int, default: str, width: int = 2) -> pl.Expr:
        return value.str.extract(_SPARK_TS, group).fill_null(default).str.pad_start(width, "0")

    zone = (
        value.str.extract(_SPARK_TS, 8)
        .str.replace(r"^(Z|UTC|GMT)$", "+00:00")
        .str.replace(r"^([+-])(\d)$", "${1}0${2}")
        .str.replace(r"^([+-]\d{2})$", "${1}:00")
        .str.replace(r"^([+-]\d{2})(\d{2})$", "${1}:${2}")
        .fill_null("+00:00")
    )
    fraction = value.str.extract(_SPARK_TS, 7).fill_null("0")
    text = pl.concat_str(
        part(1, "", 4), pl.lit("-"), part(2, "1"), pl.lit("-"), part(3, "1"), pl.lit("T"),
        part(4, "0"), pl.lit(":"), part(5, "0"), pl.lit(":"), part(6, "0"), pl.lit("."), fraction, zone,
    )  # fmt: skip
    iso = pl.when(value.str.contains(_SPARK_TS)).then(text)
    return iso.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%:z", time_unit="us", time_zone="UTC", strict=False)


def spark_string_cast(text: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """Spark's (non-ANSI) cast of a string column to ``dtype``: blanks trimmed, unparsable -> null.

    Spark compares a string column with a typed value by casting the column this way (a watermark
    bound against a CSV column read as text).
    """
    trimmed = text.str.strip_chars(_WHITESPACE)
    if isinstance(dtype, pl.Datetime):
        return _iso_cast(trimmed)
    if isinstance(dtype, pl.Date):
        day = trimmed.str.extract(r"^(\d{4}-\d{1,2}-\d{1,2})(?:[T ].*)?$", 1)
        return day.str.to_date("%Y-%m-%d", strict=False)
    if dtype.is_integer():  # Spark truncates a fraction ("100.5" -> 100)
        whole = trimmed.str.extract(r"^([+-]?\d+)(?:\.\d*)?$", 1)
        return whole.cast(dtype, strict=False)
    if dtype.is_float():
        return _double(trimmed).cast(dtype, strict=False)
    return trimmed.cast(dtype, strict=False)
