from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.errors import SourceError
from datacoolie_core.models.dataflow import Source
from datacoolie_core.sources import ReadRange
from datacoolie_core.sources.function import check_allowed
from tests.core.sources import functions
from tests.core.sources.helpers import make_source, read, read_ok

MODULE = "tests.core.sources.functions"


def fn_source(name: str, **source: Any) -> Source:
    return make_source({"format": "function"}, python_function=f"{MODULE}.{name}", **source)


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    functions.calls.clear()


def test_called_with_source_bounds_and_range_then_filtered_again() -> None:
    source = fn_source("orders", watermark_columns=["n"], filter_expression="status = 'ok'",
                       configure={"backward": {"days": 1}})  # fmt: skip
    result = read_ok(source, {"n": 15})
    assert_frame_equal(result.data, pl.DataFrame({"id": [2, 4], "n": [20, 40], "status": ["ok", "ok"]}))
    assert result.runtime.watermark_after == {"n": 40}
    assert functions.calls == [{"source": source, "watermark": {"n": 15}, "read_range": None}]


def test_range_is_passed_and_no_lower_bounds() -> None:
    window = ReadRange("n", 20, 40)
    result = read_ok(fn_source("orders", watermark_columns=["n"]), {"n": 35}, read_range=window)
    assert result.data["id"].to_list() == [2, 3]
    assert functions.calls[0]["watermark"] is None
    assert functions.calls[0]["read_range"] == window


def test_two_runs_with_a_prefiltering_function() -> None:
    source = fn_source("prefiltered", watermark_columns=["n"])
    run1 = read_ok(source)
    assert run1.runtime.watermark_after == {"n": 40}
    assert read(source, run1.runtime.watermark_after) is None
    assert [c["watermark"] for c in functions.calls] == [None, {"n": 40}]


def test_none_means_skipped() -> None:
    assert read(fn_source("nothing")) is None


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("not_a_frame", "returned list; return a polars DataFrame or LazyFrame"),
        ("broken", "raised RuntimeError: upstream API returned 503"),
        ("ordres", r"has no function 'ordres'; did you mean 'orders'\?"),
        ("NOT_CALLABLE", "has no function 'NOT_CALLABLE'"),
    ],
    ids=["wrong-return-type", "function-raises", "typo", "not-callable"],
)
def test_function_errors(name: str, message: str) -> None:
    with pytest.raises(SourceError, match=message):
        read(fn_source(name))


def test_unimportable_module_and_undotted_name() -> None:
    with pytest.raises(SourceError, match=r"cannot import module 'tests\.core\.sources\.nope'"):
        read(make_source({"format": "function"}, python_function="tests.core.sources.nope.fn"))
    with pytest.raises(SourceError, match="must be a dotted path"):
        read(make_source({"format": "function"}, python_function="orders"))


def test_allow_list_is_enforced_before_importing() -> None:
    source = fn_source("orders")
    with pytest.raises(SourceError, match=r"not under an allowed prefix \(etl.sources\)"):
        read(source, allowed_function_prefixes=("etl.sources",))
    assert functions.calls == []
    assert read(source, allowed_function_prefixes=("etl", "tests.core.")) is not None


@pytest.mark.parametrize(
    ("dotted", "prefixes", "allowed"),
    [
        ("etl.sources.orders.fetch", ("etl.sources",), True),
        ("etl.sources", ("etl.sources",), True),
        ("etl.sourcesx.fetch", ("etl.sources",), False),
        ("etl.sources.fetch", ("etl.sources.",), True),
        ("other.fetch", ("etl", "other"), True),
        ("anything.at.all", (), True),
    ],
    ids=["under", "equal", "not-a-dotted-prefix", "trailing-dot", "second-prefix", "empty-allows-all"],
)
def test_check_allowed(dotted: str, prefixes: tuple[str, ...], allowed: bool) -> None:
    if allowed:
        check_allowed(dotted, prefixes, label="s")
    else:
        with pytest.raises(SourceError):
            check_allowed(dotted, prefixes, label="s")
