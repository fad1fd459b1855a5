"""The MERGE/DELETE predicates say what sqlglot printed for the same trees, and delta-rs runs them.

``destinations/predicates.py`` prints its five node kinds itself (importing sqlglot cost every merge
process 80-110 ms). The reference here is sqlglot's own printer on the trees the writer used to build:
for generated names (quotes, spaces, backslashes, non-ASCII) and typed values both texts must parse
(with sqlglot) to the same tree, number literals compared by value; and a real MERGE and DELETE on
such names must do what the predicate says. Where the two differ on purpose: sqlglot printed some
negative floats as integers (``-2.4226434200144804e+16`` as ``-24226434200144804``, an Int64 for
DataFusion); a float is now always printed as Python's ``repr``, a float token.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import sqlglot
from deltalake import DeltaTable, write_deltalake
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from datacoolie_core.destinations import predicates
from datacoolie_core.destinations.predicates import SOURCE, TARGET

# --- the reference: the sqlglot trees the writer built before (default dialect printer) ---------------


def ref_column(name: str, alias: str) -> exp.Column:
    return exp.column(name, table=alias, quoted=True)


def ref_literal(value: Any, dtype: pl.DataType | None = None) -> exp.Expr:
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        return exp.Literal.number(value)
    if isinstance(value, float):
        return exp.Literal.number(repr(value))
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        precision, scale = (38, max(-int(exponent), 0)) if isinstance(exponent, int) else (38, 0)
        if isinstance(dtype, pl.Decimal):
            precision, scale = dtype.precision or 38, dtype.scale
        return exp.cast(exp.Literal.string(str(value)), exp.DataType.build(f"decimal({precision}, {scale})"))
    if isinstance(value, datetime):
        zone = 'Some("UTC")' if value.tzinfo else "None"
        text = (value.astimezone(UTC) if value.tzinfo else value).isoformat()
        return exp.Anonymous(
            this="arrow_cast",
            expressions=[exp.Literal.string(text), exp.Literal.string(f"Timestamp(Microsecond, {zone})")],
        )
    if isinstance(value, date):
        return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.build("date"))
    return exp.Literal.string(value)


def ref_keys_match(keys: list[str]) -> exp.Expr:
    return exp.and_(
        *(exp.paren(exp.NullSafeEQ(this=ref_column(k, TARGET), expression=ref_column(k, SOURCE))) for k in keys)
    )


def ref_equals(name: str, alias: str, value: Any) -> exp.Expr:
    return exp.EQ(this=ref_column(name, alias), expression=ref_literal(value))


def canonical(text: str) -> str:
    """``text`` parsed and printed again, each number literal as its exact value."""

    def number(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Literal) and not node.is_string:
            return exp.Literal.string(f"number:{Decimal(node.this)}")
        return node

    return sqlglot.parse_one(text).transform(number).sql()


def same_tree(ours: str, reference: exp.Expr) -> bool:
    return canonical(ours) == canonical(reference.sql())


# --- generated names and values ------------------------------------------------------------------

names = st.text(
    alphabet=st.one_of(st.sampled_from(['"', "'", " ", "\\", ".", "é", "漢", "_", "`"]), st.characters(codec="utf-8")),
    min_size=1,
    max_size=12,
)
values = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.decimals(allow_nan=False, allow_infinity=False, places=None),
    st.text(max_size=12),
    st.dates(),
    st.datetimes(),
    st.datetimes(
        timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))])
    ),
)


@settings(max_examples=300, deadline=None)
@given(value=values)
def test_a_literal_prints_as_sqlglot_printed_it(value: Any) -> None:
    assert same_tree(predicates.literal(value), ref_literal(value))


@settings(max_examples=300, deadline=None)
@given(value=st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_literal_is_a_float_token_of_the_same_value(value: float) -> None:
    text = predicates.literal(value)
    assert any(c in text for c in ".eE")  # never an integer token: DataFusion would type it Int64
    assert float(text) == value
    assert str(float(text)) == str(value)  # the sign of zero too


@settings(max_examples=100, deadline=None)
@given(value=st.decimals(allow_nan=False, allow_infinity=False), precision=st.integers(1, 38), scale=st.integers(0, 10))
def test_a_decimal_literal_takes_the_column_type_as_sqlglot_printed_it(
    value: Decimal, precision: int, scale: int
) -> None:
    dtype = pl.Decimal(precision, min(scale, precision))
    assert same_tree(predicates.literal(value, dtype), ref_literal(value, dtype))


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(names, min_size=1, max_size=4), action=names, value=values)
def test_merge_conditions_print_as_sqlglot_printed_them(keys: list[str], action: str, value: Any) -> None:
    assert predicates.keys_match(keys).sql() == ref_keys_match(keys).sql()  # no literal: the same text
    # merge_overwrite: keys AND an action test
    ours = predicates.keys_match(keys).and_(predicates.equals(action, SOURCE, value))
    assert same_tree(ours.sql(), ref_keys_match(keys).and_(ref_equals(action, SOURCE, value)))
    # scd2: keys AND the same instant AND NOT an insert
    same = predicates.same_value(predicates.column("vf", TARGET), predicates.column(action, SOURCE))
    ours = predicates.keys_match(keys).and_(same).and_(predicates.not_(predicates.equals(action, SOURCE, "insert")))
    reference = (
        ref_keys_match(keys)
        .and_(exp.paren(exp.NullSafeEQ(this=ref_column("vf", TARGET), expression=ref_column(action, SOURCE))))
        .and_(exp.not_(ref_equals(action, SOURCE, "insert")))
    )
    assert ours.sql() == reference.sql()  # a string literal: the same text
    assert predicates.assignments(keys) == {
        exp.to_identifier(k, quoted=True).sql(): ref_column(k, SOURCE).sql() for k in keys
    }


@settings(max_examples=200, deadline=None)
@given(bounds=st.dictionaries(names, st.tuples(st.none() | values, st.none() | values), max_size=3))
def test_a_window_prints_as_sqlglot_printed_it(bounds: dict[str, tuple[Any, Any]]) -> None:
    parts: list[exp.Expr] = []
    for name, (lower, upper) in bounds.items():
        if lower is not None:
            parts.append(exp.GT(this=ref_column(name, TARGET), expression=ref_literal(lower)))
        if upper is not None:
            parts.append(exp.LTE(this=ref_column(name, TARGET), expression=ref_literal(upper)))
    ours = predicates.window_predicate(bounds)
    if not parts:
        assert ours is None
    else:
        assert ours is not None
        assert same_tree(ours.sql(), exp.and_(*parts))


def test_a_merge_on_awkward_names_and_values_does_what_its_predicate_says(tmp_path: Path) -> None:
    # DataFusion is the reader of the text: quotes, spaces, backslashes and non-ASCII in names and values
    key, other = 'Order "ID" \\ é', "it's"
    target = pl.DataFrame({key: ["a'1", "b\\2", "c 漢"], other: [1, 2, 3]})
    write_deltalake(tmp_path, target)
    batch = pl.DataFrame({key: ["b\\2", "d"], other: [20, 40]})
    (
        DeltaTable(tmp_path)
        .merge(batch, predicate=predicates.keys_match([key]).sql(), source_alias=SOURCE, target_alias=TARGET)
        .when_matched_update(predicates.assignments([other]))
        .when_not_matched_insert(predicates.assignments([key, other]))
        .execute()
    )
    rows = dict(pl.read_delta(str(tmp_path)).select(key, other).iter_rows())
    assert rows == {"a'1": 1, "b\\2": 20, "c 漢": 3, "d": 40}
    window = predicates.window_predicate({key: ("a'1", "c 漢")})
    assert window is not None
    DeltaTable(tmp_path).delete(window.sql().replace(f'"{TARGET}".', ""))
    assert sorted(pl.read_delta(str(tmp_path))[key].to_list()) == ["a'1", "d"]


def test_a_merge_needs_a_key() -> None:
    with pytest.raises(ValueError, match="at least one key"):
        predicates.keys_match([])
