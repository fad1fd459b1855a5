"""Differential oracle: every SQL expression is evaluated by Spark 3.5 (ANSI off) and by our compiler.

Stable API (the ``sqlfn`` helper and the corpus build on it)::

    from tests.core.sql.oracle.harness import Case, check

    report = check(spark, [Case("x % 3", origin="operator"), ...])   # spark: the session fixture
    assert not report.mismatches, report.summary()

* :class:`Case` -- one SQL expression over the input table (:mod:`tests.core.sql.oracle.table`),
  with ``origin`` naming the generator or signature that made it (shown in reports).
* :func:`check` -- evaluates all cases in Spark (batched: one ``SELECT e1 AS c0, e2 AS c1, ...`` per
  batch over one DataFrame; a failing batch is bisected to find the cases Spark rejects) and with
  :func:`~datacoolie_core.sql.compile_expression` on the same rows in Polars, then compares them with
  :func:`compare`. Returns a :class:`Report` (``cases``, ``mismatches``, ``deliberate``, ``raised``).
* :func:`compare` -- the rules: the Polars dtype must be :func:`polars_dtype` of Spark's result type
  (the "natural image": int->Int32, bigint->Int64, double->Float64, decimal(p,s)->Decimal(p,s),
  string->String, boolean->Boolean, date->Date, timestamp->Datetime('us','UTC'),
  timestamp_ntz->Datetime('us'), void->Null); values equal row by row (floats within a relative 1e-9,
  NaN equals NaN, timestamps compared in UTC). When Spark raises, we must reject the expression at
  compile time with ``SqlExpressionError``. When we reject what Spark accepts, that is a mismatch too.
* Deliberate differences are listed in :mod:`tests.core.sql.oracle.differences` (pattern -> reason);
  a case matching one is counted in ``Report.deliberate`` and not compared.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import polars as pl

from datacoolie_core.sql import SqlExpressionError, compile_expression
from datacoolie_core.sql.ansi import SparkAnsiError
from tests.core.sql.oracle import table
from tests.core.sql.oracle.differences import deliberate, deliberate_in_ansi, refused

UNREPRESENTABLE = "Spark's result is outside Python's date range"
BATCH = 250
"""Expressions per Spark query: big enough to amortize a job, small enough for Spark's analyzer."""
REL_TOL = 1e-9

_SIMPLE: dict[str, pl.DataType] = {
    "tinyint": pl.Int8(),
    "smallint": pl.Int16(),
    "int": pl.Int32(),
    "bigint": pl.Int64(),
    "float": pl.Float32(),
    "double": pl.Float64(),
    "string": pl.String(),
    "boolean": pl.Boolean(),
    "date": pl.Date(),
    "timestamp": pl.Datetime("us", "UTC"),
    "timestamp_ntz": pl.Datetime("us"),
    "void": pl.Null(),
    "binary": pl.Binary(),
}


def polars_dtype(spark_type: Any) -> pl.DataType:
    """The natural Polars image of a Spark type (a ``pyspark`` DataType or its simple string)."""
    name = spark_type if isinstance(spark_type, str) else spark_type.simpleString()
    if name in _SIMPLE:
        return _SIMPLE[name]
    if name.startswith("array<") and name.endswith(">"):
        return pl.List(polars_dtype(name[len("array<") : -1]))
    if name.startswith("decimal("):
        precision, scale = name[len("decimal(") : -1].split(",")
        return pl.Decimal(int(precision), int(scale))
    raise ValueError(f"no Polars image for Spark type {name!r}")


@dataclass(frozen=True)
class Case:
    """One SQL expression over the input table; ``origin`` says which generator made it."""

    sql: str
    origin: str = ""


@dataclass(frozen=True)
class Outcome:
    """An evaluation: the result dtype and values, or the error (``rejected`` = SqlExpressionError)."""

    dtype: pl.DataType | None = None
    values: tuple[Any, ...] = ()
    error: str | None = None
    rejected: bool = False
    error_class: str | None = None
    """Spark's error class of a run-time error (``DIVIDE_BY_ZERO``), on either side."""


@dataclass
class Report:
    cases: int = 0
    raised: int = 0
    unrepresentable: int = 0
    deliberate: int = 0
    mismatches: list[str] = field(default_factory=list)

    def summary(self, limit: int = 40) -> str:
        head = (
            f"{len(self.mismatches)} mismatches in {self.cases} cases "
            f"({self.raised} raise in Spark, {self.deliberate} deliberate differences, "
            f"{self.unrepresentable} beyond Python's dates)"
        )
        return "\n".join([head, *(line[:400] for line in self.mismatches[:limit])])


def check(spark: Any, cases: Iterable[Case], *, ansi: bool = False) -> Report:
    """Evaluate ``cases`` in Spark and in Polars and compare them (duplicates by SQL are dropped).

    ``ansi``: both sides in ANSI mode (``spark.sql.ansi.enabled``); a row Spark raises on must raise
    the same error class here.
    """
    unique = list({case.sql: case for case in cases}.values())
    report = Report(cases=len(unique))
    differs = deliberate_in_ansi if ansi else deliberate
    compared = [case for case in unique if differs(case.sql) is None]
    report.deliberate = len(unique) - len(compared)
    frame = table.polars_frame(polars_dtype)
    ours = {case.sql: evaluate_polars(frame, case.sql, ansi=ansi) for case in compared}
    # what we reject, Spark's analyzer likely rejects too: analyze those one by one, batch the rest
    # what we raise on at run time, Spark likely raises on too: evaluate those one by one (a raising
    # batch would be bisected, one job per halving)
    raising = [case.sql for case in compared if ours[case.sql].error_class is not None]
    accepted = [case.sql for case in compared if not ours[case.sql].rejected and ours[case.sql].error_class is None]
    rejected = [case.sql for case in compared if ours[case.sql].rejected]
    saved = spark.conf.get(_ANSI)
    spark.conf.set(_ANSI, str(ansi).lower())
    try:
        theirs = dict(zip(accepted, evaluate_spark(spark, accepted), strict=True))
        theirs.update(zip(rejected, evaluate_spark(spark, rejected, likely_rejected=True), strict=True))
        theirs.update(zip(raising, evaluate_spark(spark, raising, singly=True), strict=True))
    finally:
        spark.conf.set(_ANSI, saved)
    for case in compared:
        expected = theirs[case.sql]
        if expected.error is not None and expected.error.startswith(UNREPRESENTABLE):
            report.unrepresentable += 1  # PySpark cannot hand the value over; nothing to compare
            continue
        report.raised += expected.error is not None
        problem = compare(expected, ours[case.sql])
        if problem is not None:
            report.mismatches.append(f"[{case.origin}] {case.sql}: {problem}")
    return report


def evaluate_spark(
    spark: Any, expressions: Sequence[str], *, likely_rejected: bool = False, singly: bool = False
) -> list[Outcome]:
    """Spark's outcome for each expression, in batches over the input table.

    ``likely_rejected``: most will fail analysis, so analyze each alone instead of bisecting.
    ``singly``: most will raise at run time, so run each alone instead of bisecting.
    """
    frame = table.spark_frame(spark)
    saved = {key: spark.conf.get(key) for key in _INTERPRETED}
    for key, value in _INTERPRETED.items():
        spark.conf.set(key, value)
    try:
        outcomes: list[Outcome] = []
        size = 1 if singly else BATCH
        for start in range(0, len(expressions), size):
            batch = list(expressions[start : start + size])
            outcomes.extend(
                _analyzed_apart(frame, batch, alone=True) if likely_rejected else _spark_batch(frame, batch)
            )
    finally:
        for key, value in saved.items():
            spark.conf.set(key, value)
    return outcomes


# nine rows evaluate faster interpreted than through Java code generation (same semantics)
_INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


def _spark_batch(frame: Any, expressions: list[str]) -> list[Outcome]:
    try:
        result = frame.selectExpr(*(f"{sql} AS c{k}" for k, sql in enumerate(expressions)))
    except Exception:  # an expression Spark's analyzer rejects: find them one by one (analysis only)
        return _analyzed_apart(frame, expressions)
    try:
        rows = result.collect()
    except (ValueError, OverflowError) as e:  # a date/timestamp beyond Python's years 1-9999
        if len(expressions) == 1:
            return [Outcome(error=f"{UNREPRESENTABLE}: {e}")]
        middle = len(expressions) // 2
        return _spark_batch(frame, expressions[:middle]) + _spark_batch(frame, expressions[middle:])
    except Exception as e:  # a runtime error (rare with ANSI off): bisect to find its case
        if len(expressions) == 1:
            return [_failed(e)]
        middle = len(expressions) // 2
        return _spark_batch(frame, expressions[:middle]) + _spark_batch(frame, expressions[middle:])
    outcomes = []
    for k, spark_field in enumerate(result.schema.fields):
        try:
            dtype = polars_dtype(spark_field.dataType)
        except ValueError as e:  # e.g. an INTERVAL: a type we have no image of, so we must reject it
            outcomes.append(Outcome(error=str(e)))
            continue
        outcomes.append(Outcome(dtype=dtype, values=tuple(_from_spark(row[k], dtype) for row in rows)))
    return outcomes


def _analyzed_apart(frame: Any, expressions: list[str], *, alone: bool = False) -> list[Outcome]:
    failures = _rejected_alone(frame, expressions) if alone else _rejected_by_analyzer(frame, expressions, 0)
    valid = [sql for k, sql in enumerate(expressions) if k not in failures]
    evaluated = iter(_spark_batch(frame, valid) if valid else [])
    return [failures[k] if k in failures else next(evaluated) for k in range(len(expressions))]


def _rejected_alone(frame: Any, expressions: list[str]) -> dict[int, Outcome]:
    failures = {}
    for k, sql in enumerate(expressions):
        try:
            frame.selectExpr(sql)
        except Exception as e:
            failures[k] = _failed(e)
    return failures


def _rejected_by_analyzer(frame: Any, expressions: list[str], offset: int) -> dict[int, Outcome]:
    """Positions (plus ``offset``) of the expressions Spark's analyzer rejects, by bisection (no jobs run)."""
    try:
        frame.selectExpr(*expressions)
    except Exception as e:
        if len(expressions) == 1:
            return {offset: _failed(e)}
        middle = len(expressions) // 2
        return {
            **_rejected_by_analyzer(frame, expressions[:middle], offset),
            **_rejected_by_analyzer(frame, expressions[middle:], offset + middle),
        }
    return {}


_ANSI = "spark.sql.ansi.enabled"
_ERROR_CLASS = re.compile(r"\[([A-Z][A-Z_]+)(?:\.[A-Z_]+)*\]")
_ANALYSIS_ERRORS = ("AnalysisException", "ParseException")


def _failed(error: Exception) -> Outcome:
    # a run-time error (not the analyzer's) starts with its class: "[DIVIDE_BY_ZERO] Division by zero."
    runtime = type(error).__name__ not in _ANALYSIS_ERRORS
    found = _ERROR_CLASS.search(str(error)) if runtime else None
    lines = str(error).splitlines()
    # a Java exception wrapped by Py4J: its message is on a later line ("java.lang....Exception: ...", or
    # Spark's own "org.apache.spark.SparkDateTimeException: ..." of an error without a class)
    found_cause = re.search(
        r"(?:java\.lang\.[\w.$]*|org\.apache\.spark\.Spark\w*)(?:Exception|Error): [^\n]*", str(error)
    )
    cause = found_cause.group(0) if found_cause else ""
    return Outcome(
        error=f"{type(error).__name__}: {lines[0][:200]}{' ' + cause[:300] if cause else ''}",
        error_class=found.group(1) if found else None,
    )


def evaluate_polars(frame: pl.DataFrame, sql: str, *, ansi: bool = False) -> Outcome:
    """Our outcome: compile against the frame's schema and evaluate on every row."""
    try:
        expression = compile_expression(sql, schema=frame.schema, now=datetime(2026, 5, 9, tzinfo=UTC), ansi=ansi)
    except SqlExpressionError as e:
        return Outcome(error=str(e), rejected=True)
    except Exception as e:  # a raw crash is a finding, reported as a mismatch
        return Outcome(error=f"compile crashed: {type(e).__name__}: {e}")
    try:
        column = frame.with_columns(expression.alias("__oracle__")).get_column("__oracle__")
        values = tuple(_from_polars(v) for v in column.to_list())
    except (KeyboardInterrupt, SystemExit):
        raise
    except SparkAnsiError as e:
        return Outcome(error=str(e).splitlines()[0][:300], error_class=e.error_class)
    except BaseException as e:  # Polars panics are BaseExceptions (pyo3's PanicException)
        return Outcome(error=f"evaluation crashed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    return Outcome(dtype=column.dtype, values=values)


def compare(spark: Outcome, ours: Outcome) -> str | None:
    """Why our outcome differs from Spark's, or ``None`` when they agree."""
    if spark.error is not None:
        if spark.error_class is not None and spark.error_class == ours.error_class:
            return None  # ANSI mode: the same run-time error class
        if spark.error_class is None and ours.error_class == "" and ours.error and _message(ours.error) in spark.error:
            return None  # an error without a class in Spark 3.5 (an illegal SEQUENCE): the same message
        return (
            None
            if ours.rejected
            else f"Spark raises ({spark.error_class or spark.error}) but we {ours.error or 'evaluate it'}"
        )
    if ours.error is not None:
        if ours.error_class is not None:
            return f"we raise {ours.error} where Spark gives {list(spark.values)}"
        if ours.rejected and refused(ours.error):
            return None  # a documented limit (an argument must be a literal): refused at load, never wrong
        return f"we fail: {ours.error}"
    if ours.dtype != spark.dtype:
        return f"dtype {ours.dtype} != Spark {spark.dtype} (values {list(ours.values)} vs {list(spark.values)})"
    for row, (mine, theirs) in enumerate(zip(ours.values, spark.values, strict=True)):
        if not _same(mine, theirs):
            return f"row {row}: {mine!r} != Spark {theirs!r} (all: {list(ours.values)} vs {list(spark.values)})"
    return None


def _message(error: str) -> str:
    """Our run-time error's message without where it happened (``... (in [MAKE_DATE of] SQL expression ...``)."""
    return re.split(r" \(in (?:\w+ of )?SQL expression", error)[0]


def _same(mine: Any, theirs: Any) -> bool:
    if mine is None or theirs is None:
        return mine is None and theirs is None
    if isinstance(theirs, list) and isinstance(mine, list):  # an ARRAY: element by element
        return len(mine) == len(theirs) and all(_same(a, b) for a, b in zip(mine, theirs, strict=True))
    if isinstance(theirs, float) and isinstance(mine, float):
        if math.isnan(theirs) or math.isnan(mine):
            return math.isnan(theirs) and math.isnan(mine)
        return math.isclose(mine, theirs, rel_tol=REL_TOL, abs_tol=1e-300)
    if isinstance(theirs, Decimal) or isinstance(mine, Decimal):
        return Decimal(mine) == Decimal(theirs)
    return type(mine) is type(theirs) and bool(mine == theirs)


def _from_spark(value: Any, dtype: pl.DataType) -> Any:
    # PySpark hands TIMESTAMP back as a naive local time; the oracle process runs in UTC
    if isinstance(value, list):
        return [_from_spark(item, dtype) for item in value]
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def _from_polars(value: Any) -> Any:
    if isinstance(value, list):
        return [_from_polars(item) for item in value]
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value
