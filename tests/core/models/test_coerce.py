from __future__ import annotations

from typing import Any

import pytest

from datacoolie_core.models.coerce import (
    build_path,
    ensure_list,
    name_to_uuid,
    normalize_path,
    parse_json_object,
    to_bool,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, []),
        (["a", "b"], ["a", "b"]),
        ("", []),
        ("   ", []),
        ("a", ["a"]),
        (" a , b ,, c ", ["a", "b", "c"]),
        ('["a", "b"]', ["a", "b"]),
        ("  [1, 2]", [1, 2]),
        (5, [5]),
    ],
    ids=["none", "list", "empty", "blank", "single", "comma", "json", "json-padded", "scalar"],
)
def test_ensure_list(value: Any, expected: list[Any]) -> None:
    assert ensure_list(value) == expected


@pytest.mark.parametrize(
    ("value", "match"),
    [("[1, 2", "does not parse"), ({"a": 1}, "expected a list"), ((1, 2), "expected a list")],
    ids=["bad-json", "dict", "tuple"],
)
def test_ensure_list_rejects(value: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ensure_list(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True), (False, False), (1, True), (0, False),
        ("true", True), (" YES ", True), ("1", True), ("on", True), ("t", True), ("y", True),
        ("false", False), ("No", False), ("0", False), ("off", False), ("f", False), ("n", False), ("", False),
    ],
)  # fmt: skip
def test_to_bool(value: Any, expected: bool) -> None:
    assert to_bool(value) is expected


@pytest.mark.parametrize(
    "value", [2, -1, "maybe", None, 1.0, [True]], ids=["2", "-1", "maybe", "none", "float", "list"]
)
def test_to_bool_rejects(value: Any) -> None:
    with pytest.raises(ValueError, match="expected a boolean"):
        to_bool(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, {}), ("", {}), ("  ", {}), ({"a": 1}, {"a": 1}), ('{"a": {"b": 2}}', {"a": {"b": 2}})],
    ids=["none", "empty", "blank", "dict", "json"],
)
def test_parse_json_object(value: Any, expected: dict[str, Any]) -> None:
    assert parse_json_object(value) == expected


@pytest.mark.parametrize(
    ("value", "match"),
    [("[1]", "holds list"), ("{bad", "does not parse"), (3, "expected an object")],
    ids=["array", "bad-json", "int"],
)
def test_parse_json_object_rejects(value: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_json_object(value)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a\\b//c/", "a/b/c"),
        ("s3://bucket//x/", "s3://bucket/x"),
        ("/abs//path", "/abs/path"),
        ("/", "/"),
        ("./rel/", "./rel"),
    ],
    ids=["backslash", "protocol", "absolute", "root", "relative"],
)
def test_normalize_path(path: str, expected: str) -> None:
    assert normalize_path(path) == expected


def test_build_path_skips_empty_parts_and_keeps_leading_slash() -> None:
    assert build_path("/data/lake/", None, "/crm/", "customers") == "/data/lake/crm/customers"
    assert build_path("./lake", "", "t") == "./lake/t"
    assert build_path(None, None) == ""


def test_name_to_uuid_matches_datacoolie() -> None:
    # The id DataCoolie derives for the contract's §1.8 example dataflow.
    assert name_to_uuid("customers_landing_to_silver") == "76ffe424-93cf-5b62-a8c4-2af31a4db44f"
