"""Spark 3.5 (ANSI off) is the oracle: every generated expression computes the same values and types."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.core.sql.oracle import corpus, trees
from tests.core.sql.oracle.harness import Case, check

TREES = 400


def test_operators_and_constructs_match_spark(spark: Any) -> None:
    report = check(spark, corpus.operator_cases())
    assert report.cases > 5000
    assert not report.mismatches, report.summary()


# one example holding all trees: Spark evaluates them in batches; no shrinking (each run costs Spark time)
@settings(max_examples=1, derandomize=True, phases=[Phase.generate], deadline=None,
          suppress_health_check=list(HealthCheck))  # fmt: skip
@given(st.lists(trees.any_tree(), min_size=TREES, max_size=TREES))
def test_random_expression_trees_match_spark(spark: Any, expressions: list[str]) -> None:
    report = check(spark, [Case(sql, origin="tree") for sql in expressions])
    assert report.cases > TREES // 2
    assert not report.mismatches, report.summary()
