from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.errors import SourceShapeError
from datacoolie_core.sources import ReadRequest
from datacoolie_core.sources.collect_and_watermark import (
    collect_scan,
    new_watermark,
    plan_read,
    summarize_scan,
)
from datacoolie_core.sql import SqlExpressionError
from tests.core.sources.helpers import REFERENCE_TIME, make_source

SOURCE = make_source(
    {"format": "function"}, python_function="x.y", watermark_columns=["ts", "n", "__file_modification_time"]
)


def test_a_collected_read_applies_window_then_filter_and_records_runtime() -> None:
    source = SOURCE.model_copy(update={"filter_expression": "n < 4"})
    lf = pl.LazyFrame({"ts": [datetime(2024, 1, d) for d in (1, 2, 3, 4)], "n": [1, 2, 3, 4]})
    request = ReadRequest(watermark={"ts": datetime(2024, 1, 1)}, reference_time=REFERENCE_TIME)
    scan = plan_read(lf, source, request, source_action={"k": "v"}, pseudo_watermark={"__file_modification_time": 1})
    result = collect_scan(scan)
    assert result is not None
    assert_frame_equal(result.data, pl.DataFrame({"ts": [datetime(2024, 1, d) for d in (2, 3)], "n": [2, 3]}))
    runtime = result.runtime
    assert (runtime.rows_read, runtime.source_action) == (2, {"k": "v"})
    assert runtime.watermark_before == {"ts": datetime(2024, 1, 1)}
    assert runtime.watermark_effective == {"ts": datetime(2024, 1, 1)}
    assert runtime.watermark_after == {"ts": datetime(2024, 1, 3), "n": 3, "__file_modification_time": 1}


def test_a_collected_read_of_zero_rows_is_none() -> None:
    lf = pl.LazyFrame({"ts": [datetime(2024, 1, 1)], "n": [1]})
    request = ReadRequest(watermark={"n": 1}, reference_time=REFERENCE_TIME)
    assert collect_scan(plan_read(lf, SOURCE, request, source_action={})) is None


def test_filter_expression_with_unknown_column_names_the_source() -> None:
    source = SOURCE.model_copy(update={"filter_expression": "statuz = 'ok'"})
    lf = pl.LazyFrame({"ts": [datetime(2024, 1, 1)], "n": [1], "status": ["ok"]})
    with pytest.raises(SqlExpressionError, match=r"source 'x.y'.*filter_expression.*'statuz'"):
        plan_read(lf, source, ReadRequest(reference_time=REFERENCE_TIME), source_action={})


def test_new_watermark_aware_max_in_utc_and_null_columns_omitted() -> None:
    frame = pl.DataFrame(
        {"ts": [datetime(2024, 1, 1, 10, tzinfo=UTC), datetime(2024, 1, 1, 12, tzinfo=UTC)], "n": [None, None]}
    ).with_columns(pl.col("ts").dt.convert_time_zone("Asia/Tokyo"))
    after = new_watermark(frame, ["TS", "n", "__file_modification_time"], label="s")
    assert after == {"TS": datetime(2024, 1, 1, 12, tzinfo=UTC)}
    assert after["TS"].utcoffset().total_seconds() == 0
    assert after["TS"].tzinfo is UTC


@pytest.mark.parametrize(
    ("stored", "key"),
    [(None, "order_date"), ({"Order Date": "2025-01-01"}, "Order Date"), ({"ORDER_DATE": "2025-01-01"}, "ORDER_DATE")],
    ids=["first-save-as-metadata-spells-it", "keeps-the-stored-raw-spelling", "keeps-the-stored-upper-spelling"],
)
def test_new_watermark_keeps_the_key_it_was_first_saved_under(stored: dict[str, str] | None, key: str) -> None:
    frame = pl.DataFrame({"Order Date": ["2025-01-01", "2025-01-03"]})
    assert new_watermark(frame, ["order_date"], label="s", stored=stored) == {key: "2025-01-03"}


def test_a_read_is_shape_checked_before_it_is_planned() -> None:
    source = SOURCE.model_copy(update={"watermark_columns": ["Order Date"]})
    lf = pl.LazyFrame({"ts": [datetime(2024, 1, 1)]})
    with pytest.raises(SourceShapeError, match=r"source 'x.y' \(connection 'src'\): the source lacks 'Order Date'"):
        plan_read(lf, source, ReadRequest(reference_time=REFERENCE_TIME), source_action={})


SUMMARY_CASES = [
    pytest.param(pl.Series("w", ["a" * 100 + "z", "a" * 100 + "b", None]), id="long-strings"),
    pytest.param(pl.Series("w", [None, None], pl.Int32), id="null-only"),
    pytest.param(pl.Series("w", [datetime(2024, 1, 2, tzinfo=UTC), datetime(2024, 1, 3, tzinfo=UTC)]).dt.convert_time_zone("America/New_York"), id="tz-aware"),
    pytest.param(pl.Series("w", [1, 5]).cast(pl.Datetime("ns")), id="nanoseconds"),
]  # fmt: skip


@pytest.mark.parametrize("column", SUMMARY_CASES)
def test_summarize_scan_counts_and_takes_the_watermark_as_collect_scan_does(column: pl.Series) -> None:
    source = SOURCE.model_copy(update={"watermark_columns": ["w", "__file_modification_time"]})
    request = ReadRequest(reference_time=REFERENCE_TIME)
    scan = plan_read(column.to_frame().lazy(), source, request, source_action={}, pseudo_watermark={"x": 1})
    collected = collect_scan(scan)
    assert collected is not None
    assert summarize_scan(scan) == collected.runtime


def test_summarize_scan_of_no_rows_is_none() -> None:
    request = ReadRequest(watermark={"n": 9}, reference_time=REFERENCE_TIME)
    scan = plan_read(pl.LazyFrame({"ts": [datetime(2024, 1, 1)], "n": [1]}), SOURCE, request, source_action={})
    assert summarize_scan(scan) is None
