"""Spark 3.5 (ANSI off) is the oracle: every generated expression computes the same values and types."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, Phase, given, settings

from datacoolie_core.sql import SUPPORTED_FUNCTIONS
from tests.core.sql.oracle import corpus, signatures, trees
from tests.core.sql.oracle.harness import Case, check

TREES = 600


def test_operators_and_constructs_match_spark(spark: Any) -> None:
    report = check(spark, corpus.operator_cases())
    assert report.cases > 5000
    assert not report.mismatches, report.summary()


def generated_trees(count: int = TREES) -> list[str]:
    """``count`` random well-typed trees, the same on every run (derandomized hypothesis)."""
    collected: list[str] = []

    # hypothesis draws the trees; Spark evaluates them all at once afterwards (no shrinking: each
    # Spark run costs seconds, and a mismatch report names the expression anyway)
    @settings(max_examples=count, derandomize=True, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(trees.any_tree())
    def collect(sql: str) -> None:
        collected.append(sql)

    collect()
    return collected


def test_random_expression_trees_match_spark(spark: Any) -> None:
    expressions = generated_trees()
    report = check(spark, [Case(sql, origin="tree") for sql in expressions])
    assert report.cases > TREES // 2
    assert not report.mismatches, report.summary()


def test_every_supported_function_has_a_signature() -> None:
    missing = sorted(set(SUPPORTED_FUNCTIONS) - set(signatures.SIGNATURES))
    assert not missing, f"add these functions to tests/core/sql/oracle/signatures.py: {missing}"


def test_functions_over_their_signatures_match_spark(spark: Any) -> None:
    report = check(spark, signatures.function_cases())
    assert report.cases > 2000
    assert not report.mismatches, report.summary()
