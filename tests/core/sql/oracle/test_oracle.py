"""Spark 3.5 (ANSI off) is the oracle: every generated expression computes the same values and types."""

from __future__ import annotations

from typing import Any

from tests.core.sql.oracle import corpus
from tests.core.sql.oracle.harness import check


def test_operators_and_constructs_match_spark(spark: Any) -> None:
    report = check(spark, corpus.operator_cases())
    assert not report.mismatches, report.summary()
