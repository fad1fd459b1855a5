from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.errors import TransformError
from datacoolie_core.transforms import DataMasker

from .conftest import MakeCtx

MASK_CASES = [
    ("redact-string", {"method": "redact", "value": "***"}, pl.Series(["a", None]), pl.Series(["***", None])),
    ("redact-int", {"method": "redact", "value": 0}, pl.Series([5, None]), pl.Series([0, None])),
    ("nullify", {"method": "nullify"}, pl.Series([1.5, 2.0]), pl.Series([None, None], dtype=pl.Float64)),
    (
        "partial",
        {"method": "partial", "keep_start": 2, "keep_end": 2},
        pl.Series(["4111222233334444", "abcd", "abc", "abcde", "", None]),
        pl.Series(["41*44", "*", "*", "ab*de", "", None]),
    ),
    (
        "partial-mask-char-keep-end-only",
        {"method": "partial", "keep_end": 3, "mask_char": "#"},
        pl.Series(["secret@x.org", "éé"]),
        pl.Series(["#org", "#"]),
    ),
    (
        "bucket-int",
        {"method": "numeric_bucket", "bucket_size": 10},
        pl.Series([0, 9, 10, 25, -1, None], dtype=pl.Int32),
        pl.Series([0, 0, 10, 20, -10, None], dtype=pl.Int32),
    ),
    (
        "bucket-float",
        {"method": "numeric_bucket", "bucket_size": 0.5},
        pl.Series([1.2, 1.7]),
        pl.Series([1.0, 1.5]),
    ),
    (
        "bucket-decimal",
        {"method": "numeric_bucket", "bucket_size": 1000},
        pl.Series([Decimal("52345.67")], dtype=pl.Decimal(10, 2)),
        pl.Series([Decimal("52000.00")], dtype=pl.Decimal(10, 2)),
    ),
    (
        "truncate-date-month",
        {"method": "date_truncate", "unit": "month"},
        pl.Series([date(2024, 5, 17)]),
        pl.Series([date(2024, 5, 1)]),
    ),
    (
        "truncate-timestamp-hour",
        {"method": "date_truncate", "unit": "hour"},
        pl.Series([datetime(2024, 5, 17, 13, 45, 12)]),
        pl.Series([datetime(2024, 5, 17, 13)]),
    ),
    (
        "truncate-timestamp-year",
        {"method": "date_truncate", "unit": "year"},
        pl.Series([datetime(2024, 5, 17, 13, 45)]),
        pl.Series([datetime(2024, 1, 1)]),
    ),
]


@pytest.mark.parametrize(("rule", "values", "masked"), [c[1:] for c in MASK_CASES], ids=[c[0] for c in MASK_CASES])
def test_methods(make_ctx: MakeCtx, rule: dict[str, Any], values: pl.Series, masked: pl.Series) -> None:
    ctx = make_ctx(transform={"masking_rules": [{**rule, "columns": ["V"]}]})

    out, label = DataMasker().apply(pl.LazyFrame({"v": values, "k": range(len(values))}), ctx)

    assert label == "DataMasker"
    assert_frame_equal(out.collect(), pl.DataFrame({"v": masked, "k": range(len(values))}))


@pytest.mark.parametrize(
    ("blocks", "message"),
    [
        ({"destination": {"load_type": "merge_upsert", "merge_keys": ["v"]}}, r"masks 'v', which is a merge key"),
        ({"destination": {"partition_columns": ["V"]}}, r"masks 'v', which is a partition column"),
        ({"masked": "__created_at"}, r"masks '__created_at', which is a framework column"),
    ],
    ids=["merge-key", "partition-column", "framework-column"],
)
def test_protected_columns_are_refused(make_ctx: MakeCtx, blocks: dict[str, Any], message: str) -> None:
    column = blocks.pop("masked", "v")
    ctx = make_ctx(transform={"masking_rules": [{"method": "nullify", "columns": [column]}]}, **blocks)

    with pytest.raises(TransformError, match=rf"masking_rules\[0\].columns {message}"):
        DataMasker().apply(pl.LazyFrame({"v": ["x"], "__created_at": ["t"]}), ctx)


@pytest.mark.parametrize(
    ("rule", "values", "message"),
    [
        ({"method": "partial"}, pl.Series([1]), "partial masking applies to string columns"),
        ({"method": "numeric_bucket", "bucket_size": 5}, pl.Series(["1"]), "numeric_bucket applies to numeric columns"),
        ({"method": "date_truncate", "unit": "hour"}, pl.Series([date(2024, 1, 1)]), "a date has no hour"),
        (
            {"method": "date_truncate", "unit": "day"},
            pl.Series(["2024-01-01"]),
            "applies to date and timestamp columns",
        ),
        ({"method": "redact", "value": "x"}, pl.Series([1]), "'x' is a str, but the column is Int64"),
    ],
    ids=["partial-int", "bucket-string", "hour-on-date", "truncate-string", "redact-wrong-type"],
)
def test_method_and_dtype_mismatches_are_errors(
    make_ctx: MakeCtx, rule: dict[str, Any], values: pl.Series, message: str
) -> None:
    ctx = make_ctx(transform={"masking_rules": [{**rule, "columns": ["v"]}]})

    with pytest.raises(
        TransformError, match=rf"masking_rules\[0\] \({rule['method']}\) cannot mask column 'v'.*{message}"
    ):
        DataMasker().apply(pl.LazyFrame({"v": values}), ctx)


def test_missing_columns_follow_the_policy(make_ctx: MakeCtx) -> None:
    rules = [{"method": "nullify", "columns": ["gone"]}]
    frame = pl.LazyFrame({"v": ["x"]})

    with pytest.raises(TransformError, match=r"masking_rules\[0\].columns names column 'gone'"):
        DataMasker().apply(frame, make_ctx(transform={"masking_rules": rules}))
    out, label = DataMasker().apply(
        frame, make_ctx(transform={"masking_rules": rules, "configure": {"missing_column_policy": "ignore"}})
    )
    assert label is None
    assert_frame_equal(out.collect(), frame.collect())
