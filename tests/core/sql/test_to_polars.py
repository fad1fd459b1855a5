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
        ("sentences(s)", "'SENTENCES' is not supported"),
        ("frobnicate(a)", "'FROBNICATE' is not supported"),
        ("a >", "does not parse"),
        ("", "is empty"),
        ("CAST(a AS lnog)", "does not parse"),
        ("missing_col + 1", "column 'missing_col' in .* does not exist"),
    ],
    ids=["statements", "drop", "subquery", "select", "sentences", "unknown", "syntax", "empty", "bad-type", "column"],
)
def test_rejected(sql: str, match: str) -> None:
    with pytest.raises(SqlExpressionError, match=match):
        compile_expression(sql, schema=FRAME.schema)


def test_error_is_a_value_error_for_model_validators() -> None:
    with pytest.raises(ValueError, match="not supported"):
        compile_expression("sentences(a)")


def test_without_schema_names_are_kept_as_written() -> None:
    assert parse_expression("Mixed_Case > 1").sql() == "Mixed_Case > 1"
    assert str(compile_expression("Mixed_Case > 1")) == str(pl.col("Mixed_Case") > pl.lit(1, pl.Int32))


SCHEMA = {"i": pl.Int32(), "s": pl.String(), "b": pl.Boolean(), "dt": pl.Date()}


@pytest.mark.parametrize(
    ("sql", "match"),
    [
        ("UPPPER(s)", r"'UPPPER' is not supported .*did you mean UPPER\? \(see docs/sql.md"),
        ("i BETWEEN SYMMETRIC 1 AND 2", "uses symmetric of Between, which is not supported"),
        ("CAST(i AS INT FORMAT 'x')", "uses format of TryCast, which is not supported"),
        ("s LIKE 'x\\'", "does not parse"),
        ("s LIKE 'ab\\\\'", "ends with the escape character"),
        ("b + 1", "'\\+' needs numbers, got BOOLEAN"),
        ("i DIV 2.5D", "DIV needs integers or decimals, got DOUBLE"),
        ("i < b", "cannot compare INT with BOOLEAN"),
        ("NOT s", "'s' is STRING, not BOOLEAN"),
        ("CASE WHEN NULL THEN 1 END", "is NULL, not BOOLEAN"),
        ("dt - dt", "with a DATE needs an INT number of days"),
        ("dt + INTERVAL 1 FORTNIGHT", "INTERVAL unit 'FORTNIGHT' is not supported"),
    ],
    ids=[
        "did-you-mean",
        "symmetric",
        "cast-format",
        "token",
        "escape",
        "bool-arith",
        "div-double",
        "int-vs-bool",
        "not-string",
        "case-null",
        "date-minus-date",
        "interval-unit",
    ],
)
def test_unsupported_is_a_sql_error_naming_the_construct(sql: str, match: str) -> None:
    with pytest.raises(SqlExpressionError, match=match):
        compile_expression(sql, schema=SCHEMA)


@pytest.mark.parametrize(
    ("sql", "expected", "dtype"),
    [
        ("-59 % 100", -59, pl.Int32()),
        ("MOD(-59, 100)", -59, pl.Int32()),
        ("PMOD(-59, 100)", 41, pl.Int32()),
        ("-7 DIV 2", -3, pl.Int64()),
        ("7 / 0", None, pl.Float64()),
        ("7 % 0", None, pl.Int32()),
        ("2147483647 + 1", -2147483648, pl.Int32()),
        ("'tst-1' NOT LIKE 'tst%'", False, pl.Boolean()),
        ("'abc' NOT ILIKE 'A%'", False, pl.Boolean()),
        ("1 NOT IN (2, NULL)", None, pl.Boolean()),
        ("5 NOT BETWEEN 1 AND 3", True, pl.Boolean()),
        ("1.5", Decimal("1.5"), pl.Decimal(2, 1)),
        ("1.5e0", 1.5, pl.Float64()),
        ("1L", 1, pl.Int64()),
        ("CAST(' 12 ' AS INT)", 12, pl.Int32()),
        ("CAST('1.5' AS INT)", 1, pl.Int32()),
        ("CAST('yes' AS BOOLEAN)", True, pl.Boolean()),
        ("CAST(1e10 AS STRING)", "1.0E10", pl.String()),
        ("NULL <=> NULL", True, pl.Boolean()),
        # an explicit CAST is no literal to Spark: INT widens to DECIMAL(10,0), not to its digits
        ("1.5 + CAST(1e10 AS INT)", Decimal("2147483648.5"), pl.Decimal(12, 1)),
        ("IF(x = 0, 1.5, -0.25) + CAST(1e10 AS INT) + 1.5", Decimal("2147483650.00"), pl.Decimal(14, 2)),
        ("1.5 + CAST(3 AS BIGINT)", Decimal("4.5"), pl.Decimal(22, 1)),
        ("1.5 + 3L", Decimal("4.5"), pl.Decimal(3, 1)),  # the suffix form is a literal
        ("CAST('02024-01-05' AS DATE)", date(2024, 1, 5), pl.Date()),  # Spark reads up to 7 year digits
        ("CAST('002024-01-05 10:00:00' AS TIMESTAMP)", datetime(2024, 1, 5, 10, tzinfo=UTC), pl.Datetime("us", "UTC")),
        ("CAST('0002024-01-05 10:00:00' AS TIMESTAMP)", None, pl.Datetime("us", "UTC")),  # 7 digits: a date only
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_spark_semantics_without_spark(sql: str, expected: Any, dtype: pl.DataType) -> None:
    result = pl.DataFrame({"x": [0]}).select(compile_expression(sql, schema={"x": pl.Int64()}).alias("r"))["r"]
    assert (result.to_list(), result.dtype) == ([expected], dtype)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("CAST((x + 0) AS STRING)", ["0.0", "0.0", "1.5", "NaN"]),
        ("CAST((0 + x) AS STRING)", ["0.0", "0.0", "1.5", "NaN"]),
        ("CAST((x - -0.0D) AS STRING)", ["0.0", "0.0", "1.5", "NaN"]),
        ("CAST((0.0D - x) AS STRING)", ["0.0", "0.0", "-1.5", "NaN"]),
        ("CAST((x + -0.0D) AS STRING)", ["-0.0", "0.0", "1.5", "NaN"]),
        ("CAST((x - 0) AS STRING)", ["-0.0", "0.0", "1.5", "NaN"]),
        ("CAST((-0.0D + 0) AS STRING)", ["0.0"]),  # a constant: one row
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_adding_a_zero_constant_gives_the_ieee_zero_sign(sql: str, expected: list[str]) -> None:
    # Spark computes -0.0 + 0 = 0.0 (IEEE); Polars' optimizer folds `x + 0.0` to `x` and kept -0.0
    frame = pl.DataFrame({"x": [-0.0, 0.0, 1.5, float("nan")]})
    assert frame.select(compile_expression(sql, schema=frame.schema).alias("r"))["r"].to_list() == expected


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("'abc' <=> COALESCE('', x)", [False, False]),
        ("NOT IF(2.5D IS NULL, true, 'abc' <=> COALESCE('', x))", [True, True]),
        ("CAST(CAST('abc' AS DOUBLE) AS DECIMAL(12,3)) <> CAST(CAST(x AS DOUBLE) AS DECIMAL(12,3))", [None, None]),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_constants_folded_by_polars_fill_every_row(sql: str, expected: list[Any]) -> None:
    # Polars folds COALESCE('', x) to '' after fixing the shape: one value, "length 1 doesn't match the height"
    frame = pl.DataFrame({"x": ["1", None]})
    result = frame.with_columns(compile_expression(sql, schema=frame.schema).alias("r"))["r"]
    assert result.to_list() == expected


def test_dividing_by_a_constant_is_exact_division() -> None:
    # Polars divides a column by a scalar by multiplying with its reciprocal: 7 * (1 / 1e10) is
    # 7.000000000000001E-10 where Spark (and 7 / 1e10) give 7.0E-10
    frame = pl.DataFrame({"x": [7, -7, 1]})
    result = frame.select(compile_expression("CAST(x / 1e10 AS STRING)", schema=frame.schema).alias("r"))["r"]
    assert result.to_list() == ["7.0E-10", "-7.0E-10", "1.0E-10"]
