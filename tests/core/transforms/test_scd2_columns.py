from __future__ import annotations

from datetime import date
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.errors import TransformError
from datacoolie_core.transforms import SCD2ColumnAdder

from .conftest import MakeCtx


def scd2(effective: str) -> dict[str, Any]:
    return {"load_type": "scd2", "merge_keys": ["id"], "configure": {"scd2_effective_column": effective}}


def test_adds_version_columns_from_the_effective_expression(make_ctx: MakeCtx) -> None:
    frame = pl.LazyFrame({"id": [1, 2], "Changed_On": ["2024-01-31", "2024-02-01"]})

    out, label = SCD2ColumnAdder().apply(frame, make_ctx(destination=scd2("CAST(changed_on AS DATE)")))

    assert label == "SCD2ColumnAdder"
    expected = frame.collect().with_columns(
        __valid_from=pl.Series([date(2024, 1, 31), date(2024, 2, 1)]),
        __valid_to=pl.lit(None, dtype=pl.Date),
        __is_current=pl.lit(True),
    )
    assert_frame_equal(out.collect(), expected)


def test_existing_version_columns_are_replaced(make_ctx: MakeCtx) -> None:
    frame = pl.LazyFrame({"id": [1], "v": [5], "__valid_from": ["old"], "__is_current": [False]})

    out, _ = SCD2ColumnAdder().apply(frame, make_ctx(destination=scd2("v")))

    expected = pl.DataFrame(
        {
            "id": [1],
            "v": [5],
            "__valid_from": [5],
            "__valid_to": pl.Series([None], dtype=pl.Int64),
            "__is_current": [True],
        }
    )
    assert_frame_equal(out.collect(), expected)


@pytest.mark.parametrize(
    "destination",
    [{}, {"load_type": "merge_upsert", "merge_keys": ["id"], "configure": {"scd2_effective_column": "v"}}],
    ids=["append", "merge_upsert-with-effective-column"],
)
def test_only_for_scd2(make_ctx: MakeCtx, destination: dict[str, Any]) -> None:
    frame = pl.LazyFrame({"id": [1], "v": [5]})

    out, label = SCD2ColumnAdder().apply(frame, make_ctx(destination=destination))

    assert label is None
    assert_frame_equal(out.collect(), frame.collect())


def test_effective_expression_over_a_missing_column_is_an_error(make_ctx: MakeCtx) -> None:
    with pytest.raises(TransformError, match=r"destination.configure.scd2_effective_column: column 'w'"):
        SCD2ColumnAdder().apply(pl.LazyFrame({"id": [1]}), make_ctx(destination=scd2("w")))
