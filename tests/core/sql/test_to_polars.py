"""Spark-SQL expressions from metadata compile to Polars and compute what Spark would."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import polars as pl
import pytest

from datacoolie_core.sql import SqlExpressionError, compile_expression, parse_expression

NOW = datetime(2026, 5, 9, 12, 30, tzinfo=UTC)
FRAME = pl.DataFrame(
    {
        "a": [1, 2, None],
        "s": ["x ", " Yb", "c"],
        "ts": [datetime(2024, 1, 5, 3, tzinfo=UTC), datetime(2024, 2, 29, 23, 59, tzinfo=UTC), None],
        "d": ["2024-02-03", "2024-03-04", None],
        "amount": [1.5, 2.25, 3.0],
        "Mixed_Case": [10, 20, 30],
    }
)


def evaluate(sql: str) -> list[Any]:
    return FRAME.select(compile_expression(sql, schema=FRAME.schema, now=NOW).alias("r"))["r"].to_list()


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("a > 1", [False, True, None]),
        ("a IS NULL", [False, False, True]),
        ("a IS NOT NULL AND a < 2", [True, False, False]),
        ("a IN (1, 2)", [True, True, None]),
        ("a NOT IN (1)", [False, True, None]),
        ("a BETWEEN 2 AND 5", [False, True, None]),
        ("a % 2 = 0 OR a IS NULL", [False, True, True]),
        ("UPPER(TRIM(s))", ["X", "YB", "C"]),
        ("LTRIM(s) || '|'", ["x |", "Yb|", "c|"]),
        ("s LIKE '%b'", [False, True, False]),
        ("s ILIKE '%YB'", [False, True, False]),
        ("CASE WHEN a > 1 THEN 'big' WHEN a = 1 THEN 'one' ELSE 'none' END", ["one", "big", "none"]),
        ("CASE a WHEN 1 THEN 'x' END", ["x", None, None]),
        ("IF(a > 1, 'y', 'n')", ["n", "y", "n"]),
        ("COALESCE(a, 0)", [1, 2, 0]),
        ("NVL(a, -1)", [1, 2, -1]),
        ("NULLIF(a, 2)", [1, None, None]),
        ("ROUND(amount * 1.2, 2)", [1.8, 2.7, 3.6]),
        ("CAST(amount AS DECIMAL(12,2))", [Decimal("1.50"), Decimal("2.25"), Decimal("3.00")]),
        ("CAST(a AS STRING)", ["1", "2", None]),
        ("CONCAT(s, '-', CAST(a AS STRING))", ["x -1", " Yb-2", None]),
        ("CONCAT_WS('-', 'k', CAST(a AS STRING))", ["k-1", "k-2", "k"]),
        ("LPAD(CAST(a AS STRING), 3, '0')", ["001", "002", None]),
        ("SUBSTRING(s, 2, 2)", [" ", "Yb", ""]),
        ("LENGTH(s)", [2, 3, 1]),
        ("DATE_FORMAT(ts, 'yyyy-MM')", ["2024-01", "2024-02", None]),
        ("YEAR(ts)", [2024, 2024, None]),
        ("MONTH(d)", [2, 3, None]),
        ("EXTRACT(DAY FROM ts)", [5, 29, None]),
        ("TO_DATE(d, 'yyyy-MM-dd')", [date(2024, 2, 3), date(2024, 3, 4), None]),
        ("CAST(d AS DATE)", [date(2024, 2, 3), date(2024, 3, 4), None]),
        ("DATE_TRUNC('month', ts)", [datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 2, 1, tzinfo=UTC), None]),
        ("ts + INTERVAL 1 DAY", [datetime(2024, 1, 6, 3, tzinfo=UTC), datetime(2024, 3, 1, 23, 59, tzinfo=UTC), None]),
        ("DATE_ADD(d, 30)", [date(2024, 3, 4), date(2024, 4, 3), None]),
        ("DATEDIFF(d, '2024-02-01')", [2, 32, None]),
        ("mixed_case + 1", [11, 21, 31]),
        ("GREATEST(a, 2)", [2, 2, 2]),
        ("CURRENT_DATE()", [date(2026, 5, 9)] * 3),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_expressions(sql: str, expected: list[Any]) -> None:
    result = evaluate(sql)
    assert (result * 3 if len(result) == 1 else result) == expected


def test_now_is_the_batch_instant() -> None:
    assert evaluate("NOW()") == [NOW]
    assert evaluate("CURRENT_TIMESTAMP()") == [NOW]


@pytest.mark.parametrize(
    ("sql", "match"),
    [
        ("1=1; DROP TABLE x", "holds 2 statements"),
        ("DROP TABLE x", "is a statement"),
        ("a IN (SELECT b FROM t)", "contains a subquery"),
        ("(SELECT max(a) FROM other)", "is a statement"),
        ("md5(s)", "'MD5' is not supported"),
        ("frobnicate(a)", "'FROBNICATE' is not supported"),
        ("a >", "does not parse"),
        ("", "is empty"),
        ("CAST(a AS lnog)", "does not parse"),
        ("missing_col + 1", "column 'missing_col' in .* does not exist"),
    ],
    ids=["statements", "drop", "subquery", "select", "md5", "unknown", "syntax", "empty", "bad-type", "column"],
)
def test_rejected(sql: str, match: str) -> None:
    with pytest.raises(SqlExpressionError, match=match):
        compile_expression(sql, schema=FRAME.schema)


def test_error_is_a_value_error_for_model_validators() -> None:
    with pytest.raises(ValueError, match="not supported"):
        compile_expression("md5(a)")


def test_without_schema_names_are_kept_as_written() -> None:
    assert parse_expression("Mixed_Case > 1").sql() == "Mixed_Case > 1"
    assert str(compile_expression("Mixed_Case > 1")) == str(pl.col("Mixed_Case") > pl.lit(1, pl.Int32))
