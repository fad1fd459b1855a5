from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.errors import TransformError
from datacoolie_core.transforms import RowFilter

from .conftest import MakeCtx

FRAME = pl.DataFrame({"Country": ["NL", None, "BE", "NL"], "amount": [10, 20, None, -1]})


@pytest.mark.parametrize(
    ("sql", "kept"),
    [
        ("country IS NOT NULL", [0, 2, 3]),
        ("amount > 0", [0, 1]),
        ("country = 'NL' AND amount > 0", [0]),
        ("country IN ('BE', 'NL') OR amount IS NULL", [0, 2, 3]),
    ],
    ids=["is-not-null", "null-predicate-drops-row", "and", "in-or"],
)
def test_keeps_matching_rows(make_ctx: MakeCtx, sql: str, kept: list[int]) -> None:
    out, label = RowFilter().apply(FRAME.lazy(), make_ctx(transform={"filter_expression": sql}))

    assert label == "RowFilter"
    assert_frame_equal(out.collect(), FRAME[kept])


def test_no_expression_is_a_no_op(make_ctx: MakeCtx) -> None:
    out, label = RowFilter().apply(FRAME.lazy(), make_ctx())

    assert label is None
    assert_frame_equal(out.collect(), FRAME)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("amount + 1", r"transform.filter_expression 'amount \+ 1' gives Int64 values, not true/false"),
        ("contry = 'NL'", r"transform.filter_expression: column 'contry' .* does not exist"),
    ],
    ids=["not-a-predicate", "missing-column"],
)
def test_bad_expressions_are_errors(make_ctx: MakeCtx, sql: str, message: str) -> None:
    with pytest.raises(TransformError, match=message):
        RowFilter().apply(FRAME.lazy(), make_ctx(transform={"filter_expression": sql}))
