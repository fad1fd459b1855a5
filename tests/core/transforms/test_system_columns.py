from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.transforms import SystemColumnAdder, TransformContext
from datacoolie_core.transforms.system_columns import utc_literal

from .conftest import RUN_ID, make_dataflow

UTC_US = pl.Datetime("us", "UTC")


@pytest.mark.parametrize(
    ("run_time", "stamped"),
    [
        (datetime(2026, 3, 2, 8, 15, 1, 123456, tzinfo=UTC), datetime(2026, 3, 2, 8, 15, 1, 123456)),
        (datetime(2026, 3, 2, 10, 15, tzinfo=timezone(timedelta(hours=2))), datetime(2026, 3, 2, 8, 15)),
        (datetime(2026, 3, 2, 8, 15), datetime(2026, 3, 2, 8, 15)),
    ],
    ids=["utc", "other-zone-converted", "naive-taken-as-utc"],
)
def test_adds_one_instant_for_the_batch_and_replaces_old_values(run_time: datetime, stamped: datetime) -> None:
    ctx = TransformContext(make_dataflow(), RUN_ID, run_time)
    frame = pl.LazyFrame({"id": [1, 2], "__updated_by": ["someone", "else"], "__Dataflow_Run_Id": ["x", "y"]})

    out, label = SystemColumnAdder().apply(frame, ctx)

    assert label == "SystemColumnAdder"
    stamp = pl.Series([stamped, stamped], dtype=pl.Datetime("us")).dt.replace_time_zone("UTC")
    expected = pl.DataFrame(
        {
            "id": [1, 2],
            "__created_at": stamp,
            "__updated_at": stamp,
            "__updated_by": ["DataCoolie", "DataCoolie"],
            "__dataflow_run_id": [RUN_ID, RUN_ID],
        }
    )
    assert_frame_equal(out.collect(), expected)


def test_empty_frame_keeps_typed_columns() -> None:
    ctx = TransformContext(make_dataflow(), RUN_ID, datetime(2026, 1, 1, tzinfo=UTC))

    out = SystemColumnAdder().apply(pl.LazyFrame({"id": pl.Series([], dtype=pl.Int64)}), ctx)[0].collect()

    expected: dict[str, pl.DataType] = {
        "id": pl.Int64(),
        "__created_at": UTC_US,
        "__updated_at": UTC_US,
        "__updated_by": pl.String(),
        "__dataflow_run_id": pl.String(),
    }
    assert out.schema == pl.Schema(expected)
    assert out.height == 0


@pytest.mark.parametrize(
    ("value", "instant"),
    [
        (datetime(2026, 3, 2, 8, 15, 1, 999999, tzinfo=UTC), datetime(2026, 3, 2, 8, 15, 1, 999999)),
        (datetime(2026, 3, 2, 10, 15, tzinfo=timezone(timedelta(hours=2))), datetime(2026, 3, 2, 8, 15)),
        (datetime(1969, 12, 31, 23, 59, 59, 1), datetime(1969, 12, 31, 23, 59, 59, 1)),
    ],
    ids=["utc-last-microsecond", "other-zone-converted", "naive-before-the-epoch"],
)
def test_utc_literal_is_the_instant_in_utc_microseconds(value: datetime, instant: datetime) -> None:
    # Built from epoch microseconds (cheaper than pl.lit(datetime)): same dtype, same instant
    out = pl.select(utc_literal(value).alias("at"))

    assert out.schema == pl.Schema({"at": UTC_US})
    assert out.item() == instant.replace(tzinfo=UTC)
