from __future__ import annotations

import logging
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

import polars as pl
import pytest
from polars.exceptions import InvalidOperationError
from polars.testing import assert_frame_equal

from datacoolie_core.errors import TransformError
from datacoolie_core.transforms import SchemaConverter
from datacoolie_core.transforms.casts import iso_timestamp, java_to_strftime

from .conftest import MakeCtx

UTC = pl.Datetime("us", "UTC")


@pytest.mark.parametrize(
    ("pattern", "strftime"),
    [
        ("yyyy-MM-dd", "%Y-%m-%d"),
        ("dd/MM/yy", "%d/%m/%y"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSS", "%Y-%m-%dT%H:%M:%S.%3f"),
        ("yyyyMMddHHmmss", "%Y%m%d%H%M%S"),
        ("yyyy-MM-dd HH:mm:ssXXX", "%Y-%m-%d %H:%M:%S%:z"),
        ("yyyy''MM", "%Y'%m"),
        ("%d.%m.%Y", "%d.%m.%Y"),
    ],
    ids=["iso-date", "short-year", "quoted-T-millis", "compact", "offset", "escaped-quote", "strftime-passthrough"],
)
def test_java_patterns_translate_to_strftime(pattern: str, strftime: str) -> None:
    assert java_to_strftime(pattern) == strftime


def test_java_pattern_with_an_unknown_letter_is_refused() -> None:
    with pytest.raises(ValueError, match="'GG' has no strftime equivalent"):
        java_to_strftime("yyyy GG")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-01T10:00:00+02:00", datetime(2024, 1, 1, 8)),
        ("2024-01-01T10:00:00Z", datetime(2024, 1, 1, 10)),
        ("2024-01-01 10:00:00-0130", datetime(2024, 1, 1, 11, 30)),
        ("2024-01-01T10:00:00+05", datetime(2024, 1, 1, 5)),
        ("2024-01-01 10:00", datetime(2024, 1, 1, 10)),
        ("2024-01-01T10:00:00.123456", datetime(2024, 1, 1, 10, 0, 0, 123456)),
        ("2024-01-01", datetime(2024, 1, 1)),
    ],
    ids=["offset-converted", "zulu", "compact-offset", "hour-offset", "naive-no-seconds", "fraction", "date-only"],
)
def test_iso_strings_parse_row_by_row_to_utc(text: str, expected: datetime) -> None:
    # every row in one frame: mixed offsets and naive values must not depend on the first row
    out = pl.DataFrame({"t": ["2000-01-01T00:00:00+09:00", text]}).select(iso_timestamp(pl.col("t")))

    assert out.schema["t"] == UTC
    assert out["t"].dt.replace_time_zone(None).to_list() == [datetime(1999, 12, 31, 15), expected]


def test_hints_cast_found_columns_case_insensitively(make_ctx: MakeCtx) -> None:
    hints = [
        {"column_name": "Customer_ID", "data_type": "long"},
        {"column_name": "signup_date", "data_type": "date", "format": "dd/MM/yyyy"},
        {"column_name": "amount", "data_type": "decimal", "precision": 8, "scale": 2},
        {"column_name": "active", "data_type": "boolean"},
        {"column_name": "score", "data_type": "double"},
    ]
    ctx = make_ctx(transform={"schema_hints": hints})
    frame = pl.DataFrame(
        {
            "customer_id": [" 10", "11"],
            "signup_date": ["31/01/2024", None],
            "amount": ["12.345", "-0.005"],
            "active": ["true", "N"],
            "score": ["1.5", "2"],
        }
    )

    out, label = SchemaConverter().apply(frame.lazy(), ctx)

    assert label == "SchemaConverter(5 casts)"
    expected = pl.DataFrame(
        {
            "customer_id": [10, 11],
            "signup_date": [date(2024, 1, 31), None],
            "amount": pl.Series([Decimal("12.35"), Decimal("-0.01")], dtype=pl.Decimal(8, 2)),
            "active": [True, False],
            "score": [1.5, 2.0],
        }
    )
    assert_frame_equal(out.collect(), expected)


TIMESTAMP_CASES: list[tuple[str, pl.Series, dict[str, Any], pl.Series]] = [
    (
        "string-with-format-stamped-utc",
        pl.Series(["2024-01-31 10:30"]),
        {"data_type": "timestamp", "format": "yyyy-MM-dd HH:mm"},
        pl.Series([datetime(2024, 1, 31, 10, 30)], dtype=pl.Datetime("us")).dt.replace_time_zone("UTC"),
    ),
    (
        "string-with-offset-format-converted",
        pl.Series(["2024-01-31 10:30:00+0200"]),
        {"data_type": "timestamp", "format": "yyyy-MM-dd HH:mm:ssZ"},
        pl.Series([datetime(2024, 1, 31, 8, 30)], dtype=pl.Datetime("us")).dt.replace_time_zone("UTC"),
    ),
    (
        "aware-other-zone-converted",
        pl.Series([datetime(2024, 1, 31, 10)]).dt.replace_time_zone("Europe/Paris"),
        {"data_type": "timestamp"},
        pl.Series([datetime(2024, 1, 31, 9)], dtype=pl.Datetime("us")).dt.replace_time_zone("UTC"),
    ),
    (
        "naive-ns-stamped-no-shift",
        pl.Series([datetime(2024, 1, 31, 10)], dtype=pl.Datetime("ns")),
        {"data_type": "timestamp"},
        pl.Series([datetime(2024, 1, 31, 10)], dtype=pl.Datetime("us")).dt.replace_time_zone("UTC"),
    ),
    (
        "ntz-hint-then-relabelled",
        pl.Series(["2024-01-31T10:00:00+01:00"]),
        {"data_type": "timestamp_ntz"},
        pl.Series([datetime(2024, 1, 31, 9)], dtype=pl.Datetime("us")).dt.replace_time_zone("UTC"),
    ),
    (
        "date-to-timestamp",
        pl.Series([date(2024, 1, 31)]),
        {"data_type": "timestamp"},
        pl.Series([datetime(2024, 1, 31)], dtype=pl.Datetime("us")).dt.replace_time_zone("UTC"),
    ),
    (
        "timestamp-to-date",
        pl.Series([datetime(2024, 1, 31, 23, 59)]),
        {"data_type": "date"},
        pl.Series([date(2024, 1, 31)]),
    ),
    (
        "time-from-string",
        pl.Series(["10:15:00", "23:59:59.5"]),
        {"data_type": "time"},
        pl.Series([time(10, 15), time(23, 59, 59, 500000)]),
    ),
    (
        "iso-timestamp-string-to-date",
        pl.Series(["2024-01-31T23:59:00", "2024-02-01"]),
        {"data_type": "date"},
        pl.Series([date(2024, 1, 31), date(2024, 2, 1)]),
    ),
]


@pytest.mark.parametrize(
    ("source", "hint", "expected"), [c[1:] for c in TIMESTAMP_CASES], ids=[c[0] for c in TIMESTAMP_CASES]
)
def test_temporal_hints(make_ctx: MakeCtx, source: pl.Series, hint: dict[str, Any], expected: pl.Series) -> None:
    ctx = make_ctx(transform={"schema_hints": [{"column_name": "ts", **hint}]})

    out, _ = SchemaConverter().apply(pl.LazyFrame({"ts": source}), ctx)

    assert_frame_equal(out.collect(), pl.DataFrame({"ts": expected}))


def test_value_that_does_not_fit_the_hint_fails_the_collect(make_ctx: MakeCtx) -> None:
    ctx = make_ctx(transform={"schema_hints": [{"column_name": "id", "data_type": "long"}]})

    out, _ = SchemaConverter().apply(pl.LazyFrame({"id": ["1", "x1"]}), ctx)

    with pytest.raises(InvalidOperationError, match=r"x1"):
        out.collect()


def test_missing_hint_columns_are_one_warning(make_ctx: MakeCtx, caplog: pytest.LogCaptureFixture) -> None:
    hints = [
        {"column_name": "a", "data_type": "int"},
        {"column_name": "gone", "data_type": "int"},
        {"column_name": "lost", "data_type": "date"},
        {"column_name": "off", "data_type": "date", "is_active": False},
    ]
    ctx = make_ctx(transform={"schema_hints": hints})

    with caplog.at_level(logging.WARNING, logger="datacoolie.transforms"):
        out, label = SchemaConverter().apply(pl.LazyFrame({"a": ["1"]}), ctx)

    assert label == "SchemaConverter(1 casts)"
    assert_frame_equal(out.collect(), pl.DataFrame({"a": pl.Series([1], dtype=pl.Int32)}))
    assert [r.getMessage() for r in caplog.records] == [
        "SchemaConverter: dataflow 'orders_to_silver': 2 active schema-hint column(s) not found and skipped: "
        "['gone', 'lost']"
    ]


def test_unknown_type_name_is_an_error(make_ctx: MakeCtx) -> None:
    ctx = make_ctx(transform={"schema_hints": [{"column_name": "a", "data_type": "lnog"}]})

    with pytest.raises(
        TransformError, match=r"column 'a' has data_type 'lnog': unknown data type 'lnog'; did you mean 'long'\?"
    ):
        SchemaConverter().apply(pl.LazyFrame({"a": ["1"]}), ctx)


def test_untranslatable_format_is_an_error(make_ctx: MakeCtx) -> None:
    ctx = make_ctx(transform={"schema_hints": [{"column_name": "d", "data_type": "date", "format": "yyyy-ww"}]})

    with pytest.raises(TransformError, match=r"column 'd' has format 'yyyy-ww': .*'ww' has no strftime equivalent"):
        SchemaConverter().apply(pl.LazyFrame({"d": ["2024-01"]}), ctx)


def test_hints_are_not_applied_when_the_connection_disables_them(make_ctx: MakeCtx) -> None:
    ctx = make_ctx(
        source={"connection_name": "no_hints"}, transform={"schema_hints": [{"column_name": "a", "data_type": "long"}]}
    )
    frame = pl.LazyFrame({"a": ["1"]})

    out, label = SchemaConverter().apply(frame, ctx)

    assert label is None
    assert_frame_equal(out.collect(), frame.collect())


def test_naive_timestamps_are_relabelled_utc_unless_disabled(make_ctx: MakeCtx) -> None:
    frame = pl.LazyFrame({"t": [datetime(2024, 1, 1, 10)], "s": ["x"]})
    naive = frame.collect()

    on, on_label = SchemaConverter().apply(frame, make_ctx())
    off, off_label = SchemaConverter().apply(
        frame, make_ctx(transform={"configure": {"convert_timestamp_ntz": "false"}})
    )

    assert on_label == "SchemaConverter(0 casts)"
    assert_frame_equal(on.collect(), naive.with_columns(pl.col("t").dt.replace_time_zone("UTC")))
    assert off_label is None
    assert_frame_equal(off.collect(), naive)
