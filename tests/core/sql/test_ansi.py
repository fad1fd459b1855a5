"""ANSI mode (``spark.sql.ansi.enabled``): casts and arithmetic raise Spark's error class, loads stop unwritten.

The values and error classes below were observed in Spark 3.5.8 with ANSI on; the oracle runs the
generated cast and arithmetic corpus in both modes (tests/core/sql/oracle/test_oracle.py).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from datacoolie_core.models.runtime import DataFlowRuntimeInfo
from datacoolie_core.orchestration.driver import DataCoolieDriver
from datacoolie_core.sql import SqlExpressionError, compile_expression
from datacoolie_core.sql.ansi import SparkAnsiError
from tests.core.orchestration.driver_support import Lake

FRAME = pl.DataFrame(
    {"s": ["1", "abc", None], "i": [1, 0, None], "l": [2**62, 1, None]},
    schema={"s": pl.String, "i": pl.Int32, "l": pl.Int64},
)


def evaluate(sql: str, *, ansi: bool) -> list[Any]:
    return FRAME.select(compile_expression(sql, schema=FRAME.schema, ansi=ansi).alias("r"))["r"].to_list()


@pytest.mark.parametrize(
    ("sql", "error_class", "value"),
    [
        ("CAST(s AS INT)", "CAST_INVALID_INPUT", "'abc'"),
        ("CAST('1.5' AS INT)", "CAST_INVALID_INPUT", "'1.5'"),
        ("CAST(l AS INT)", "CAST_OVERFLOW", "4611686018427387904"),
        ("CAST(25.5D AS DECIMAL(2,1))", "NUMERIC_VALUE_OUT_OF_RANGE", "25.5"),
        ("10 / i", "DIVIDE_BY_ZERO", "Division by zero"),
        ("10 % i", "DIVIDE_BY_ZERO", "Division by zero"),
        ("l * 4", "ARITHMETIC_OVERFLOW", "18446744073709551616"),
        ("-CAST(-2147483648 AS INT)", "ARITHMETIC_OVERFLOW", "-2147483648"),
        ("split(s, ',')[1]", "INVALID_ARRAY_INDEX", "The index 1 is out of bounds. The array has 1 elements"),
        ("element_at(split(s, ','), -2)", "INVALID_ARRAY_INDEX_IN_ELEMENT_AT", "The index -2 is out of bounds"),
        ("to_timestamp(s, 'yyyy-MM-dd')", "CANNOT_PARSE_TIMESTAMP", "Text '1' could not be parsed"),
        ("to_date(s, 'yyyy-MM-dd')", "CANNOT_PARSE_TIMESTAMP", "Text '1'"),
        ("unix_timestamp(s, 'yyyy-MM-dd')", "CANNOT_PARSE_TIMESTAMP", "Text '1'"),
        ("to_timestamp_ntz(s, 'yyyy-MM-dd')", "CANNOT_PARSE_TIMESTAMP", "Text '1'"),
        ("abs(CAST(-2147483648 AS INT) + i - i)", "ARITHMETIC_OVERFLOW", "-2147483648"),
        ("elt(i + 2, s, 'two')", "INVALID_ARRAY_INDEX", "The index 3 is out of bounds. The array has 2 elements"),
        ("round(2147483647 - i + i, -1)", "ARITHMETIC_OVERFLOW", "2147483647"),
        ("bround(9223372036854775807L - i + i, -1)", "ARITHMETIC_OVERFLOW", "9223372036854775807"),
        ("ceil(1e300D + i, 0)", "NUMERIC_VALUE_OUT_OF_RANGE", "cannot be represented as DECIMAL"),
    ],
)
def test_a_bad_row_raises_spark_error_class_with_the_value(sql: str, error_class: str, value: str) -> None:
    with pytest.raises(SparkAnsiError, match=rf"^\[{error_class}\] .*{value}") as raised:
        evaluate(sql, ansi=True)
    assert raised.value.error_class == error_class
    assert "spark.sql.ansi.enabled" in str(raised.value)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("make_date(2024, 2, 29 + i)", "Invalid date 'FEBRUARY 30'"),
        ("make_date(2023, 2, 28 + i)", "Invalid date 'February 29' as '2023' is not a leap year"),
        ("make_date(2024, 12 + i, 1)", r"Invalid value for MonthOfYear \(valid values 1 - 12\): 13"),
        ("make_date(2024, 1, 31 + i)", r"Invalid value for DayOfMonth \(valid values 1 - 28/31\): 32"),
        ("make_timestamp(2024, 1, 1, 23 + i, 0, 0)", r"Invalid value for HourOfDay \(valid values 0 - 23\): 24"),
        ("make_timestamp(2024, 1, 1, 0, 59 + i, 0)", r"Invalid value for MinuteOfHour \(valid values 0 - 59\): 60"),
        ("make_timestamp(2024, 1, 1, 0, 0, i - 2)", r"Invalid value for SecondOfMinute \(valid values 0 - 59\): -1"),
        ("make_timestamp_ltz(2024, 4, 30 + i, 0, 0, 0, 'Europe/Paris')", "Invalid date 'APRIL 31'"),
        ("make_timestamp_ntz(2024, 6, 30 + i, 0, 0, 0)", "Invalid date 'JUNE 31'"),
    ],
)
def test_made_dates_with_invalid_fields_raise_java_time_message(sql: str, message: str) -> None:
    # Spark 3.5 (ANSI on) raises java.time's DateTimeException, which has no error class
    assert evaluate(sql, ansi=False)[0] is None
    with pytest.raises(SparkAnsiError, match=rf"^{message} \(in MAKE_[A-Z_]+ of SQL expression") as raised:
        evaluate(sql, ansi=True)
    assert raised.value.error_class == ""
    assert "spark.sql.ansi.enabled is on" in str(raised.value)


def test_made_timestamps_take_sixty_seconds_as_the_next_minute_and_refuse_a_fraction_past_it() -> None:
    expected = [datetime(2024, 1, 1, 0, 1, tzinfo=UTC), datetime(2024, 1, 1, 0, 1, tzinfo=UTC), None]
    assert evaluate("make_timestamp(2024, 1, 1, 0, 0, 60 + i - i)", ansi=True) == expected
    with pytest.raises(SparkAnsiError, match=r"^\[INVALID_FRACTION_OF_SECOND\] .*got 60\.5"):
        evaluate("make_timestamp(2024, 1, 1, 0, 0, 60.5 + i - i)", ansi=True)
    assert evaluate("make_timestamp(2024, 1, 1, 0, 0, 60.5 + i - i)", ansi=False) == [None, None, None]


@pytest.mark.parametrize(
    ("sql", "ansi_off"),
    [
        ("CAST(s AS INT)", [1, None, None]),
        ("10 / i", [10.0, None, None]),
        ("l * 4", [0, 4, None]),
        ("elt(i + 2, s, 'two')", [None, "two", None]),
        ("round(2147483647 - i + i, -1)", [-2147483646, -2147483646, None]),
        ("split(s, ',')[1]", [None, None, None]),
        ("size(split(s, ','))", [1, 1, -1]),
    ],
)
def test_ansi_off_keeps_null_and_wrap(sql: str, ansi_off: list[Any]) -> None:
    assert evaluate(sql, ansi=False) == ansi_off


@pytest.mark.parametrize(
    ("sql", "value"),
    [
        ("TRY_CAST(s AS INT)", [1, None, None]),
        ("try_divide(10, i)", [10.0, None, None]),
        ("try_multiply(l, 4)", [None, 4, None]),
        ("CAST(s AS INT) IS NULL OR i > 5", None),
        ("try_element_at(split(s, ','), 2)", [None, None, None]),
        ("get(split(s, ','), 1)", [None, None, None]),
        ("size(split(s, ','))", [1, 1, None]),  # -1 for the NULL array with ANSI off only
        ("try_to_timestamp(s, 'yyyy-MM-dd')", [None, None, None]),
        ("try_to_timestamp(s)", [None, None, None]),
    ],
)
def test_try_functions_keep_null_in_ansi_mode(sql: str, value: list[Any] | None) -> None:
    if value is None:  # the cast inside still raises: only TRY_ forms tolerate
        with pytest.raises(SparkAnsiError):
            evaluate(sql, ansi=True)
    else:
        assert evaluate(sql, ansi=True) == value


@pytest.mark.parametrize(
    "sql",
    [
        "CAST(DATE'2024-01-01' AS INT)",
        "CAST(true AS TIMESTAMP)",
        "s + s",
        "s - NULL",
        "next_day(DATE'2024-01-01', 'xx')",
    ],
    ids=["date", "bool", "string + string", "string - null", "day name"],
)
def test_casts_spark_refuses_in_ansi_mode_are_refused_at_load(sql: str) -> None:
    compile_expression(sql, schema=FRAME.schema)  # fine with ANSI off
    with pytest.raises(SqlExpressionError, match=r"spark\.sql\.ansi\.enabled"):
        compile_expression(sql, schema=FRAME.schema, ansi=True)


WHOLE = pl.DataFrame(
    {"s": ["1", " 42 ", None], "i": [1, 0, None], "d": [0.5, 2.0, None], "b": [True, False, None]},
    schema={"s": pl.String, "i": pl.Int32, "d": pl.Float64, "b": pl.Boolean},
)


@pytest.mark.parametrize(
    ("sql", "dtype", "ansi_on", "ansi_off"),
    [
        ("s + i", pl.Int64, [2, 42, None], [2.0, 42.0, None]),
        ("s / 2", pl.Float64, [0.5, 21.0, None], [0.5, 21.0, None]),
        ("s DIV 2", pl.Int64, [0, 21, None], None),
        ("s + d", pl.Float64, [1.5, 44.0, None], [1.5, 44.0, None]),
        ("s = i", pl.Boolean, [True, False, None], [True, False, None]),
        ("'3000000000' = i", pl.Boolean, [False, False, None], [None, None, None]),
        ("s IN (1, 42)", pl.Boolean, [True, True, None], [True, False, None]),
        ("coalesce(s, i)", pl.Int64, [1, 42, None], ["1", " 42 ", None]),
        ("nvl(i, s)", pl.Int64, [1, 0, None], ["1", "0", None]),
        ("coalesce(s, d)", pl.Float64, [1.0, 42.0, None], ["1", " 42 ", None]),
        ("nvl2(i, s, 0)", pl.Int64, [1, 42, 0], ["1", " 42 ", "0"]),
        ("CASE WHEN b THEN s ELSE i END", pl.Int64, [1, 0, None], ["1", "0", None]),
        ("if(b, d, s)", pl.Float64, [0.5, 42.0, None], ["0.5", " 42 ", None]),
        ("decode(i, 1, 2)", pl.Int64, [2, None, None], ["2", None, None]),
        ("array(s, i)", pl.List(pl.Int64), [[1, 1], [42, 0], [None, None]], [["1", "1"], [" 42 ", "0"], [None, None]]),
    ],
)
def test_a_string_next_to_another_type_is_cast_to_it_in_ansi_mode(
    sql: str, dtype: pl.DataType, ansi_on: list[Any], ansi_off: list[Any] | None
) -> None:
    # Spark 3.5 (AnsiTypeCoercion): a STRING next to an integer is a BIGINT, next to a DOUBLE or DECIMAL a
    # DOUBLE, next to a DATE a DATE; ANSI off reads it as DOUBLE in arithmetic and casts the rest to STRING
    compiled = WHOLE.select(compile_expression(sql, schema=WHOLE.schema, ansi=True).alias("r"))["r"]
    assert compiled.dtype == dtype
    assert compiled.to_list() == ansi_on
    if ansi_off is not None:
        assert WHOLE.select(compile_expression(sql, schema=WHOLE.schema).alias("r"))["r"].to_list() == ansi_off


@pytest.mark.parametrize(
    ("sql", "value"),
    [
        ("s + 1", "'abc'"),
        ("coalesce(s, i)", "'abc'"),
        ("array(i, s)", "'abc'"),
        ("s = i", "'abc'"),
        ("CASE WHEN i = 0 THEN s ELSE i END", "'abc'"),
        ("decode(i, 1, 'one', 2)", "'one'"),
        ("i IS NOT NULL OR i = 'x'", "'x'"),  # a constant: Spark's constant folding raises before any row
    ],
)
def test_malformed_text_cast_by_ansi_coercion_raises_cast_invalid_input(sql: str, value: str) -> None:
    with pytest.raises(SparkAnsiError, match=rf"^\[CAST_INVALID_INPUT\] The value {value} .* \"BIGINT\""):
        evaluate(sql, ansi=True)


@pytest.mark.parametrize(
    "sql",
    [
        "CASE WHEN s RLIKE '^[0-9]+$' THEN s ELSE i END",
        "if(s = 'abc', i, s)",
        "coalesce(i, s)",
        "k + s",
        "s + CAST(NULL AS INT)",
        "nullif(s, CAST(NULL AS INT))",
        "if(i = 0, TIMESTAMP'2024-01-01 00:00:00', NULL)",
        "coalesce(i, CAST(s AS INT))",
        "i = 0 OR CAST(s AS INT) > 0",
        "i IS NULL AND CAST(s AS INT) > 0",
    ],
)
def test_ansi_casts_raise_only_on_rows_spark_evaluates_them_on(sql: str) -> None:
    # a CASE branch, an IF side, a later COALESCE argument, the right operand where the left is NULL, the
    # right side of OR/AND where the left decides, an operand next to a constant NULL (folded away by
    # Spark's optimizer): 'abc' is never cast there
    frame = pl.DataFrame(
        {"s": ["1", "abc"], "i": [None, 0], "k": [0, None]}, schema={"s": pl.String, "i": pl.Int32, "k": pl.Int32}
    )
    frame.select(compile_expression(sql, schema=frame.schema, ansi=True))


def _run_strict_and_lenient(
    tmp_path: Path, column: str, expression: str
) -> tuple[Lake, dict[str, DataFlowRuntimeInfo]]:
    """The same computed column in two dataflows, ``strict`` with ANSI on and ``lenient`` without; their runtimes."""
    lake = Lake(tmp_path)
    transform = {"additional_columns": [{"column": column, "expression": expression}]}
    lake.add("strict", transform=transform, configure={"spark.sql.ansi.enabled": "true"})
    lake.add("lenient", transform=transform)
    lake.write()
    with DataCoolieDriver(metadata_base_path=lake.metadata_path, log_base_path=lake.logs) as driver:
        return lake, {r.dataflow_name: r for r in driver.run().runtimes}


def _assert_strict_failed_writing_nothing(lake: Lake, runtimes: dict[str, DataFlowRuntimeInfo], message: str) -> None:
    strict = runtimes["strict"]
    assert isinstance(strict.exception, SparkAnsiError)
    assert message in (strict.error_message or "")
    assert not lake.has_table("strict")


def test_a_dataflow_with_ansi_on_fails_on_a_bad_row_and_writes_nothing(tmp_path: Path) -> None:
    lake, runtimes = _run_strict_and_lenient(tmp_path, "per_unit", "CAST(amount AS INT) DIV (order_id - 2)")

    _assert_strict_failed_writing_nothing(lake, runtimes, "[DIVIDE_BY_ZERO]")
    assert runtimes["lenient"].exception is None
    assert lake.table("lenient")["per_unit"].to_list() == [-10, None, 30]


def test_a_dataflow_with_ansi_on_fails_on_an_invalid_made_date_naming_it_and_writes_nothing(tmp_path: Path) -> None:
    lake, runtimes = _run_strict_and_lenient(tmp_path, "due", "make_date(2024, 2, 27 + order_id)")

    _assert_strict_failed_writing_nothing(lake, runtimes, "Invalid date 'FEBRUARY 30' (in MAKE_DATE of SQL expression")
    assert lake.table("lenient")["due"].to_list() == [date(2024, 2, 28), date(2024, 2, 29), None]


def test_the_setting_is_read_from_the_dataflow_then_its_connections(tmp_path: Path) -> None:
    from datacoolie_core.sql.ansi import enabled_for

    lake = Lake(tmp_path)
    lake.connections[1]["configure"] |= {"spark.sql.ansi.enabled": True}  # the destination connection
    lake.add("by_connection").add("overridden", configure={"spark.sql.ansi.enabled": "false"}).write()
    with DataCoolieDriver(metadata_base_path=lake.metadata_path) as driver:
        flows = {flow.name: flow for flow in driver.load_dataflows()}

    assert enabled_for(flows["by_connection"]) is True
    assert enabled_for(flows["overridden"]) is False
    assert enabled_for(object()) is False
