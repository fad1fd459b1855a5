"""The oracle's one input table: typed columns whose rows hold the values SQL semantics trip over.

Every case is evaluated over all rows, so each column carries nulls, signs, zero, the type's
extremes and the awkward values of its kind (NaN/inf/-0.0, empty and unicode strings, a leap day, the
days clocks change in Europe and the US, timestamps with and without a time zone).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import polars as pl

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

# name -> Spark SQL type; the Polars dtype is spark_dtype's natural image (see harness.polars_dtype)
COLUMNS: dict[str, str] = {
    "i": "int",
    "j": "int",
    "l": "bigint",
    "d": "double",
    "e": "double",
    "m": "decimal(10,2)",
    "s": "string",
    "t": "string",
    "n": "string",
    "b": "boolean",
    "c": "boolean",
    "dt": "date",
    "ts": "timestamp",
    "tn": "timestamp_ntz",
}
"""``i``/``j`` int, ``l`` long, ``d``/``e`` double, ``m`` decimal, ``s``/``t`` text, ``n`` numeric
or date-like text (for casts and string-vs-number comparisons), ``b``/``c`` booleans, ``dt`` date,
``ts`` timestamp (UTC), ``tn`` timestamp without time zone."""

_NAN, _INF = float("nan"), float("inf")


def _ts(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


# fmt: off
ROWS: list[tuple[Any, ...]] = [
    # i,       j,     l,          d,      e,     m,                  s,          t,      n,         b,     c,     dt,               ts,                              tn
    (1,        2,     10,         1.5,    2.0,   Decimal("1.25"),    "abc",      "ABC",  "12",      True,  False, date(2024, 2, 29), _ts(2024, 2, 29, 23, 59, 59),  datetime(2024, 2, 29, 12, 0)),
    (-59,      100,   -59,        -2.5,   0.5,   Decimal("-3.10"),   "tst-1",    "tst%", " 42 ",    False, True,  date(2024, 3, 31), _ts(2024, 3, 31, 1, 30),        datetime(2024, 3, 10, 2, 30)),
    (0,        0,     0,          0.0,    -0.0,  Decimal("0.00"),    "",         "",     "1.5",     True,  True,  date(2024, 10, 27), _ts(2024, 10, 27, 0, 59, 59, 999999), datetime(2024, 11, 3, 1, 30)),
    (INT_MAX,  1,     LONG_MAX,   _NAN,   1.0,   Decimal("99999999.99"), "Ünïcødé", "ünïcødé", "-7", None, True, date(1970, 1, 1), _ts(1970, 1, 1),                 datetime(1999, 12, 31, 23, 59, 59)),
    (INT_MIN,  -1,    LONG_MIN,   _INF,   -_INF, Decimal("-0.01"),   "日本語",    "😀x",  "abc",     True,  None,  date(2000, 1, 1), _ts(2000, 1, 1, 12),            datetime(2000, 1, 1)),
    (7,        -3,    2**40,      -_INF,  3.0,   Decimal("2.50"),    " pad ",    "\t x\n", "",     False, False, date(1999, 12, 31), _ts(2023, 3, 26, 1, 0, 0, 1), datetime(2024, 2, 29, 0, 0)),
    (-7,       3,     -(2**40),   -0.0,   1e300, Decimal("-2.50"),   "a_b%c",    "A_B%C", "2024-02-29", True, False, date(2023, 3, 12), _ts(2024, 11, 3, 6, 30), datetime(2023, 3, 26, 2, 30)),
    (None,     None,  None,       None,   None,  None,               None,       None,   None,      None,  None,  None,             None,                           None),
    (5,        None,  3,          1e-300, None,  Decimal("10.00"),   "line\nbreak", None, "true",   None,  True,  date(2024, 12, 31), _ts(2024, 12, 31, 23, 59, 59), None),
]
# fmt: on


def column_kind(name: str) -> str:
    """The Spark type of an input column."""
    return COLUMNS[name]


def polars_frame(dtype_of: Any) -> pl.DataFrame:
    """The table as a Polars frame, each column in the natural image ``dtype_of(spark_type)``."""
    names = list(COLUMNS)
    data = {name: [row[k] for row in ROWS] for k, name in enumerate(names)}
    return pl.DataFrame({name: pl.Series(name, data[name], dtype=dtype_of(COLUMNS[name])) for name in names})


def spark_frame(spark: Any) -> Any:
    """The table as a Spark DataFrame with the declared types."""
    ddl = ", ".join(f"{name} {kind}" for name, kind in COLUMNS.items())
    return spark.createDataFrame(ROWS, schema=ddl)
