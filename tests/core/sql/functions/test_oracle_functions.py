"""Spark 3.5 is the oracle, ANSI off and on: every supported function computes Spark's values and types."""

from __future__ import annotations

import re
from typing import Any

import pytest

from datacoolie_core.sql import SUPPORTED_FUNCTIONS
from tests.core.sql.functions.cases import CASES
from tests.core.sql.oracle.harness import Case, check


@pytest.mark.parametrize("family", list(CASES))
def test_functions_match_spark(spark: Any, family: str) -> None:
    report = check(spark, [Case(sql, origin=family) for sql in CASES[family]])
    assert report.cases > 50
    assert not report.mismatches, report.summary()


@pytest.mark.parametrize("family", list(CASES))
def test_functions_match_spark_in_ansi_mode(spark: Any, family: str) -> None:
    # spark.sql.ansi.enabled on both sides: where Spark raises, we raise the same error class (or refuse
    # the expression at load, a documented refusal); the try_* forms stay NULL
    report = check(spark, [Case(sql, origin=family) for sql in CASES[family]], ansi=True)
    assert report.cases > 50
    assert not report.mismatches, report.summary()


def test_every_supported_function_has_oracle_cases() -> None:
    text = " ".join(sql for cases in CASES.values() for sql in cases).upper()
    missing = [name for name in SUPPORTED_FUNCTIONS if not re.search(rf"\b{name}\b", text)]
    assert not missing
