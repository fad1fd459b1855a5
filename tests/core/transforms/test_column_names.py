from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.errors import TransformError
from datacoolie_core.transforms import ColumnNameSanitizer, sanitize_name

from .conftest import MakeCtx


@pytest.mark.parametrize(
    ("name", "lower", "snake"),
    [
        ("MyColumn", "mycolumn", "my_column"),
        ("HTTPStatus", "httpstatus", "http_status"),
        ("order-date", "order_date", "order_date"),
        ("123", "_123", "_123"),
        ("col@#name", "col_name", "col_name"),
        ("  Full Name  ", "full_name", "full_name"),
        ("customerID2Name", "customerid2name", "customer_id2_name"),
        ("already_snake", "already_snake", "already_snake"),
        ("_Private Col", "_Private Col", "_Private Col"),
        ("__created_at", "__created_at", "__created_at"),
        ("@#!", "@#!", "@#!"),
        ("Déjà vu", "d_j_vu", "d_j_vu"),
        ("2ndPlace", "_2ndplace", "_2nd_place"),
    ],
    ids=lambda v: repr(v),
)
def test_sanitize_name(name: str, lower: str, snake: str) -> None:
    assert (sanitize_name(name, "lower"), sanitize_name(name, "snake")) == (lower, snake)


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown column_name_mode 'snek'; did you mean 'snake'"):
        sanitize_name("a", "snek")


def test_renames_and_moves_framework_columns_last_in_contract_order(make_ctx: MakeCtx) -> None:
    frame = pl.LazyFrame(
        {
            "__dataflow_run_id": ["r"],
            "CustomerID": [1],
            "__created_at": ["c"],
            "__file_name": ["f"],
            "Order Date": ["d"],
            "__is_current": [True],
            "__updated_at": ["u"],
        }
    )

    out, label = ColumnNameSanitizer().apply(frame, make_ctx(column_name_mode="snake"))

    assert label == "ColumnNameSanitizer(snake)"
    expected = pl.DataFrame(
        {
            "customer_id": [1],
            "order_date": ["d"],
            "__is_current": [True],
            "__file_name": ["f"],
            "__created_at": ["c"],
            "__updated_at": ["u"],
            "__dataflow_run_id": ["r"],
        }
    )
    assert_frame_equal(out.collect(), expected)


def test_collisions_are_errors_listing_the_names(make_ctx: MakeCtx) -> None:
    frame = pl.LazyFrame({"Order Date": [1], "order-date": [2], "ok": [3], "A": [4], "a": [5]})

    with pytest.raises(
        TransformError,
        match=r"duplicate column names: \['Order Date', 'order-date'\] -> 'order_date'; \['A', 'a'\] -> 'a'",
    ):
        ColumnNameSanitizer().apply(frame, make_ctx())


def test_collision_is_case_insensitive_for_untouched_names(make_ctx: MakeCtx) -> None:
    frame = pl.LazyFrame({"_Key": [1], "_key": [2]})

    with pytest.raises(TransformError, match=r"\['_Key', '_key'\] -> '_key'"):
        ColumnNameSanitizer().apply(frame, make_ctx())


def test_unknown_mode_in_the_context_is_a_transform_error(make_ctx: MakeCtx) -> None:
    with pytest.raises(TransformError, match="unknown column_name_mode 'upper'"):
        ColumnNameSanitizer().apply(pl.LazyFrame({"a": [1]}), make_ctx(column_name_mode="upper"))
