"""The field checks of Spark's MAKE_DATE and MAKE_TIMESTAMP in ANSI mode (java.time's own checks).

With ANSI off, fields that form no valid date or time give NULL. With ANSI on, Spark 3.5 builds the
value with ``LocalDate.of`` / ``LocalDateTime.of`` and lets java.time's ``DateTimeException`` stop the
query; it has no error class, so the message is java.time's, reproduced here word for word ("Invalid
date 'FEBRUARY 30'", "Invalid value for HourOfDay (valid values 0 - 23): 24"). The checks are listed
in the order java.time tests them, so the first failing one on a row is the one Spark reports.
A seconds value of exactly 60 is the next minute (Spark's PostgreSQL compatibility); 60 with a
fraction raises ``INVALID_FRACTION_OF_SECOND``, Spark's one classed error here.
"""

from __future__ import annotations

import polars as pl

from datacoolie_core.sql.ansi import Check

_MONTH_NAMES = ("JANUARY", "FEBRUARY", "MARCH", "APRIL", "MAY", "JUNE", "JULY", "AUGUST", "SEPTEMBER", "OCTOBER",
                "NOVEMBER", "DECEMBER")  # fmt: skip
_YEARS = 999_999_999
_MICROS = 1_000_000


def _field(value: pl.Expr, low: int, high: int, name: str, shown_range: str) -> Check:
    """java.time's ``ChronoField.checkValidValue``."""
    detail = f"Invalid value for {name} (valid values {shown_range}): {{value}}"
    return ~value.is_between(low, high), value, "", detail


def date_checks(year: pl.Expr, month: pl.Expr, day: pl.Expr) -> list[Check]:
    """``LocalDate.of(year, month, day)``'s checks, for INT fields (a NULL field raises nothing)."""
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    length = (
        pl.when(month == 2).then(pl.when(leap).then(29).otherwise(28))
        .when(month.is_in([4, 6, 9, 11])).then(30)
        .otherwise(31)
    )  # fmt: skip
    too_long = month.is_between(1, 12) & day.is_between(1, 31) & (day > length)
    month_name = (
        month.clip(1, 12).cast(pl.Int64).replace_strict(list(range(1, 13)), list(_MONTH_NAMES), return_dtype=pl.String)
    )
    return [
        _field(year, -_YEARS, _YEARS, "Year", f"-{_YEARS} - {_YEARS}"),
        _field(month, 1, 12, "MonthOfYear", "1 - 12"),
        _field(day, 1, 31, "DayOfMonth", "1 - 28/31"),
        (too_long & (day == 29), year, "", "Invalid date 'February 29' as '{value}' is not a leap year"),
        (too_long & (day != 29), pl.concat_str([month_name, day.cast(pl.String)], separator=" "), "",
         "Invalid date '{value}'"),
    ]  # fmt: skip


def as_int(micros: pl.Expr) -> pl.Expr:
    """A BIGINT as Java's ``(int)`` cast keeps it (its low 32 bits): Spark reads the seconds' micros so."""
    return ((micros + 2**31) % 2**32 - 2**31).cast(pl.Int64)


def timestamp_checks(fields: tuple[pl.Expr, pl.Expr, pl.Expr, pl.Expr, pl.Expr], micros: pl.Expr) -> list[Check]:
    """``MAKE_TIMESTAMP``'s checks: ``micros`` is the seconds argument as whole microseconds (an INT)."""
    year, month, day, hour, minute = fields
    seconds = micros.floordiv(_MICROS)
    fraction = (seconds == 60) & (micros % _MICROS != 0)
    detail = "The fraction of sec must be zero. Valid range is [0, 60] (got {value})."
    return [
        (fraction, micros.cast(pl.Float64) / _MICROS, "INVALID_FRACTION_OF_SECOND", detail),
        *date_checks(year, month, day),
        _field(hour, 0, 23, "HourOfDay", "0 - 23"),
        _field(minute, 0, 59, "MinuteOfHour", "0 - 59"),
        (~seconds.is_between(0, 60), seconds, "", "Invalid value for SecondOfMinute (valid values 0 - 59): {value}"),
    ]


def only_where_given(checks: list[Check], fields: list[pl.Expr]) -> list[Check]:
    """The checks, applied to rows without a NULL field only (Spark gives NULL there, never an error)."""
    given = pl.all_horizontal([field.is_not_null() for field in fields])
    return [(given & bad, shown, error_class, detail) for bad, shown, error_class, detail in checks]
