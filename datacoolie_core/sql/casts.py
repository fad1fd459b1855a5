"""Spark 3.5 ``CAST`` (ANSI off) as native Polars expressions: bad input becomes NULL, never an error.

What Spark does and Polars' own cast does not: integers narrow by wrapping (two's complement);
doubles narrow to integers by truncating and saturating (NaN -> 0); strings are trimmed and
``'1.5'`` reads as the integer 1; ``'t'``/``'yes'``/``'1'`` are booleans; doubles print the way
Java prints them (``1.0E10``, ``Infinity``); timestamps print without trailing zero fractions.
"""

from __future__ import annotations

import polars as pl

from datacoolie_core.sql.coercion import CoercionError, is_integral, is_null, is_numeric, spark_name

_BITS: dict[pl.DataType, int] = {pl.Int8(): 8, pl.Int16(): 16, pl.Int32(): 32, pl.Int64(): 64}
_WHITESPACE = "".join(chr(code) for code in range(33))  # Spark's UTF8String.trimAll: every char <= ' '
_TRUE = ["t", "true", "y", "yes", "1"]
_FALSE = ["f", "false", "n", "no", "0"]
_FLOAT = (pl.Float32(), pl.Float64())


def spark_cast(value: pl.Expr, source: pl.DataType | None, target: pl.DataType) -> pl.Expr:
    """``CAST(value AS target)`` for a ``value`` of Spark type ``source`` (``None``: unknown).

    Raises:
        CoercionError: Spark's analyzer rejects this cast.
    """
    if source is None or source == target:
        return value if source == target else value.cast(target, strict=False)
    if is_null(source):  # a typed NULL literal (Polars mis-sizes comparisons with a cast untyped NULL)
        return pl.lit(None, dtype=target)
    if target == pl.String():
        return to_string(value, source)
    if source == pl.String():
        return _from_string(value, target)
    if isinstance(source, pl.Datetime) and source.time_zone is None and (is_numeric(target) or target == pl.Boolean()):
        raise CoercionError(f"cannot cast TIMESTAMP_NTZ to {spark_name(target)}")
    if is_integral(target):
        return _to_integral(value, source, target)
    if target in _FLOAT or isinstance(target, pl.Decimal):
        return _to_fractional(value, source, target)
    if target == pl.Boolean() and is_numeric(source):
        return value != 0
    if target == pl.Boolean() and source == pl.Date():
        return pl.lit(None, pl.Boolean())
    if target == pl.Boolean() and isinstance(source, pl.Datetime):
        return value.dt.epoch("us") != 0
    if isinstance(target, pl.Datetime) and source == pl.Boolean() and target.time_zone:  # TRUE is 1 microsecond
        return value.cast(pl.Int64).cast(pl.Datetime("us")).dt.replace_time_zone(target.time_zone)
    return _temporal(value, source, target)


def _to_integral(value: pl.Expr, source: pl.DataType, target: pl.DataType) -> pl.Expr:
    bits = _BITS[target]
    if source in _FLOAT:
        low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        if bits < 32:  # Spark goes through INT for TINYINT/SMALLINT, then wraps
            return wrap(_to_integral(value, source, pl.Int32()), pl.Int32(), target)
        return (
            pl.when(value.is_nan())
            .then(pl.lit(0, target))
            .when(value >= float(high))
            .then(pl.lit(high, target))
            .when(value <= float(low))
            .then(pl.lit(low, target))
            .otherwise(value.cast(target, strict=False))
        )
    if source == pl.Boolean():
        return value.cast(target)
    if isinstance(source, pl.Decimal):
        return wrap(value.cast(pl.Int128(), strict=False), pl.Int128(), target)
    if is_integral(source):
        return wrap(value, source, target)
    if isinstance(source, pl.Datetime):
        seconds = value.dt.epoch("us").floordiv(1_000_000)
        return wrap(seconds, pl.Int64(), target)
    if source == pl.Date():
        return pl.lit(None, target)
    raise CoercionError(f"cannot cast {spark_name(source)} to {spark_name(target)}")


def wrap(value: pl.Expr, source: pl.DataType, target: pl.DataType) -> pl.Expr:
    """Narrow an integer by keeping its low bits, as the JVM does."""
    bits = _BITS[target]
    if _BITS.get(source, 128) <= bits:
        return value.cast(target)
    span = 2**bits
    wide = value.cast(pl.Int128())
    low = wide - (wide + span // 2).floordiv(span) * span
    return low.cast(target)


def _to_fractional(value: pl.Expr, source: pl.DataType, target: pl.DataType) -> pl.Expr:
    if isinstance(target, pl.Decimal):
        return to_decimal(value, source, target)
    if is_numeric(source) or source == pl.Boolean():
        return value.cast(target, strict=False)
    if isinstance(source, pl.Datetime) and target in _FLOAT:
        return value.dt.epoch("us").cast(target) / 1_000_000
    if source == pl.Date():
        return pl.lit(None, target)
    raise CoercionError(f"cannot cast {spark_name(source)} to {spark_name(target)}")


def to_decimal(value: pl.Expr, source: pl.DataType, target: pl.Decimal) -> pl.Expr:
    """Spark rounds HALF_UP to the target scale; a value too wide for the precision is NULL."""
    if source == pl.Boolean():
        value, source = value.cast(pl.Int32), pl.Int32()
    if source in _FLOAT:
        return _double_to_decimal(value, source, target)
    if isinstance(source, pl.Decimal) and source.scale > target.scale:
        value = value.round(target.scale, mode="half_away_from_zero")
    if is_numeric(source):
        return value.cast(target, strict=False)
    if isinstance(source, pl.Datetime):
        return to_decimal(value.dt.epoch("us").cast(pl.Float64) / 1_000_000, pl.Float64(), target)
    if source == pl.Date():
        return pl.lit(None, target)
    raise CoercionError(f"cannot cast {spark_name(source)} to {spark_name(target)}")


def decimal_text(text: pl.Expr, target: pl.Decimal) -> pl.Expr:
    """A decimal text as ``target``, rounded HALF_UP from its own digits (NULL if too wide or malformed).

    The text is read into a DECIMAL with every fraction digit the target's integral part leaves room
    for (at least one past the target's scale) and two integral digits for a rounding carry
    (99999999.995 -> 100000000.00, NULL in DECIMAL(10,2), not a Polars error). Polars' own cast rounds
    half-to-even at that scale, so the text is first cut to it: a second rounding must see the text's
    digits ('1.00499999999999999999' -> 1.00, never 1.005 -> 1.01).
    """
    integral = target.precision - target.scale
    scale = min(max(36 - integral, target.scale + 1), 38)
    cut = text.str.replace(rf"^([+-]?\d*\.\d{{{scale}}})\d+$", "${1}")
    exact = pl.Decimal(38, scale)
    return to_decimal(cut.cast(exact, strict=False), exact, target)


def _double_to_decimal(value: pl.Expr, source: pl.DataType, target: pl.Decimal) -> pl.Expr:
    """Spark reads a double as its shortest decimal text (``Double.toString``) and rounds that HALF_UP.

    The binary value of ``1.005`` is 1.00499999999999989...; Spark gives 1.01 where rounding the
    binary value gives 1.00. Polars prints the same shortest digits. A FLOAT is widened to DOUBLE
    first, as Spark does (``1.005F`` gives 1.00).
    """
    if source != pl.Float64():
        value = value.cast(pl.Float64)
    # Polars raises (strict or not) on a double too wide for the precision: those are NULL first
    fits = value.is_finite() & (value.abs() < 10.0 ** (target.precision - target.scale))
    return decimal_text(pl.when(fits).then(value).cast(pl.String), target)


def _from_string(value: pl.Expr, target: pl.DataType) -> pl.Expr:
    text = value.str.strip_chars(_WHITESPACE)
    if is_integral(target):
        # ".5" reads as 0; an out-of-range number is NULL (the non-strict cast)
        digits = text.str.replace(r"^([+-]?)\.", "${1}0.").str.extract(r"^([+-]?\d+)(?:\.\d*)?$")
        return digits.cast(pl.Int128(), strict=False).cast(target, strict=False)
    if target in _FLOAT:
        special = text.str.to_lowercase().str.replace(r"^([+-]?)(inf|infinity)$", "${1}inf")
        number = special.str.replace(r"([0-9.])[dDfF]$", "${1}")
        return number.cast(target, strict=False)
    if isinstance(target, pl.Decimal):
        return decimal_text(text, target)
    if target == pl.Boolean():
        lowered = text.str.to_lowercase()
        return pl.when(lowered.is_in(_TRUE)).then(True).when(lowered.is_in(_FALSE)).then(False)
    if target == pl.Date():
        return parse_date(text)
    if isinstance(target, pl.Datetime):
        return parse_timestamp(text, target)
    raise CoercionError(f"cannot cast STRING to {spark_name(target)}")


def parse_date(text: pl.Expr) -> pl.Expr:
    """A Spark date string (``yyyy``, ``yyyy-[m]m``, ``yyyy-[m]m-[d]d`` then ``T``/space and anything)."""
    parts = text.str.extract_groups(r"^([+-]?\d{4,7})(?:-(\d{1,2})(?:-(\d{1,2})(?:[T ].*)?)?)?$")
    year, month, day = (parts.struct.field(str(k)) for k in (1, 2, 3))
    year = year.cast(pl.Int32, strict=False).cast(pl.String).str.zfill(4)  # Spark reads '02024' as 2024
    iso = pl.concat_str(
        [year, pl.lit("-"), month.fill_null("1").str.zfill(2), pl.lit("-"), day.fill_null("1").str.zfill(2)]
    )
    return iso.str.to_date("%Y-%m-%d", strict=False)


def parse_timestamp(text: pl.Expr, target: pl.DataType) -> pl.Expr:
    """A Spark timestamp string (a year of 4-6 digits where a date takes 7): a date, optionally ``T``/space, ``HH:mm[:ss[.fraction]]`` and a zone."""
    pattern = r"^([+-]?\d{4,6}(?:-\d{1,2}(?:-\d{1,2})?)?)(?:[T ](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$"
    parts = text.str.extract_groups(pattern)
    field = [parts.struct.field(str(k)) for k in range(1, 7)]
    day = parse_date(field[0])
    fraction = field[4].fill_null("0").str.pad_end(6, "0").str.slice(0, 6).cast(pl.Int64)
    hour, minute, second = (value.fill_null("0").cast(pl.Int64) for value in field[1:4])
    micros = hour * 3_600_000_000 + minute * 60_000_000 + second * 1_000_000 + fraction
    # java.time's LocalTime refuses 24:00 and a leap second 23:59:60 (NULL), where a sum would roll over
    valid = field[0].is_not_null() & (hour < 24) & (minute < 60) & (second < 60)
    offset = field[5].str.replace("Z", "+00:00").str.replace(r"^([+-]\d{2})(\d{2})$", "${1}:${2}")
    sign = pl.when(offset.str.starts_with("-")).then(-1).otherwise(1)
    offset_micros = sign * (
        offset.str.slice(1, 2).cast(pl.Int64) * 3_600_000_000 + offset.str.slice(4, 2).cast(pl.Int64) * 60_000_000
    )
    local = day.cast(pl.Datetime("us")) + pl.duration(microseconds=micros)
    time_zone = getattr(target, "time_zone", None)
    if time_zone is None:  # TIMESTAMP_NTZ ignores a zone in the text
        return pl.when(valid).then(local)
    instant = local - pl.duration(microseconds=offset_micros.fill_null(0))
    return pl.when(valid).then(instant).dt.replace_time_zone(time_zone)


def to_string(value: pl.Expr, source: pl.DataType) -> pl.Expr:
    """A value as Spark prints it."""
    if source in _FLOAT:
        return java_double_string(value)
    if isinstance(source, pl.Datetime):
        text = value.dt.to_string("%Y-%m-%d %H:%M:%S%.6f")
        return text.str.strip_chars_end("0").str.strip_chars_end(".")
    if isinstance(source, pl.Decimal) and source.scale > 6:
        return _big_decimal_string(value, source.scale)
    return value.cast(pl.String)


def _big_decimal_string(value: pl.Expr, scale: int) -> pl.Expr:
    """``BigDecimal.toString``: scientific (``1.00E-7``, ``0E-13``) once the exponent is below -6."""
    plain = value.cast(pl.String)
    sign = pl.when(plain.str.starts_with("-")).then(pl.lit("-")).otherwise(pl.lit(""))
    unscaled = plain.str.replace_all(r"[-.]", "").str.strip_chars_start("0")
    digits = pl.when(unscaled == "").then(pl.lit("0")).otherwise(unscaled)
    adjusted = digits.str.len_chars().cast(pl.Int64) - 1 - scale
    tail = digits.str.slice(1)
    scientific = pl.concat_str(
        [sign, digits.str.slice(0, 1), pl.when(tail == "").then(pl.lit("")).otherwise("." + tail), pl.lit("E"),
         adjusted.cast(pl.String)]
    )  # fmt: skip
    return pl.when(adjusted < -6).then(scientific).otherwise(plain)


def java_double_string(value: pl.Expr) -> pl.Expr:
    """``Double.toString``: plain for 1e-3 <= |x| < 1e7, else ``d.dddE±n``; NaN and Infinity by name."""
    plain = value.cast(pl.String)
    magnitude = value.abs()
    scientific = _scientific(value)
    return (
        pl.when(value.is_nan())
        .then(pl.lit("NaN"))
        .when(value.is_infinite())
        .then(pl.when(value > 0).then(pl.lit("Infinity")).otherwise(pl.lit("-Infinity")))
        .when((magnitude == 0) | ((magnitude >= 1e-3) & (magnitude < 1e7)))
        .then(pl.when(plain.str.contains(r"[.eE]")).then(plain).otherwise(plain + ".0"))
        .otherwise(scientific)
    )


def _scientific(value: pl.Expr) -> pl.Expr:
    # Polars prints the shortest round-trip digits like Java; only the layout differs
    text = value.cast(pl.String)
    sign = pl.when(text.str.starts_with("-")).then(pl.lit("-")).otherwise(pl.lit(""))
    body = text.str.strip_chars_start("-")
    mantissa = body.str.extract(r"^([0-9.]+)")
    exponent = body.str.extract(r"e([+-]?\d+)$").cast(pl.Int64).fill_null(0)
    whole = mantissa.str.extract(r"^(\d*)")
    fraction = mantissa.str.extract(r"\.(\d*)$").fill_null("")
    digits = (whole + fraction).str.strip_chars_start("0")
    lead = whole.str.strip_chars_start("0").str.len_chars().cast(pl.Int64)
    # the decimal exponent of the first significant digit
    shift = (
        pl.when(lead > 0)
        .then(lead - 1)
        .otherwise(
            fraction.str.strip_chars_start("0").str.len_chars().cast(pl.Int64)
            - fraction.str.len_chars().cast(pl.Int64)
            - 1
        )
    )
    significant = digits.str.strip_chars_end("0")
    tail = significant.str.slice(1)
    return pl.concat_str(
        [sign, significant.str.slice(0, 1), pl.lit("."), pl.when(tail == "").then(pl.lit("0")).otherwise(tail),
         pl.lit("E"), (exponent + shift).cast(pl.String)]
    )  # fmt: skip


def _temporal(value: pl.Expr, source: pl.DataType, target: pl.DataType) -> pl.Expr:
    if target == pl.Date() and isinstance(source, pl.Datetime):
        return value.dt.date()
    if isinstance(target, pl.Datetime) and source == pl.Date():
        result = value.cast(pl.Datetime("us"))
        return result.dt.replace_time_zone(target.time_zone) if target.time_zone else result
    if isinstance(target, pl.Datetime) and isinstance(source, pl.Datetime):
        return value.dt.replace_time_zone(target.time_zone)
    if isinstance(target, pl.Datetime) and is_numeric(source) and target.time_zone:
        whole = is_integral(source)
        micros = value.cast(pl.Int64) * 1_000_000 if whole else value.cast(pl.Float64) * 1_000_000
        return micros.cast(pl.Int64, strict=False).cast(pl.Datetime("us")).dt.replace_time_zone(target.time_zone)
    raise CoercionError(f"cannot cast {spark_name(source)} to {spark_name(target)}")
