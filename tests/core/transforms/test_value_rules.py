from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.errors import TransformError
from datacoolie_core.transforms import ColumnValueTransformer

from .conftest import MakeCtx

RULE_CASES = [
    ({"operation": "trim"}, ["  a b  ", "\tx\t", None], ["a b", "\tx\t", None]),
    ({"operation": "case", "mode": "upper"}, ["abc", "Déjà", None], ["ABC", "DÉJÀ", None]),
    ({"operation": "case", "mode": "lower"}, ["ABC", "MiXeD", None], ["abc", "mixed", None]),
    ({"operation": "regex_replace", "pattern": "[0-9]+", "replacement": "#"}, ["a12b3", "none"], ["a#b#", "none"]),
    ({"operation": "regex_replace", "pattern": "(a)", "replacement": "$1$"}, ["cat"], ["c$1$t"]),
    ({"operation": "empty_to_null"}, ["", " ", "x", None], [None, " ", "x", None]),
    ({"operation": "fill_null", "value": "n/a"}, ["x", None], ["x", "n/a"]),
    (
        {"operation": "map", "mapping": {"M": "male", "F": "female"}},
        ["M", "F", "X", "m", None],
        ["male", "female", "X", "m", None],
    ),
    (
        {"operation": "map", "mapping": {"M": "male"}, "on_unmapped": "null"},
        ["M", "X", None],
        ["male", None, None],
    ),
]


@pytest.mark.parametrize(
    ("rule", "values", "expected"),
    RULE_CASES,
    ids=[
        "trim-ascii-space-only",
        "upper",
        "lower",
        "regex",
        "regex-literal-dollar",
        "empty_to_null",
        "fill_null",
        "map-keep",
        "map-null",
    ],
)
def test_string_rules(make_ctx: MakeCtx, rule: dict[str, Any], values: list[Any], expected: list[Any]) -> None:
    ctx = make_ctx(transform={"value_rules": [{**rule, "columns": ["Code"]}]})
    frame = pl.DataFrame({"code": values, "other": list(range(len(values)))})

    out, label = ColumnValueTransformer().apply(frame.lazy(), ctx)

    assert label == "ColumnValueTransformer"
    assert_frame_equal(out.collect(), pl.DataFrame({"code": expected, "other": list(range(len(values)))}))


FILL_CASES = [
    (pl.Int8, 5, 5),
    (pl.Int64, -(2**63), -(2**63)),
    (pl.Float64, 1, 1.0),
    (pl.Boolean, False, False),
    (pl.Decimal(6, 2), "12.5", Decimal("12.50")),
    (pl.Date, "2024-02-29", date(2024, 2, 29)),
    (pl.Datetime("us"), "2024-01-01T10:00:00", datetime(2024, 1, 1, 10)),
]


@pytest.mark.parametrize(("dtype", "value", "filled"), FILL_CASES, ids=lambda v: str(v))
def test_fill_null_with_a_literal_of_the_column_type(make_ctx: MakeCtx, dtype: Any, value: Any, filled: Any) -> None:
    ctx = make_ctx(transform={"value_rules": [{"operation": "fill_null", "columns": ["v"], "value": value}]})
    frame = pl.DataFrame({"v": pl.Series([None], dtype=dtype)})

    out, _ = ColumnValueTransformer().apply(frame.lazy(), ctx)

    assert_frame_equal(out.collect(), pl.DataFrame({"v": pl.Series([filled], dtype=dtype)}))


BAD_FILLS = [
    (pl.Int8, 300, "outside the range of Int8"),
    (pl.Int64, "5", "is a str, but the column is Int64"),
    (pl.Int64, True, "is a bool, but the column is Int64"),
    (pl.Boolean, 1, "is a int, but the column is Boolean"),
    (pl.Decimal(4, 1), "1.25", "more than 1 decimal places"),
    (pl.Decimal(4, 1), "1234", "more than 3 integer digits"),
    (pl.Date, "02/01/2024", "Invalid isoformat"),
    (pl.Datetime("us", "UTC"), "2024-01-01T10:00:00", "has no time zone"),
    (pl.Datetime("us"), "2024-01-01T10:00:00+02:00", "has a time zone"),
    (pl.List(pl.Int64), 1, "cannot take a literal"),
]


@pytest.mark.parametrize(("dtype", "value", "message"), BAD_FILLS, ids=lambda v: str(v))
def test_fill_null_literal_that_does_not_fit_is_an_error(
    make_ctx: MakeCtx, dtype: Any, value: Any, message: str
) -> None:
    ctx = make_ctx(transform={"value_rules": [{"operation": "fill_null", "columns": ["v"], "value": value}]})
    frame = pl.DataFrame({"v": pl.Series([None], dtype=dtype)})

    with pytest.raises(
        TransformError, match=rf"value_rules\[0\] \(fill_null\) value does not fit column 'v'.*{message}"
    ):
        ColumnValueTransformer().apply(frame.lazy(), ctx)


def test_rules_run_by_order_then_declaration(make_ctx: MakeCtx) -> None:
    # declared: empty_to_null (order 100) first, trim (order 1) second -> trim runs first,
    # so "   " becomes "" and then null; fill_null (order 100, declared last) runs last
    rules = [
        {"operation": "empty_to_null", "columns": ["name"]},
        {"operation": "trim", "columns": ["name"], "order": 1},
        {"operation": "fill_null", "columns": ["name"], "value": "?"},
    ]
    ctx = make_ctx(transform={"value_rules": rules})
    frame = pl.DataFrame({"name": ["   ", " bob ", None]})

    out, _ = ColumnValueTransformer().apply(frame.lazy(), ctx)

    assert_frame_equal(out.collect(), pl.DataFrame({"name": ["?", "bob", "?"]}))


def test_string_operation_on_a_non_string_column_is_an_error(make_ctx: MakeCtx) -> None:
    ctx = make_ctx(transform={"value_rules": [{"operation": "trim", "columns": ["amount"]}]})

    with pytest.raises(
        TransformError, match=r"value_rules\[0\] \(trim\) applies to string columns, but column 'amount' is Int64"
    ):
        ColumnValueTransformer().apply(pl.LazyFrame({"amount": [1]}), ctx)


def test_missing_column_is_an_error_naming_key_and_columns(make_ctx: MakeCtx) -> None:
    ctx = make_ctx(transform={"value_rules": [{"operation": "trim", "columns": ["nme"]}]})

    with pytest.raises(
        TransformError,
        match=r"dataflow 'orders_to_silver': transform.value_rules\[0\].columns names column 'nme', which is not in "
        r"the data; did you mean 'name'\? \(columns: name, amount\); .*missing_column_policy",
    ):
        ColumnValueTransformer().apply(pl.LazyFrame({"name": ["a"], "amount": [1]}), ctx)


def test_missing_column_is_skipped_with_ignore(make_ctx: MakeCtx) -> None:
    rules = [
        {"operation": "trim", "columns": ["nope"]},
        {"operation": "case", "mode": "upper", "columns": ["nope", "name"]},
    ]
    ctx = make_ctx(transform={"value_rules": rules, "configure": {"missing_column_policy": "ignore"}})

    out, label = ColumnValueTransformer().apply(pl.LazyFrame({"name": [" a "]}), ctx)

    assert label == "ColumnValueTransformer"
    assert_frame_equal(out.collect(), pl.DataFrame({"name": [" A "]}))


def test_nothing_to_do_gives_no_label(make_ctx: MakeCtx) -> None:
    ignore = make_ctx(
        transform={
            "value_rules": [{"operation": "trim", "columns": ["nope"]}],
            "configure": {"missing_column_policy": "ignore"},
        }
    )
    frame = pl.LazyFrame({"name": [" a "]})

    assert ColumnValueTransformer().apply(frame, make_ctx())[1] is None
    out, label = ColumnValueTransformer().apply(frame, ignore)
    assert label is None
    assert_frame_equal(out.collect(), frame.collect())
