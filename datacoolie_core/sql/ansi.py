"""Spark's ANSI mode (``spark.sql.ansi.enabled``) for casts and arithmetic: a bad row stops the load.

With ANSI off (Spark 3.5's default, and ours) a bad value becomes NULL or wraps. Spark 4 turns ANSI on:
the same row raises. With the setting on, the compiled expression checks each batch after computing it
(vectorised, no per-row Python) and raises :class:`SparkAnsiError` naming Spark's error class and the
first offending value, so the dataflow fails before anything is written.

Covered: ``CAST`` (explicit and Spark's implicit casts) of malformed text (``CAST_INVALID_INPUT``), of
a number too wide for an integer type (``CAST_OVERFLOW``) or a decimal precision
(``NUMERIC_VALUE_OUT_OF_RANGE``); integer ``+ - *`` overflow (``ARITHMETIC_OVERFLOW``); a zero divisor
of ``/ % DIV MOD PMOD`` (``DIVIDE_BY_ZERO``). ``TRY_CAST`` and the ``try_*`` functions keep NULL.
Functions: ``arr[i]`` and ``ELEMENT_AT`` beyond the array (``INVALID_ARRAY_INDEX``,
``INVALID_ARRAY_INDEX_IN_ELEMENT_AT``; ``GET`` and ``TRY_ELEMENT_AT`` keep NULL), and ``SIZE`` of a NULL
array is NULL (not -1); ``ELT`` beyond its strings; ``TO_TIMESTAMP``-style parsing with a pattern
(``CANNOT_PARSE_TIMESTAMP``); ``ABS``/``ROUND``/``BROUND`` integer overflow; ``MAKE_DATE``/``MAKE_TIMESTAMP``
of invalid fields (java.time's message, no error class). A STRING next to another type follows Spark's ANSI
type coercion (:func:`~datacoolie_core.sql.coercion.ansi_string_type`), its cast checked only on the rows
Spark evaluates it on (:func:`masked`). docs/sql-functions.md lists them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import polars as pl

from datacoolie_core.errors import TerminalError
from datacoolie_core.sql.coercion import is_integral, is_numeric, spark_name

_WHITESPACE = "".join(chr(code) for code in range(33))
ANSI_SETTING = "spark.sql.ansi.enabled"
"""The ``configure`` key (dataflow or connection) that turns ANSI mode on, named as Spark names it."""


class SparkAnsiError(TerminalError, ArithmeticError):
    """A row fails an ANSI-mode check: Spark 4 (or 3.5 with ANSI on) raises the same error class.

    Built by :meth:`of`; the one-argument form lets Polars re-raise it from inside a batch.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        found = re.match(r"\[([A-Z_.]+)\]", message)
        self.error_class = found.group(1) if found else ""

    @classmethod
    def of(cls, error_class: str, detail: str, sql: str, *, ansi: bool = True, where: str = "") -> SparkAnsiError:
        """The error of a failing row; ``ansi=False`` for an error Spark raises in either mode (such as
        an illegal SEQUENCE), which has no error class in Spark 3.5 (``error_class`` empty).

        An empty ``error_class`` with ``ansi`` on is an ANSI-only error Spark 3.5 raises without a class
        (java.time's ``DateTimeException`` of MAKE_DATE); ``where`` names the function that raised.
        """
        place = f"in {where} of SQL expression" if where else "in SQL expression"
        if not ansi:
            return cls(f"{detail} ({place} {sql!r}): Spark stops the query on this row too")
        prefix = f"[{error_class}] " if error_class else ""
        return cls(
            f"{prefix}{detail} ({place} {sql!r}, {ANSI_SETTING} is on); use TRY_CAST or a try_* function to get "
            f"NULL instead, fix the value, or turn {ANSI_SETTING} off"
        )


def enabled(configure: Any) -> bool | None:
    """What a ``configure`` mapping says of ANSI mode (``true``/``"true"``, ``false``/``"false"``; absent: None)."""
    if not isinstance(configure, dict) or ANSI_SETTING not in configure:
        return None
    value = configure[ANSI_SETTING]
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def enabled_for(dataflow: Any) -> bool:
    """ANSI mode for a dataflow's SQL: its own ``configure``, else its destination's then its source's
    connection ``configure``; off when none names :data:`ANSI_SETTING`."""
    candidates = [
        getattr(dataflow, "configure", None),
        _extras(getattr(getattr(dataflow, "destination", None), "connection", None)),
        _extras(getattr(getattr(dataflow, "source", None), "connection", None)),
    ]
    for configure in candidates:
        said = enabled(configure)
        if said is not None:
            return said
    return False


def _extras(connection: Any) -> dict[str, Any] | None:
    configure = getattr(connection, "configure", None)
    extras = getattr(configure, "extras", None)
    return extras if isinstance(extras, dict) else None


_REACHED: ContextVar[tuple[pl.Expr, bool] | None] = ContextVar("datacoolie_sql_reached", default=None)


@contextmanager
def reached_only(rows: pl.Expr, *, conditional: bool) -> Iterator[None]:
    """Guards built inside check ``rows`` only (within the enclosing ``reached_only``): the rows on which
    Spark evaluates the value being compiled (the right side of AND where the left is not FALSE, a
    COALESCE argument where the ones before it are NULL), so a bad value elsewhere raises nothing.

    ``conditional``: a branch of CASE/IF/COALESCE, which Spark's constant folding leaves alone; elsewhere
    (AND/OR) it folds a constant that fails, such as ``CAST('x' AS INT)``, and stops the query anyway.
    """
    outer = _REACHED.get()
    rows = rows.fill_null(False)
    token = _REACHED.set((rows, conditional) if outer is None else (outer[0] & rows, outer[1] or conditional))
    try:
        yield
    finally:
        _REACHED.reset(token)


Check = tuple[pl.Expr, pl.Expr, str, str]
"""One ANSI check: (the rows that fail, the value to show, Spark's error class, its message with ``{value}``)."""


def guard(
    value: pl.Expr, dtype: pl.DataType, bad: pl.Expr, offending: pl.Expr, error_class: str, detail: str, sql: str
) -> pl.Expr:
    """``value`` (of ``dtype``), raising :class:`SparkAnsiError` for a batch in which ``bad`` holds on a row.

    ``detail`` is Spark's message with ``{value}`` where the first offending value (``offending`` on
    that row) goes. The check is vectorised: one ``any`` per batch.
    """
    return guard_all(value, dtype, [(bad, offending, error_class, detail)], sql)


def guard_all(
    value: pl.Expr, dtype: pl.DataType, checks: list[Check], sql: str, *, ansi: bool = True, where: str = ""
) -> pl.Expr:
    """:func:`guard` for several checks: the first failing row decides which error is raised, as in Spark
    (within a row, the first failing check: list them in the order Spark tests them).

    ``ansi=False``: the checks are errors Spark raises with ANSI mode off too (see :meth:`SparkAnsiError.of`);
    ``where``: the function whose checks these are, named in the error.
    """

    reached = _REACHED.get()
    if reached is not None:
        checks = masked(checks, reached[0], conditional=reached[1])

    def check(rows: pl.Series) -> pl.Series:
        frame = rows.struct.unnest()
        failing = [frame.get_column(f"bad{k}").fill_null(False) for k in range(len(checks))]
        rows_failing = [series.arg_true() for series in failing]
        firsts = [(int(found[0]), k) for k, found in enumerate(rows_failing) if len(found)]
        if firsts:
            row, k = min(firsts)
            shown = frame.get_column(f"offending{k}")[row]
            raise SparkAnsiError.of(checks[k][2], checks[k][3].format(value=shown), sql, ansi=ansi, where=where)
        return frame.get_column("value").cast(dtype)

    fields = [value.alias("value")]
    for k, (bad, offending, _, _) in enumerate(checks):
        fields += [bad.alias(f"bad{k}"), offending.cast(pl.String).alias(f"offending{k}")]
    return pl.struct(fields).map_batches(check, is_elementwise=True, return_dtype=dtype)


def checked_cast(source_value: pl.Expr, source: pl.DataType, target: pl.DataType, result: pl.Expr, sql: str) -> pl.Expr:
    """``result`` (the ANSI-off cast of ``source_value``), raising where Spark's ANSI cast raises."""
    checks = cast_checks(source_value, source, target, result)
    return guard_all(result, target, checks, sql) if checks else result


def cast_checks(source_value: pl.Expr, source: pl.DataType, target: pl.DataType, result: pl.Expr) -> list[Check]:
    """The rows on which Spark's ANSI ``CAST(source_value AS target)`` raises (``result``: the ANSI-off cast),
    in the order Spark tests them; empty when the cast cannot fail."""
    failed = source_value.is_not_null() & result.is_null()
    if source == pl.String() and is_integral(target):  # ANSI reads whole numbers only: '1.5' is malformed
        whole = source_value.str.strip_chars(_WHITESPACE).str.contains(r"^[+-]?\d+$")
        failed = failed | (source_value.is_not_null() & ~whole)
    if source == pl.String() and isinstance(target, pl.Decimal):  # a finite number too wide is out of range
        number = source_value.str.strip_chars(_WHITESPACE).cast(pl.Float64, strict=False)
        too_wide = f"{{value}} cannot be represented as {spark_name(target)}."
        malformed = f'The value \'{{value}}\' of the type "STRING" cannot be cast to "{spark_name(target)}" because it is malformed.'
        return [(failed & number.is_finite(), source_value, "NUMERIC_VALUE_OUT_OF_RANGE", too_wide),
                (failed & ~number.is_finite().fill_null(False), source_value, "CAST_INVALID_INPUT", malformed)]  # fmt: skip
    if source == pl.String() and target != pl.String():
        detail = f'The value \'{{value}}\' of the type "STRING" cannot be cast to "{spark_name(target)}" because it is malformed.'
        return [(failed, source_value, "CAST_INVALID_INPUT", detail)]
    if isinstance(source, pl.Datetime) and (is_integral(target) or isinstance(target, pl.Decimal)):
        source_value, source = source_value.dt.epoch("us").floordiv(1_000_000), pl.Int64()
    if source in (pl.Float32(), pl.Float64()) and isinstance(target, pl.Datetime):
        detail = (
            f'The value {{value}} of the type "DOUBLE" cannot be cast to "{spark_name(target)}" due to an overflow.'
        )
        wide = source_value.is_finite() & (source_value.abs() >= 9.2e12)
        malformed = f'The value {{value}} of the type "DOUBLE" cannot be cast to "{spark_name(target)}" because it is malformed.'
        return [(wide, source_value, "CAST_OVERFLOW", detail),
                (~source_value.is_finite(), source_value, "CAST_INVALID_INPUT", malformed)]  # fmt: skip
    if is_numeric(source) and is_integral(target):
        narrowed = _out_of_range(source_value, source, target)
        detail = (
            f'The value {{value}} of the type "{spark_name(source)}" cannot be cast to "{spark_name(target)}" '
            "due to an overflow."
        )
        return [(narrowed, source_value, "CAST_OVERFLOW", detail)]
    if is_numeric(source) and isinstance(target, pl.Decimal):
        if source in (pl.Float32(), pl.Float64()):  # NaN and infinities stay NULL
            failed = failed & source_value.is_finite()
        detail = f"{{value}} cannot be represented as {spark_name(target)}."
        return [(failed, source_value, "NUMERIC_VALUE_OUT_OF_RANGE", detail)]
    return []


def masked(checks: list[Check], reached: pl.Expr, *, conditional: bool = False) -> list[Check]:
    """``checks`` on the rows where ``reached`` is TRUE only: Spark evaluates a CASE branch, an IF side or
    a COALESCE argument (``conditional``), or an operator's right side, on those rows alone.

    Outside a conditional branch, a check of constants that fails is kept on every row: Spark's constant
    folding evaluates ``'x'`` cast to BIGINT in ``i IS NULL OR n = 'x'`` before any row is read.
    """
    return [
        (bad if not conditional and _always(bad) else reached.fill_null(False) & bad, shown, error_class, detail)
        for bad, shown, error_class, detail in checks
    ]


def _always(bad: pl.Expr) -> bool:
    """Whether ``bad`` reads no column and holds (decided at compile time)."""
    if bad.meta.root_names():
        return False
    try:
        found = pl.select(bad.fill_null(False).alias("bad")).to_series()
    except Exception:  # a constant Polars cannot evaluate alone: treat it as a column
        return False
    return len(found) == 1 and bool(found[0])


_BOUNDS: dict[pl.DataType, int] = {pl.Int8(): 2**7, pl.Int16(): 2**15, pl.Int32(): 2**31, pl.Int64(): 2**63}


def _out_of_range(value: pl.Expr, source: pl.DataType, target: pl.DataType) -> pl.Expr:
    half = _BOUNDS[target]
    if source in (pl.Float32(), pl.Float64()):
        whole = value.cast(pl.Float64)
        return whole.is_nan() | (whole >= float(half)) | (whole <= -float(half) - 1.0)
    if isinstance(source, pl.Decimal):
        whole = value.cast(pl.Int128, strict=False)  # truncates toward zero, as Spark does
        return whole.is_null() & value.is_not_null() | (whole >= half) | (whole < -half)
    wide = value.cast(pl.Int128)
    return (wide >= half) | (wide < -half)


def ansi_refusal(source: pl.DataType, target: pl.DataType) -> str | None:
    """Why Spark's analyzer refuses ``CAST(source AS target)`` in ANSI mode (it allows it with ANSI off)."""
    if source == pl.Date() and (is_numeric(target) or target == pl.Boolean()):
        return f"cannot cast DATE to {spark_name(target)}"
    if source == pl.Boolean() and isinstance(target, pl.Datetime):
        return f"cannot cast BOOLEAN to {spark_name(target)}"
    if isinstance(source, pl.Datetime) and target == pl.Boolean():
        return f"cannot cast {spark_name(source)} to BOOLEAN"
    return None
