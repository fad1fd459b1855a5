from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.errors import SourceError, WatermarkError
from datacoolie_core.sources.base import ReadRange
from datacoolie_core.sources.window import (
    Comparison,
    Window,
    build_window,
    coerce_bound,
    lookup,
    resolve_column,
    stored_key,
    typed_bound,
    window_predicate,
)

AMS = ZoneInfo("Europe/Amsterdam")
PLUS2 = timezone(timedelta(hours=2))


@pytest.mark.parametrize(
    ("value", "dtype", "expected", "exact"),
    [
        (date(2024, 1, 2), pl.Date(), date(2024, 1, 2), True),
        (datetime(2024, 1, 2), pl.Date(), date(2024, 1, 2), True),
        (datetime(2024, 1, 2, 10), pl.Date(), date(2024, 1, 2), False),
        (datetime(2024, 1, 2, 1, tzinfo=PLUS2), pl.Date(), date(2024, 1, 1), False),
        ("2024-01-02", pl.Date(), date(2024, 1, 2), True),
        ("2024-01-02T00:00:00", pl.Date(), date(2024, 1, 2), True),
        (date(2024, 1, 2), pl.Datetime("us"), datetime(2024, 1, 2), True),
        (datetime(2024, 1, 2, 10, tzinfo=PLUS2), pl.Datetime("us"), datetime(2024, 1, 2, 8), True),
        (datetime(2024, 1, 2, 10), pl.Datetime("us", "UTC"), datetime(2024, 1, 2, 10, tzinfo=ZoneInfo("UTC")), True),
        (datetime(2024, 1, 2, 10), pl.Datetime("us", "Europe/Amsterdam"), datetime(2024, 1, 2, 10, tzinfo=AMS), True),
        (datetime(2024, 1, 2, 10, tzinfo=UTC), pl.Datetime("ns", "Europe/Amsterdam"), datetime(2024, 1, 2, 11, tzinfo=AMS), True),
        (datetime(2024, 1, 2, 10, 0, 0, 123456), pl.Datetime("ms"), datetime(2024, 1, 2, 10, 0, 0, 123000), False),
        (datetime(2024, 1, 2, 10, 0, 0, 123000), pl.Datetime("ms"), datetime(2024, 1, 2, 10, 0, 0, 123000), True),
        (datetime(2024, 1, 2, 10, 0, 0, 123456), pl.Datetime("ns"), datetime(2024, 1, 2, 10, 0, 0, 123456), True),
        ("2024-01-02T10:00:00", pl.Datetime("us"), datetime(2024, 1, 2, 10), True),
        ("2024-01-02 10:00:00+02:00", pl.Datetime("us", "UTC"), datetime(2024, 1, 2, 8, tzinfo=ZoneInfo("UTC")), True),
        ("2024-01-02", pl.Datetime("us"), datetime(2024, 1, 2), True),
        (5, pl.Int32(), 5, True),
        (5.5, pl.Int64(), 5, False),
        (Decimal("-1.5"), pl.Int64(), -2, False),
        ("17", pl.UInt16(), 17, True),
        (5, pl.Float64(), 5.0, True),
        ("2.5", pl.Float32(), 2.5, True),
        (Decimal("1.234"), pl.Decimal(12, 2), Decimal("1.23"), False),
        (Decimal("-1.234"), pl.Decimal(12, 2), Decimal("-1.24"), False),
        (3, pl.Decimal(12, 2), Decimal("3.00"), True),
        ("1.5", pl.Decimal(12, 2), Decimal("1.50"), True),
        ("2024-01-02T10:00:00", pl.String(), "2024-01-02T10:00:00", True),
        (datetime(2024, 1, 2, 10), pl.String(), "2024-01-02T10:00:00", True),
        (date(2024, 1, 2), pl.String(), "2024-01-02", True),
        (True, pl.Boolean(), True, True),
        (time(10, 30), pl.Time(), time(10, 30), True),
    ],
    ids=[
        "date-date", "midnight-datetime-on-date", "datetime-on-date-floors", "aware-on-date-via-utc", "iso-on-date",
        "iso-midnight-on-date", "date-on-datetime-is-midnight", "aware-on-naive-to-utc-naive", "naive-on-utc-taken-as-utc",
        "naive-on-zoned-taken-in-zone", "aware-on-zoned-converted", "ms-floors-micros", "ms-exact", "ns-exact",
        "iso-on-datetime", "iso-offset-on-utc", "iso-date-on-datetime", "int", "float-on-int-floors",
        "negative-decimal-floors", "numeric-string-on-uint", "int-on-float", "string-on-float", "decimal-floors-to-scale",
        "negative-decimal-floors-down", "int-on-decimal", "string-on-decimal", "string-on-string",
        "datetime-on-string-iso", "date-on-string-iso", "bool", "time",
    ],
)  # fmt: skip
def test_coerce_bound(value: Any, dtype: pl.DataType, expected: Any, exact: bool) -> None:
    typed, was_exact = coerce_bound(value, dtype)
    assert typed == expected
    assert type(typed) is type(expected)
    assert was_exact is exact
    if isinstance(expected, datetime):
        assert (typed.tzinfo is None) == (expected.tzinfo is None)
        assert typed.utcoffset() == expected.utcoffset()


@pytest.mark.parametrize(
    ("value", "dtype"),
    [(5, pl.String()), ("yesterday", pl.Date()), ("abc", pl.Int64()), (date(2024, 1, 1), pl.Int64()),
     (float("nan"), pl.Int64()), (5, pl.List(pl.Int64)), (True, pl.Int64())],
    ids=["int-on-string", "garbage-on-date", "garbage-on-int", "date-on-int", "nan", "list-column", "bool-on-int"],
)  # fmt: skip
def test_coerce_bound_refuses(value: Any, dtype: pl.DataType) -> None:
    with pytest.raises((ValueError, TypeError, ArithmeticError)):
        coerce_bound(value, dtype)


@pytest.mark.parametrize(
    ("op", "value", "expected"),
    [(">", 5.5, (">", 5)), (">=", 5.5, (">", 5)), ("<", 5.5, ("<=", 5)), ("<=", 5.5, ("<=", 5)),
     (">=", 5, (">=", 5)), ("<", 5, ("<", 5))],
    ids=["gt", "gte-loosened", "lt-loosened", "lte", "gte-exact", "lt-exact"],
)  # fmt: skip
def test_typed_bound_keeps_meaning_when_floored(op: Any, value: Any, expected: tuple[str, Any]) -> None:
    assert typed_bound(op, value, pl.Int64(), column="n", label="t") == expected


def test_typed_bound_names_column_and_hint() -> None:
    with pytest.raises(SourceError, match=r"column 'ts' of type Date.*fix or delete the stored watermark"):
        typed_bound(">", "not a date", pl.Date(), column="ts", label="source 'x'")


def test_build_window_ors_columns_and_skips_pseudo_and_unset() -> None:
    window = build_window(
        ["ts", "__file_modification_time", "id", "missing"], {"TS": 1, "id": 2, "__file_modification_time": 3}, None
    )
    assert window == Window(((Comparison("ts", ">", 1),), (Comparison("id", ">", 2),)))


def test_build_window_range_replaces_watermark() -> None:
    window = build_window(["ts"], {"ts": 1}, ReadRange("id", 10, 20))
    assert window == Window(((Comparison("id", ">=", 10), Comparison("id", "<", 20)),))
    assert build_window(["ts"], None, ReadRange("__file_modification_time", 1, 2)) is None
    assert build_window(["ts"], None, None) is None


def test_resolve_column_case_insensitive_and_suggests() -> None:
    assert resolve_column("UPDATED_AT", ["id", "updated_at"], label="s") == "updated_at"
    with pytest.raises(SourceError, match=r"'updatd_at' is not in the data; did you mean 'updated_at'\?"):
        resolve_column("updatd_at", ["id", "updated_at"], label="s")


def test_resolve_column_through_the_sanitizer_in_the_run_mode() -> None:
    assert resolve_column("order_date", ["Order Date", "id"], label="s") == "Order Date"
    assert resolve_column("Order Date", ["order_date", "id"], label="s") == "order_date"
    assert resolve_column("order_date", ["orderDate"], label="s", mode="snake") == "orderDate"
    with pytest.raises(
        SourceError, match=r"s: watermark column: column 'order_date' matches \['Order Date', 'order-date'\]"
    ):
        resolve_column("order_date", ["Order Date", "order-date"], label="s")


@pytest.mark.parametrize(
    ("stored", "column", "key"),
    [
        ({"Order Date": 1}, "Order Date", "Order Date"),
        ({"Order Date": 1}, "order_date", "Order Date"),
        ({"order_date": 1}, "Order Date", "order_date"),
        ({"ORDER DATE": 1, "n": 2}, "order date", "ORDER DATE"),
        ({"Order Date": 1, "order_date": 2}, "order_date", "order_date"),
        ({"n": 1}, "Order Date", None),
        (None, "Order Date", None),
    ],
    ids=["exact", "stored-raw-read-sanitized", "stored-sanitized-read-raw", "ignoring-case", "exact-wins",
         "absent", "first-run"],
)  # fmt: skip
def test_a_stored_watermark_reads_under_any_spelling_of_its_column(
    stored: dict[str, Any] | None, column: str, key: str | None
) -> None:
    assert stored_key(stored, column) == key
    assert lookup(stored, column) == (stored[key] if stored and key else None)


def test_two_stored_keys_for_one_column_is_an_error_not_a_guess() -> None:
    with pytest.raises(WatermarkError, match=r"several keys for watermark column 'order_date'.*delete the others"):
        lookup({"Order Date": 1, "order-date": 2}, "order_date")


def test_build_window_reads_the_stored_value_under_another_spelling() -> None:
    window = build_window(["order_date"], {"Order Date": "2025-01-01"}, None, "lower")
    assert window == Window(((Comparison("order_date", ">", "2025-01-01"),),), "lower")
    frame = pl.DataFrame({"Order Date": ["2024-12-31", "2025-01-02"]})
    assert _keep(frame, window)["Order Date"].to_list() == ["2025-01-02"]


def _keep(frame: pl.DataFrame, window: Window) -> pl.DataFrame:
    return frame.filter(window_predicate(window, frame.schema, label="test"))


def test_predicate_ors_two_columns() -> None:
    frame = pl.DataFrame({"id": [1, 2, 3, 4], "ts": [date(2024, 1, d) for d in (9, 1, 2, 3)]})
    window = build_window(["id", "TS"], {"id": 3, "TS": "2024-01-02"}, None)
    assert window is not None
    assert _keep(frame, window)["id"].to_list() == [1, 4]


def test_predicate_aware_column_against_string_and_naive_bounds() -> None:
    ts = [datetime(2024, 1, 1, h, tzinfo=UTC) for h in (8, 9, 10)]
    frame = pl.DataFrame({"ts": ts}).with_columns(pl.col("ts").dt.convert_time_zone("Europe/Amsterdam"))
    # each bound is 09:00 UTC; a naive bound is taken in the column's zone (Amsterdam, UTC+1 in winter)
    for bound in ("2024-01-01T10:00:00+01:00", datetime(2024, 1, 1, 10), datetime(2024, 1, 1, 10, tzinfo=AMS)):
        kept = _keep(frame, Window(((Comparison("ts", ">", bound),),)))
        assert_frame_equal(kept, frame.tail(1))


def test_predicate_strict_and_range_semantics() -> None:
    frame = pl.DataFrame({"n": [1, 2, 3, 4]})
    assert _keep(frame, build_window(["n"], {"n": 2}, None))["n"].to_list() == [3, 4]  # type: ignore[arg-type]
    assert _keep(frame, build_window([], None, ReadRange("N", 2, 4)))["n"].to_list() == [2, 3]  # type: ignore[arg-type]
    assert _keep(frame, build_window([], None, ReadRange("n", 1.5, 3.5)))["n"].to_list() == [2, 3]  # type: ignore[arg-type]


def test_predicate_on_all_null_column_keeps_nothing() -> None:
    frame = pl.DataFrame({"ts": [None, None]})
    assert _keep(frame, Window(((Comparison("ts", ">", 1),),))).height == 0
