"""Watermark JSON encoding: exact round-trips, canonical output, corruption is loud."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datacoolie_core.errors import WatermarkError
from datacoolie_core.watermark import (
    deserialize_watermark,
    is_watermark_empty,
    serialize_watermark,
)

CET = timezone(timedelta(hours=1))
IST = timezone(timedelta(hours=5, minutes=30))


def assert_identical(actual: Any, expected: Any) -> None:
    """Equal, same type, same tz offset / decimal exponent: == alone hides those differences."""
    assert type(actual) is type(expected), (actual, expected)
    if isinstance(expected, dict):
        assert sorted(actual) == sorted(expected)  # key order is canonicalised (sorted)
        for key in expected:
            assert_identical(actual[key], expected[key])
    elif isinstance(expected, list):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            assert_identical(a, e)
    elif isinstance(expected, Decimal):
        assert actual.as_tuple() == expected.as_tuple()
    elif isinstance(expected, (datetime, time)):
        assert actual == expected
        assert actual.utcoffset() == expected.utcoffset()
    elif isinstance(expected, float):
        assert math.copysign(1, actual) == math.copysign(1, expected)
        assert actual == expected
    else:
        assert actual == expected


ROUND_TRIPS = [
    ("naive-datetime", datetime(2026, 3, 2, 8, 15)),
    ("naive-datetime-micros", datetime(2026, 3, 2, 8, 15, 0, 123456)),
    ("aware-datetime-utc", datetime(2026, 3, 2, 8, 15, tzinfo=UTC)),
    ("aware-datetime-offset-micros", datetime(2026, 3, 2, 8, 15, 1, 7, tzinfo=IST)),
    ("date", date(2026, 3, 2)),
    ("time", time(8, 15, 0, 250)),
    ("aware-time", time(23, 59, 59, tzinfo=CET)),
    ("decimal", Decimal("12345.6789")),
    ("decimal-exponent", Decimal("1E+3")),
    ("decimal-negative", Decimal("-0.000120")),
    ("decimal-negative-zero", Decimal("-0")),
    ("bytes", b"\x00\xffwatermark\n"),
    ("bytes-empty", b""),
    ("int", 42),
    ("int-huge", 2**80),
    ("float", 0.1),
    ("float-negative-zero", -0.0),
    ("bool", True),
    ("str", "2026-03-02T08:15:00"),
    ("str-unicode", "größe ✓"),
    ("none", None),
    ("nested-dict", {"b": date(2026, 1, 1), "a": [1, Decimal("2.50"), {"t": time(1, 2)}]}),
    ("list", [datetime(2026, 1, 1), b"x", None, "s"]),
]


@pytest.mark.parametrize("value", [v for _, v in ROUND_TRIPS], ids=[i for i, _ in ROUND_TRIPS])
def test_round_trip_is_exact(value: Any) -> None:
    watermark = {"col": value, "other": 1}
    assert_identical(deserialize_watermark(serialize_watermark(watermark)), {"col": value, "other": 1})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (datetime(2026, 3, 2, 8, 15, 0, 5), '{"c":{"__datetime__":"2026-03-02T08:15:00.000005"}}'),
        (datetime(2026, 3, 2, tzinfo=IST), '{"c":{"__datetime__":"2026-03-02T00:00:00+05:30"}}'),
        (date(2026, 3, 2), '{"c":{"__date__":"2026-03-02"}}'),
        (time(8, 15), '{"c":{"__time__":"08:15:00"}}'),
        (Decimal("1E+3"), '{"c":{"__decimal__":"1E+3"}}'),
        (b"hi", '{"c":{"__binary__":"aGk="}}'),
        (None, '{"c":null}'),
    ],
    ids=["datetime", "aware-datetime", "date", "time", "decimal", "bytes", "null"],
)
def test_tagged_encoding(value: Any, expected: str) -> None:
    assert serialize_watermark({"c": value}) == expected


def test_keys_are_sorted_at_every_level() -> None:
    text = serialize_watermark({"b": 1, "a": {"z": 1, "y": 2}, "__date_folder_partition__": "x"})
    assert text == '{"__date_folder_partition__":"x","a":{"y":2,"z":1},"b":1}'


def test_date_folder_partition_key_allowed_at_root() -> None:
    watermark = {"__date_folder_partition__": "2026/03/02", "__file_modification_time": 1.5}
    assert deserialize_watermark(serialize_watermark(watermark)) == watermark


def test_reads_datacoolie_017_plain_string_file() -> None:
    assert deserialize_watermark('{"changed_at": "2026-03-02T08:15:00"}') == {"changed_at": "2026-03-02T08:15:00"}


def test_only_nothing_stored_is_a_first_run() -> None:
    assert deserialize_watermark(None) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, True), ({}, True), ({"a": None, "b": None}, True), ({"a": None, "b": 0}, False)],
    ids=["none", "empty", "all-none", "one-value"],
)
def test_is_watermark_empty(value: dict[str, Any] | None, expected: bool) -> None:
    assert is_watermark_empty(value) is expected


CORRUPT = [
    # a file that exists but says nothing is damage (truncated, emptied by hand), not a first run
    ("empty", "", "the file is empty"),
    ("whitespace", "   \n\t", "the file is blank"),
    ("empty-object", "{}", "holds no value"),
    ("empty-object-spaced", " { } ", "holds no value"),
    ("all-null", '{"a": null}', "holds no value"),
    ("all-null-two", '{"a": null, "b": null}', "holds no value"),
    ("malformed", '{"a": 1', "not valid JSON"),
    ("truncated", '{"a": {"__date__": "2026-', "not valid JSON"),
    ("null", "null", "got JSON NoneType"),
    ("list", "[1, 2]", "got JSON list"),
    ("number", "42", "got JSON int"),
    ("string", '"x"', "got JSON str"),
    ("nan-constant", '{"a": NaN}', "non-finite number NaN"),
    ("infinity-constant", '{"a": -Infinity}', "non-finite number -Infinity"),
    ("float-overflow", '{"a": 1e400}', "overflows a float"),
    ("tag-extra-key", '{"a": {"__date__": "2026-03-02", "x": 1}}', "mixes tag '__date__'"),
    ("unknown-tag", '{"a": {"__foo__": "1"}}', "unknown tag '__foo__'"),
    ("tag-at-root", '{"__datetime__": "2026-03-02T00:00:00"}', "reserved key '__datetime__'"),
    ("bad-date", '{"a": {"__date__": "not-a-date"}}', "cannot decode __date__"),
    ("bad-datetime", '{"a": {"__datetime__": "2026-13-01T00:00"}}', "cannot decode __datetime__"),
    ("bad-time", '{"a": {"__time__": "25:00"}}', "cannot decode __time__"),
    ("bad-decimal", '{"a": {"__decimal__": "abc"}}', "cannot decode __decimal__"),
    ("nan-decimal", '{"a": {"__decimal__": "NaN"}}', "cannot decode __decimal__"),
    ("bad-binary", '{"a": {"__binary__": "!!!"}}', "cannot decode __binary__"),
    ("non-string-tag-value", '{"a": {"__date__": 20260302}}', "needs a string"),
    ("nested-bad-tag", '{"a": [{"b": {"__time__": "x"}}]}', r"value 'a\[0\]\.b'"),
]


@pytest.mark.parametrize(("text", "detail"), [c[1:] for c in CORRUPT], ids=[c[0] for c in CORRUPT])
def test_corrupt_text_raises(text: str, detail: str) -> None:
    with pytest.raises(WatermarkError, match=r"^Watermark is corrupt: ") as info:
        deserialize_watermark(text)
    message = str(info.value)
    assert re.search(detail, message), message
    assert "NOT treated as a first run" in message
    assert "datacoolie state repair" in message
    assert "datacoolie state reset" in message


UNSERIALIZABLE = [
    ("nan", {"a": float("nan")}, r"'a' = nan .*non-finite floats"),
    ("inf", {"a": float("inf")}, r"'a' = inf .*non-finite floats"),
    ("decimal-nan", {"a": Decimal("NaN")}, "non-finite decimals"),
    ("tuple", {"a": (1, 2)}, r"\(tuple\): unsupported type"),
    ("set", {"a": {1}}, r"\(set\): unsupported type"),
    ("object", {"a": object()}, r"\(object\): unsupported type"),
    ("nested-tuple", {"a": {"b": [(1,)]}}, r"'a\.b\[0\]'"),
    ("int-key", {1: "x"}, "key 1 at root is a int"),
    ("nested-int-key", {"a": {2: "x"}}, "key 2 at a is a int"),
    ("reserved-key", {"__date__": "x"}, "key '__date__' at root looks like a reserved type tag"),
    ("nested-reserved", {"a": {"__binary__": "x"}}, "key '__binary__' at a looks like a reserved"),
    (
        "date-folder-key-nested",
        {"a": {"__date_folder_partition__": "x"}},
        "key '__date_folder_partition__' at a looks like a reserved",
    ),
    ("not-a-mapping", ["a"], "must be a mapping of column to value, got list"),
]


@pytest.mark.parametrize(("value", "match"), [c[1:] for c in UNSERIALIZABLE], ids=[c[0] for c in UNSERIALIZABLE])
def test_unserializable_values_raise(value: Any, match: str) -> None:
    with pytest.raises(WatermarkError, match=match):
        serialize_watermark(value)


def test_dunder_prefixed_key_is_not_reserved() -> None:
    """Only keys that start AND end with '__' look like tags."""
    watermark = {"__file_modification_time": datetime(2026, 1, 1), "x__": 1, "__": 2}
    assert deserialize_watermark(serialize_watermark(watermark)) == watermark


# -- property: anything we accept comes back identical ----------------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
    st.binary(max_size=16),
    st.dates(),
    st.times(timezones=st.sampled_from([None, UTC, IST])),
    st.datetimes(timezones=st.sampled_from([None, UTC, CET, IST])),
    st.decimals(allow_nan=False, allow_infinity=False),
)
_keys = st.text(max_size=8).filter(lambda k: not (len(k) > 4 and k[:2] == "__" == k[-2:]))
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_keys, _values, min_size=1, max_size=4))
def test_property_round_trip(watermark: dict[str, Any]) -> None:
    text = serialize_watermark(watermark)
    json.loads(text)  # plain JSON, readable by anything
    if is_watermark_empty(watermark):  # all null: nothing to filter on, so it cannot have been saved
        with pytest.raises(WatermarkError, match="holds no value"):
            deserialize_watermark(text)
        return
    decoded = deserialize_watermark(text)
    assert decoded is not None
    assert_identical(decoded, watermark)
