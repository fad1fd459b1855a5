from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.errors import TransformError
from datacoolie_core.transforms import ColumnAdder

from .conftest import RUN_TIME, MakeCtx


def test_entries_apply_in_order_and_may_use_earlier_ones(make_ctx: MakeCtx) -> None:
    columns = [
        {"column": "name_upper", "expression": "UPPER(Full_Name)"},
        {"column": "greeting", "expression": "CONCAT('hi ', name_upper)"},
        {"column": "loaded_on", "expression": "CAST(NOW() AS DATE)"},
    ]
    ctx = make_ctx(transform={"additional_columns": columns})

    out, label = ColumnAdder().apply(pl.LazyFrame({"full_name": ["ann", None]}), ctx)

    assert label == "ColumnAdder"
    expected = pl.DataFrame(
        {
            "full_name": ["ann", None],
            "name_upper": ["ANN", None],
            "greeting": ["hi ANN", None],
            "loaded_on": [RUN_TIME.date(), RUN_TIME.date()],
        }
    )
    assert_frame_equal(out.collect(), expected)


def test_same_name_replaces_the_column_in_place(make_ctx: MakeCtx) -> None:
    ctx = make_ctx(transform={"additional_columns": [{"column": "AMOUNT", "expression": "amount * 2"}]})

    out, _ = ColumnAdder().apply(pl.LazyFrame({"amount": [1, 2], "b": ["x", "y"]}), ctx)

    assert_frame_equal(out.collect(), pl.DataFrame({"amount": [2, 4], "b": ["x", "y"]}))


def test_stale_system_columns_are_dropped_first(make_ctx: MakeCtx) -> None:
    frame = pl.LazyFrame(
        {
            "id": [1],
            "__created_at": [datetime(2020, 1, 1, tzinfo=UTC)],
            "__Updated_By": ["someone"],
            "__dataflow_run_id": ["old"],
            "__file_name": ["a.csv"],
        }
    )

    out, label = ColumnAdder().apply(frame, make_ctx())

    assert label == "ColumnAdder"
    assert_frame_equal(out.collect(), pl.DataFrame({"id": [1], "__file_name": ["a.csv"]}))


def test_nothing_to_do_gives_no_label(make_ctx: MakeCtx) -> None:
    assert ColumnAdder().apply(pl.LazyFrame({"id": [1]}), make_ctx())[1] is None


def test_expression_over_a_missing_column_names_the_entry(make_ctx: MakeCtx) -> None:
    ctx = make_ctx(transform={"additional_columns": [{"column": "x", "expression": "UPPER(nme)"}]})

    with pytest.raises(
        TransformError, match=r"additional_columns\[0\].expression: column 'nme' in .* does not exist \(columns: name\)"
    ):
        ColumnAdder().apply(pl.LazyFrame({"name": ["a"]}), ctx)
