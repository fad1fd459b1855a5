from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import polars as pl
import pytest

from datacoolie_core.errors import SourceError
from datacoolie_core.sources.pushdown import literal, parse_query, table_query, where_condition, wrap
from datacoolie_core.sources.window import Comparison, Window
from datacoolie_core.sql import SqlExpressionError


@pytest.mark.parametrize(
    ("value", "dialect", "upper", "sql"),
    [
        (5, "postgres", False, "5"),
        (Decimal("1.50"), "postgres", False, "1.50"),
        (2.5, "sqlite", False, "2.5"),
        (True, "postgres", False, "TRUE"),
        ("x' OR '1'='1", "postgres", False, "'x'' OR ''1''=''1'"),
        (date(2024, 1, 2), "postgres", False, "CAST('2024-01-02' AS DATE)"),
        (date(2024, 1, 2), "sqlite", False, "'2024-01-02'"),
        (datetime(2024, 1, 2, 3, 4, 5), "postgres", False, "CAST('2024-01-02 03:04:05' AS TIMESTAMP)"),
        (datetime(2024, 1, 2, 3, tzinfo=UTC), "postgres", False, "CAST('2024-01-02 03:00:00+00:00' AS TIMESTAMPTZ)"),
        (datetime(2024, 1, 2, 3, 0, 0, 5), "sqlite", False, "'2024-01-02 03:00:00.000005'"),
        (datetime(2024, 1, 2, 3), "sqlite", True, "'2024-01-02T03:00:00'"),
        (datetime(2024, 1, 2, 3, tzinfo=UTC), "sqlite", False, "'2024-01-02 03:00:00'"),
    ],
    ids=["int", "decimal", "float", "bool", "quote-escaped", "pg-date", "sqlite-date", "pg-timestamp",
         "pg-timestamptz", "sqlite-lower-space", "sqlite-upper-T", "sqlite-aware-in-utc"],
)  # fmt: skip
def test_literal(value: Any, dialect: str, upper: bool, sql: str) -> None:
    assert literal(value, dialect, upper=upper).sql(dialect=dialect) == sql


@pytest.mark.parametrize("value", [float("inf"), [1], b"x"], ids=["inf", "list", "bytes"])
def test_literal_refuses(value: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        literal(value, "postgres")


COLUMNS: dict[str, pl.DataType | None] = {"Id": pl.Int64(), "changed_at": pl.Datetime("us"), "status": None}
TWO_COLUMNS = Window(((Comparison("id", ">", 5),), (Comparison("CHANGED_AT", ">", "2024-01-02T00:00:00"),)))


def test_where_parenthesises_the_or_window_before_the_filter() -> None:
    where = where_condition(TWO_COLUMNS, "upper(Status) = 'OK'", COLUMNS, "postgres", label="s")
    assert where is not None
    assert where.sql(dialect="postgres") == (
        """("Id" > 5 OR "changed_at" > CAST('2024-01-02 00:00:00' AS TIMESTAMP)) AND (UPPER("status") = 'OK')"""
    )


def test_window_bounds_are_typed_like_the_column_and_floored() -> None:
    window = Window(((Comparison("Id", ">=", 5.5), Comparison("Id", "<", "9")),))
    where = where_condition(window, None, COLUMNS, "sqlite", label="s")
    assert where is not None
    assert where.sql(dialect="sqlite") == '("Id" > 5 AND "Id" < 9)'


def test_filter_is_transpiled_from_spark() -> None:
    where = where_condition(None, "date_format(changed_at, 'yyyy') = '2024' AND status IS NOT NULL", COLUMNS,
                            "postgres", label="s")  # fmt: skip
    assert where is not None
    assert where.sql(dialect="postgres") == (
        """(TO_CHAR(CAST("changed_at" AS TIMESTAMP), 'YYYY') = '2024' AND NOT "status" IS NULL)"""
    )


def test_filter_with_unknown_column_or_statement_is_refused() -> None:
    with pytest.raises(SqlExpressionError, match="column 'nope' does not exist"):
        where_condition(None, "nope = 1", COLUMNS, "postgres", label="s")
    with pytest.raises(SqlExpressionError, match="statements"):
        where_condition(None, "1=1; DROP TABLE x", COLUMNS, "postgres", label="s")


def test_unknown_window_column_is_named() -> None:
    with pytest.raises(SourceError, match="watermark column 'updated' is not in the data"):
        where_condition(Window(((Comparison("updated", ">", 1),),)), None, COLUMNS, "postgres", label="s")


def test_table_and_wrapped_query() -> None:
    assert table_query("sales", "Orders").sql(dialect="postgres") == 'SELECT * FROM "sales"."Orders"'
    query = parse_query("SELECT a FROM t WHERE b = 1", "postgres", label="s")
    assert wrap(query).sql(dialect="postgres") == 'SELECT * FROM (SELECT a FROM t WHERE b = 1) AS "t1"'


@pytest.mark.parametrize("sql", ["SELECT 1; DROP TABLE t", "DELETE FROM t", "SELEC 1"], ids=["two", "dml", "typo"])
def test_parse_query_accepts_one_select_only(sql: str) -> None:
    with pytest.raises(SourceError, match=r"source\.query"):
        parse_query(sql, "postgres", label="s")
