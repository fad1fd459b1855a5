"""Hive-partitioned parquet (DataCoolie S-13): ``key=value`` folders become typed columns, as Spark types them.

With ``connection.configure.use_hive_partitioning`` the file reader lists recursively; for parquet,
every ``key=value`` folder between the source folder and a file is a column. Spark 3.5 (partition
column type inference on, its default) types each column from *all* its values, and so does this
module, checked against PySpark (``tests/core/sources/test_hive_spark_oracle.py``):

* one value: ``int`` (32-bit, ``+5`` and ``007`` included), else ``bigint``, else an integral
  ``decimal(p,0)`` (``p <= 38``, ``1e3`` counts), else ``double`` (Java's parser: surrounding blanks,
  ``NaN``, ``Infinity``, ``.5``, a ``d``/``f`` suffix), else ``timestamp`` (``yyyy-MM-dd HH:mm:ss`` with
  at most one fractional digit, in UTC), else ``date`` (``yyyy-MM-dd``), else ``string``; the value
  ``__HIVE_DEFAULT_PARTITION__`` is null.
* across values: the wider type (int < bigint < decimal, numbers < double, date < timestamp, null <
  anything); decimal with double, or any other mix (int with date), is ``string``.
* string values are un-escaped (``c%20d`` -> ``c d``); columns come after the file's own columns.

A folder without ``=`` is a plain folder (no column). Files whose ``key=`` folders differ (``a=1/x``
next to ``b=2/y``, or a file at the top next to partition folders) are refused, as Spark refuses
"conflicting directory structures". A key that is also a column of a file's data takes the folder's
value and type, in the data column's place, as in Spark.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import unquote

import polars as pl

from datacoolie_core.errors import SourceError

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_INTEGER = re.compile(r"[+-]?\d+")
_BIG_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# Spark's ladder of numeric widening; decimals carry their precision beside it.
_RANK = {"null": 0, "int": 1, "bigint": 2, "decimal": 3, "double": 4}


def partition_columns(paths: Iterable[str], root: str, *, label: str) -> dict[str, list[pl.Expr]]:
    """Per file path, the typed literal columns of its ``key=value`` folders under ``root``.

    Raises:
        SourceError: the files' partition folders name different keys.
    """
    raw = {path: _pairs(path, root) for path in paths}
    keys = {tuple(k for k, _ in pairs) for pairs in raw.values()}
    if len(keys) > 1:
        shapes = ", ".join(sorted("/".join(f"{k}=..." for k in key) or "(top folder)" for key in keys))
        raise SourceError(
            f"{label}: conflicting partition folders under '{root}' ({shapes}); every file must sit under the "
            "same key=value folders (as Spark requires): move the odd files or turn use_hive_partitioning off"
        )
    names = next(iter(keys), ())
    types = {name: _column_type([pairs[i][1] for pairs in raw.values()]) for i, name in enumerate(names)}
    return {
        path: [pl.lit(_value(value, types[name]), dtype=_dtype(types[name])).alias(name) for name, value in pairs]
        for path, pairs in raw.items()
    }


def with_partitions(lf: pl.LazyFrame, columns: list[pl.Expr]) -> pl.LazyFrame:
    """``lf`` with its partition columns: appended, or replacing a data column of the same name in
    place (Spark reads the folder's value, not the file's)."""
    return lf.with_columns(columns) if columns else lf


def _pairs(path: str, root: str) -> list[tuple[str, str]]:
    folders = os.path.relpath(os.path.dirname(path), root).split(os.sep)
    return [(unquote(k), v) for k, _, v in (f.partition("=") for f in folders if "=" in f)]


def value_type(raw: str) -> str:
    """Spark's type of one partition value: ``null``, ``int``, ``bigint``, ``decimal(p)``, ``double``,
    ``timestamp``, ``date`` or ``string``."""
    if raw == NULL_PARTITION:
        return "null"
    if _INTEGER.fullmatch(raw):
        number = int(raw)
        if _INT32[0] <= number <= _INT32[1]:
            return "int"
        if _INT64[0] <= number <= _INT64[1]:
            return "bigint"
    if (precision := _integral_precision(raw)) is not None:
        return f"decimal({precision})"
    if _JAVA_DOUBLE.fullmatch(raw.strip(" \t\n\r\f\v\x00")):
        return "double"
    text = unquote(raw)
    if _TIMESTAMP.fullmatch(text) and _parses(text, "%Y-%m-%d %H:%M:%S.%f" if "." in text else "%Y-%m-%d %H:%M:%S"):
        return "timestamp"
    if _DATE.fullmatch(raw) and _parses(raw, "%Y-%m-%d"):
        return "date"
    return "string"


def wider_type(a: str, b: str) -> str:
    """Spark's partition type of two value types (``string`` when there is no safe common type)."""
    if a == b or b == "null":
        return a
    if a == "null":
        return b
    if {a, b} == {"date", "timestamp"}:
        return "timestamp"
    numeric = [_numeric(t) for t in (a, b)]
    if None in numeric:
        return "string"
    (rank_a, p_a), (rank_b, p_b) = numeric  # type: ignore[misc]
    if {rank_a, rank_b} == {_RANK["decimal"], _RANK["double"]}:
        return "string"  # Spark refuses to lose a decimal's digits in a double
    if max(rank_a, rank_b) == _RANK["decimal"]:
        return f"decimal({min(max(p_a, p_b), 38)})"
    return a if rank_a > rank_b else b


def _numeric(kind: str) -> tuple[int, int] | None:
    """(rank, decimal precision as Spark widens it) of a numeric type, ``None`` otherwise."""
    if kind.startswith("decimal("):
        return _RANK["decimal"], int(kind[8:-1])
    if kind in _RANK and kind != "null":
        return _RANK[kind], {"int": 10, "bigint": 20}.get(kind, 0)
    return None


def _column_type(values: list[str]) -> str:
    kind = "null"
    for raw in values:
        kind = wider_type(kind, value_type(raw))
    return kind


def _dtype(kind: str) -> pl.DataType:
    if kind.startswith("decimal("):
        return pl.Decimal(int(kind[8:-1]), 0)
    simple: dict[str, pl.DataType] = {
        "null": pl.Null(), "int": pl.Int32(), "bigint": pl.Int64(), "double": pl.Float64(),
        "timestamp": pl.Datetime("us", "UTC"), "date": pl.Date(), "string": pl.String(),
    }  # fmt: skip
    return simple[kind]


def _value(raw: str, kind: str) -> Any:
    """One folder's value in the column's type (Spark casts each value to the column's type)."""
    if raw == NULL_PARTITION or kind == "null":
        return None
    if kind in ("int", "bigint"):
        return int(raw)
    if kind.startswith("decimal("):
        return Decimal(raw).quantize(Decimal(1))
    if kind == "double":
        return _java_double(raw)
    text = unquote(raw)
    if kind == "timestamp":
        if len(text) == 10:
            return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
        fmt = "%Y-%m-%d %H:%M:%S.%f" if "." in text else "%Y-%m-%d %H:%M:%S"
        return datetime.strptime(text, fmt).replace(tzinfo=UTC)
    if kind == "date":
        return date.fromisoformat(text)
    return text


def _java_double(raw: str) -> float:
    text = raw.strip(" \t\n\r\f\v\x00").rstrip("fFdD")
    return float(text.replace("Infinity", "inf"))


def _integral_precision(raw: str) -> int | None:
    """Digits of ``raw`` as Java's ``BigDecimal`` with no fractional part, ``None`` if it has one or
    needs more than 38 digits (Spark's integral-decimal inference)."""
    if not _BIG_DECIMAL.fullmatch(raw):
        return None
    try:
        number = Decimal(raw)
    except InvalidOperation:
        return None
    exponent = number.as_tuple().exponent
    if not isinstance(exponent, int) or exponent < 0:
        return None
    precision = len(str(abs(int(number))))
    return precision if precision <= 38 else None


def _parses(text: str, fmt: str) -> bool:
    try:
        datetime.strptime(text, fmt)
    except ValueError:
        return False
    return True
