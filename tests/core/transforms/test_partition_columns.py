from __future__ import annotations

import logging
from datetime import UTC, datetime

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.errors import TransformError
from datacoolie_core.transforms import PartitionHandler

from .conftest import MakeCtx


def test_derives_and_replaces_partition_columns(make_ctx: MakeCtx) -> None:
    partitions = [
        {"column": "load_month", "expression": "DATE_FORMAT(__updated_at, 'yyyy-MM')"},
        {"column": "REGION", "expression": "UPPER(region)"},
        "country",
    ]
    frame = pl.LazyFrame(
        {"region": ["eu", "us"], "country": ["NL", "US"], "__updated_at": [datetime(2026, 3, 2, tzinfo=UTC)] * 2}
    )

    out, label = PartitionHandler().apply(frame, make_ctx(destination={"partition_columns": partitions}))

    assert label == "PartitionHandler"
    expected = frame.collect().with_columns(
        region=pl.Series(["EU", "US"]), load_month=pl.Series(["2026-03", "2026-03"])
    )
    assert_frame_equal(out.collect(), expected)


def test_partition_without_expression_that_is_missing_is_a_warning(
    make_ctx: MakeCtx, caplog: pytest.LogCaptureFixture
) -> None:
    frame = pl.LazyFrame({"id": [1]})

    with caplog.at_level(logging.WARNING, logger="datacoolie.transforms"):
        out, label = PartitionHandler().apply(frame, make_ctx(destination={"partition_columns": ["country"]}))

    assert label is None
    assert_frame_equal(out.collect(), frame.collect())
    assert [r.getMessage() for r in caplog.records] == [
        "PartitionHandler: dataflow 'orders_to_silver': partition column 'country' has no expression and is not in the data"
    ]


def test_expression_over_a_missing_column_is_an_error(make_ctx: MakeCtx) -> None:
    partitions = [{"column": "y", "expression": "YEAR(order_date)"}]

    with pytest.raises(TransformError, match=r"destination.partition_columns\[0\].expression: column 'order_date'"):
        PartitionHandler().apply(pl.LazyFrame({"id": [1]}), make_ctx(destination={"partition_columns": partitions}))
