"""Spark 3.5 (ANSI off) is the oracle: every generated expression computes the same values and types."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.internal.conjecture.providers import HypothesisProvider

from datacoolie_core.sql import SUPPORTED_FUNCTIONS
from tests.core.sql.oracle import corpus, signatures, trees
from tests.core.sql.oracle.harness import Case, check

TREES = 600


def test_operators_and_constructs_match_spark(spark: Any) -> None:
    report = check(spark, corpus.operator_cases())
    assert report.cases > 5000
    assert not report.mismatches, report.summary()


def test_casts_and_arithmetic_match_spark_in_ansi_mode(spark: Any) -> None:
    # spark.sql.ansi.enabled on both sides: a row Spark raises on raises the same error class here
    cases = [*corpus.cast_cases(), *corpus.arithmetic_cases()]
    report = check(spark, cases, ansi=True)
    assert report.raised > 1000
    assert not report.mismatches, report.summary()


def test_string_coercion_matches_spark_in_ansi_mode(spark: Any) -> None:
    # with ANSI on, a STRING next to another type is cast to that type (raising on malformed text) or
    # refused by the analyzer; the same corpus runs with ANSI off in test_operators_and_constructs_match_spark
    report = check(spark, corpus.string_coercion_cases(), ansi=True)
    assert report.cases > 900
    assert report.raised > 100
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

    # hypothesis mixes in constants from the source of every local module imported so far
    # (HypothesisProvider._maybe_draw_constant), so the trees would depend on which tests ran before
    # this one; without those constants the draw depends on the seed alone
    with mock.patch.object(HypothesisProvider, "_maybe_draw_constant", return_value=None):
        collect()
    return collected


def test_generated_trees_do_not_depend_on_the_modules_imported_before(tmp_path: Path, monkeypatch: Any) -> None:
    # a run of other tests first imports more local modules, whose constants hypothesis used to mix in
    before = generated_trees(100)
    (tmp_path / "oracle_constants_probe.py").write_text(f"VALUES = {tuple(range(100, 2000, 7))}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "oracle_constants_probe", importlib.import_module("oracle_constants_probe"))
    assert generated_trees(100) == before


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
