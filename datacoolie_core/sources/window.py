"""The watermark window: which rows an incremental read keeps, compared in each column's own dtype.

DataCoolie 0.1.7 compared Polars columns against ISO *strings*, so the second incremental run of a
real ``Date``/``Datetime`` column crashed (F-07/S-05). Here every bound is converted to the
column's dtype before comparing; a typed column is never compared against a string literal.

Window (S-04, W-08): per watermark column with a stored value ``col > bound``, OR-ed across columns;
a replay range is ``start <= col < end`` on its one column. Pseudo columns
(``__file_modification_time``, ``__date_folder_partition__``) are not data columns and are left
to the file reader. Column names resolve by the one rule of :mod:`datacoolie_core.transforms.resolve`
(exact, ignoring case, through the sanitizer), in the data and among the stored watermark's keys.

Conversion rules (:func:`coerce_bound`), by column dtype:

* ``Date``: a datetime is floored to its date (an aware one after conversion to UTC); ISO strings
  are parsed.
* ``Datetime(unit, zone)``: a date is midnight; a naive column takes an aware bound converted to
  UTC and made naive; an aware column takes a naive bound as being in the column's own zone and
  an aware one converted to that zone; ``ms`` columns floor the microseconds; ISO strings are parsed
  (0.1.7 watermark files store strings, and a schema hint may later make the column temporal).
* integers floor fractional bounds; ``Decimal`` bounds are floored to the column's scale; floats
  take any number. Numeric strings are parsed.
* ``String``: a string bound compares as a string. A typed bound (date, datetime, number) is
  compared as Spark compares it: the *column* is cast to the bound's type (Spark's non-ANSI cast,
  an unparsable value is null and never passes), e.g. a CSV column read as text against a replay
  range of datetimes.

When a conversion floors (loses precision), the comparison keeps its meaning on the column's
discrete values: ``col >= v`` becomes ``col > floor(v)`` and ``col < v`` becomes
``col <= floor(v)``; ``col > v`` is ``col > floor(v)`` already.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import ROUND_FLOOR, Decimal, InvalidOperation, localcontext
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from datacoolie_core.columns import PSEUDO_WATERMARK_COLUMNS
from datacoolie_core.errors import SourceError, TransformError, WatermarkError
from datacoolie_core.sources.base import ReadRange
from datacoolie_core.sources.csv_types import spark_string_cast
from datacoolie_core.suggestions import did_you_mean
from datacoolie_core.transforms.base import ColumnNameMode
from datacoolie_core.transforms.resolve import find_column

Op = Literal[">", ">=", "<", "<="]
_LOOSER: dict[str, Op] = {">": ">", ">=": ">", "<": "<=", "<=": "<="}
"""The operator that keeps a comparison's meaning after its bound was floored."""


@dataclass(frozen=True)
class Comparison:
    """``column <op> value``; ``column`` as written in the metadata, ``value`` as stored."""

    column: str
    op: Op
    value: Any


@dataclass(frozen=True)
class Window:
    """An OR of AND-groups of comparisons (one group per watermark column, or the replay range)."""

    groups: tuple[tuple[Comparison, ...], ...]
    mode: ColumnNameMode = "lower"
    """The run's ``column_name_mode``, for resolving the comparisons' columns."""


def is_pseudo(column: str) -> bool:
    return column.lower() in {c.lower() for c in PSEUDO_WATERMARK_COLUMNS}


def lookup(values: Mapping[str, Any] | None, column: str, mode: ColumnNameMode = "lower") -> Any:
    """The value stored for ``column`` under any spelling of it (see :func:`stored_key`), else ``None``."""
    key = stored_key(values, column, mode)
    return None if key is None or values is None else values[key]


def stored_key(values: Mapping[str, Any] | None, column: str, mode: ColumnNameMode = "lower") -> str | None:
    """The key of ``values`` (a stored watermark) that names ``column``, by the resolve rule.

    A watermark keeps the spelling it was first saved under, so metadata may switch between
    ``Order Date`` and ``order_date`` without losing it.

    Raises:
        WatermarkError: two stored keys name the column (the stored watermark must be repaired).
    """
    if not values:
        return None
    try:
        return find_column(list(values), column, mode)
    except TransformError as e:
        raise WatermarkError(
            f"the stored watermark has several keys for watermark column '{column}' ({e}); keep the one "
            "with the newest value and delete the others from the watermark file"
        ) from e


def build_window(
    watermark_columns: Iterable[str],
    lower_bounds: Mapping[str, Any] | None,
    read_range: ReadRange | None,
    mode: ColumnNameMode = "lower",
) -> Window | None:
    """The data window of a read, or ``None`` when every row qualifies.

    Args:
        watermark_columns: ``source.watermark_columns``.
        lower_bounds: effective lower bounds (after look-back); ignored when a range is given.
        read_range: an explicit replay range; replaces the watermark window entirely.
        mode: the run's ``column_name_mode``.
    """
    if read_range is not None:
        if is_pseudo(read_range.column):
            return None
        group = [Comparison(read_range.column, ">=", read_range.start)] if read_range.start is not None else []
        group += [Comparison(read_range.column, "<", read_range.end)] if read_range.end is not None else []
        return Window((tuple(group),), mode) if group else None
    groups = tuple(
        (Comparison(column, ">", value),)
        for column in watermark_columns
        if not is_pseudo(column) and (value := lookup(lower_bounds, column, mode)) is not None
    )
    return Window(groups, mode) if groups else None


def resolve_column(name: str, columns: Iterable[str], *, label: str, mode: ColumnNameMode = "lower") -> str:
    """The frame's spelling of watermark column ``name`` (exact, ignoring case, or through the sanitizer).

    Raises:
        SourceError: no such column (names the closest one), or several columns match.
    """
    names = list(columns)
    try:
        match = find_column(names, name, mode)
    except TransformError as e:
        raise SourceError(f"{label}: watermark column: {e}") from e
    if match is None:
        raise SourceError(
            f"{label}: watermark column '{name}' is not in the data{did_you_mean(name, names)} "
            f"(columns: {', '.join(names)}); fix source.watermark_columns"
        )
    return match


def window_predicate(window: Window, schema: Mapping[str, pl.DataType], *, label: str) -> pl.Expr:
    """The Polars predicate of ``window`` with every bound typed like its column."""
    groups = []
    for group in window.groups:
        parts = []
        for comparison in group:
            column = resolve_column(comparison.column, schema, label=label, mode=window.mode)
            parts.append(typed_comparison(pl.col(column), schema[column], comparison.op, comparison.value, label=label))
        groups.append(pl.all_horizontal(parts))
    return pl.any_horizontal(groups)


def typed_comparison(column: pl.Expr, dtype: pl.DataType, op: Op, value: Any, *, label: str) -> pl.Expr:
    """``column <op> value`` with ``value`` converted to ``dtype`` (see the module rules)."""
    if dtype == pl.Null:
        return pl.lit(False)  # an all-null column: null never passes a watermark bound
    cast_to = _bound_dtype(value) if dtype == pl.String else None
    if cast_to is not None:
        column, dtype = spark_string_cast(column, cast_to), cast_to
    effective, typed = typed_bound(op, value, dtype, column=column.meta.output_name(), label=label)
    literal = _literal(typed, dtype)
    compared = {">": column > literal, ">=": column >= literal, "<": column < literal, "<=": column <= literal}
    if dtype.is_float():  # Polars orders NaN above every number: it would pass every lower bound, every run
        return compared[effective] & column.is_not_nan()
    return compared[effective]


def typed_bound(op: Op, value: Any, dtype: pl.DataType, *, column: str, label: str) -> tuple[Op, Any]:
    """``(op, value)`` with ``value`` converted to ``dtype`` and ``op`` loosened if it was floored.

    Raises:
        SourceError: the value cannot be compared with a column of that dtype.
    """
    try:
        typed, exact = coerce_bound(value, dtype)
    except (ValueError, TypeError, ArithmeticError) as e:
        raise SourceError(
            f"{label}: cannot compare watermark value {value!r} with column '{column}' of type {dtype}: {e}; "
            "fix or delete the stored watermark, or cast the column with a schema hint"
        ) from e
    return (op if exact else _LOOSER[op]), typed


def coerce_bound(value: Any, dtype: pl.DataType) -> tuple[Any, bool]:
    """``value`` as a Python value of ``dtype``'s kind, and whether the conversion was exact.

    An inexact conversion always floors (the result is below ``value``).

    Raises:
        ValueError / TypeError: the value cannot be compared with a column of that dtype.
    """
    if isinstance(value, str) and not isinstance(dtype, pl.String | pl.Categorical | pl.Enum):
        value = _parse_text(value, dtype)
    if isinstance(dtype, pl.Datetime):
        return _to_datetime(value, dtype)
    if isinstance(dtype, pl.Date):
        return _to_date(value)
    if dtype.is_integer():
        return _to_int(value)
    if isinstance(dtype, pl.Decimal):
        return _to_decimal(value, dtype.scale)
    if dtype.is_float():
        return float(_number(value)), True
    if isinstance(dtype, pl.String):
        return _to_text(value), True
    if isinstance(dtype, pl.Boolean) and isinstance(value, bool):
        return value, True
    if isinstance(dtype, pl.Time) and isinstance(value, time):
        return value, True
    raise TypeError(f"a {type(value).__name__} bound does not apply to a {dtype} column")


def _bound_dtype(value: Any) -> pl.DataType | None:
    """The type Spark casts a string column to when comparing it with ``value`` (``None``: no cast)."""
    if isinstance(value, datetime):
        return pl.Datetime("us", "UTC")
    if isinstance(value, date):
        return pl.Date()
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return None
    if isinstance(value, int):
        return pl.Int64()
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        return pl.Decimal(38, max(0, -exponent if isinstance(exponent, int) else 0))
    return pl.Float64()


def _literal(typed: Any, dtype: pl.DataType) -> pl.Expr:
    if isinstance(dtype, pl.Decimal):
        return pl.lit(typed, dtype=pl.Decimal(38, dtype.scale))
    if dtype.is_integer():
        return pl.lit(typed)  # wider literal: a bound outside the column's range still compares
    return pl.lit(typed, dtype=dtype)


def _parse_text(text: str, dtype: pl.DataType) -> Any:
    stripped = text.strip()
    if isinstance(dtype, pl.Datetime | pl.Date):
        if len(stripped) == 10:
            return date.fromisoformat(stripped)
        return datetime.fromisoformat(stripped)
    if isinstance(dtype, pl.Time):
        return time.fromisoformat(stripped)
    if dtype.is_numeric():
        try:
            return int(stripped)
        except ValueError:
            pass
        try:
            return Decimal(stripped)
        except InvalidOperation:
            raise ValueError(f"{text!r} is not a number") from None
    raise TypeError(f"a string bound does not apply to a {dtype} column")


def _to_datetime(value: Any, dtype: pl.Datetime) -> tuple[datetime, bool]:
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    else:
        raise TypeError(f"a {type(value).__name__} bound does not apply to a {dtype} column")
    moment = _align_zone(moment, dtype.time_zone)
    if dtype.time_unit == "ms" and moment.microsecond % 1000:
        return moment.replace(microsecond=moment.microsecond - moment.microsecond % 1000), False
    return moment, True


def _align_zone(moment: datetime, zone: str | None) -> datetime:
    if zone is None:
        return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise ValueError(f"unknown time zone {zone!r}") from e
    return moment.astimezone(tz) if moment.tzinfo else moment.replace(tzinfo=tz)


def _to_date(value: Any) -> tuple[date, bool]:
    if isinstance(value, datetime):
        moment = value.astimezone(UTC) if value.tzinfo else value
        return moment.date(), moment.time() == time(0)
    if isinstance(value, date):
        return value, True
    raise TypeError(f"a {type(value).__name__} bound does not apply to a date column")


def _number(value: Any) -> int | float | Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise TypeError(f"a {type(value).__name__} bound does not apply to a numeric column")
    if isinstance(value, float | Decimal) and not math.isfinite(value):
        raise ValueError("the bound is not a finite number")
    return value


def _to_int(value: Any) -> tuple[int, bool]:
    number = _number(value)
    floored = math.floor(number)
    return floored, floored == number


def _to_decimal(value: Any, scale: int) -> tuple[Decimal, bool]:
    number = _number(value)
    exact = Decimal(str(number)) if isinstance(number, float) else Decimal(number)
    try:
        with localcontext() as context:  # the default 28 digits would refuse a DECIMAL(30,15) bound
            context.prec = max(context.prec, exact.adjusted() + scale + 2)
            floored = exact.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_FLOOR)
    except InvalidOperation as e:
        raise ValueError(f"{number} does not fit a decimal of scale {scale}") from e
    return floored, floored == exact


def _to_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, date | time):  # datetime is a date
        return value.isoformat()
    raise TypeError(f"a {type(value).__name__} bound against a string column would compare lexically")
