"""Spark SQL type conversions: the function-style casts (``BIGINT(x)``, ``DECIMAL(x)``), HEX and BIN.

``INT(x)``, ``DOUBLE(x)``, ``STRING(x)``, ``DATE(x)`` and the like are parsed by sqlglot as ``CAST``
and compiled by the compiler; the ones it leaves as plain functions are turned into the same CAST.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions.registry import Handler, arity, cast, dtype, text
from datacoolie_core.sql.parse import SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

_DIGITS = "0123456789ABCDEF"


def _cast_to(spark_type: str) -> Handler:
    return lambda c, n: cast(c, arity(c, n, 1)[0], spark_type)


def _digits(value: pl.Expr, base: int) -> pl.Expr:
    """A BIGINT in ``base`` as Java's ``Long.toString(x, base)`` of its unsigned 64 bits (no sign)."""
    unsigned = value.cast(pl.Int64).reinterpret(signed=False)
    width = {2: 64, 16: 16}[base]
    places = [
        (unsigned // (base**place) % base).replace_strict(dict(enumerate(_DIGITS[:base])), return_dtype=pl.String)
        for place in reversed(range(width))
    ]
    stripped = pl.concat_str(places).str.strip_chars_start("0")
    return pl.when(stripped == "").then(pl.lit("0")).otherwise(stripped)


def _hex(c: Compiler, node: exp.Hex) -> pl.Expr:
    found = dtype(c, node.this)
    if found is not None and found.is_numeric():
        return _digits(cast(c, node.this, "BIGINT"), 16)
    if found is not None and found != pl.String and found != pl.Null:
        raise SqlExpressionError(f"HEX takes an integer or a string, got {found} (in {c.text!r})")
    # a string's UTF-8 bytes, upper case like Spark
    return text(c, node.this).str.encode("hex").str.to_uppercase()


def _bin(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    value = arity(c, node, 1)[0]
    found = dtype(c, value)
    if found is not None and (found == pl.Boolean or found.is_temporal()):
        raise SqlExpressionError(f"BIN takes a number, got {found} (in {c.text!r})")
    return _digits(cast(c, value, "BIGINT"), 2)


def spark_type_name(found: pl.DataType) -> str:
    """Spark's name for the type whose Polars image is ``found`` (what TYPEOF prints)."""
    if isinstance(found, pl.Decimal):
        return f"decimal({found.precision},{found.scale})"
    if isinstance(found, pl.Datetime):
        return "timestamp" if found.time_zone else "timestamp_ntz"
    for polars_type, name in _TYPE_NAMES.items():
        if found == polars_type:
            return name
    raise SqlExpressionError(f"no Spark type for {found}")


_TYPE_NAMES: dict[pl.DataType, str] = {
    pl.Int8(): "tinyint", pl.Int16(): "smallint", pl.Int32(): "int", pl.Int64(): "bigint", pl.Float32(): "float",
    pl.Float64(): "double", pl.String(): "string", pl.Boolean(): "boolean", pl.Date(): "date", pl.Null(): "void",
}  # fmt: skip


def _typeof(c: Compiler, node: exp.Typeof) -> pl.Expr:
    found = c.dtype(node.this)
    if found is None:
        return pl.lit("", dtype=pl.String)  # validation without a schema: the type is known when it runs
    try:
        return pl.lit(spark_type_name(found), dtype=pl.String)
    except SqlExpressionError as e:
        raise SqlExpressionError(f"{e} (in {c.text!r})") from None


NODES: dict[type[exp.Expression], Handler] = {exp.Hex: _hex, exp.Typeof: _typeof}
NAMES: dict[str, Handler] = {
    "BIGINT": _cast_to("BIGINT"),
    "SMALLINT": _cast_to("SMALLINT"),
    "TINYINT": _cast_to("TINYINT"),
    "DECIMAL": _cast_to("DECIMAL(10,0)"),
    "BIN": _bin,
}
# INT, DOUBLE, FLOAT, STRING, BOOLEAN, DATE and TIMESTAMP reach the compiler as CAST nodes
SUPPORTED = ("BIGINT", "BIN", "BOOLEAN", "DATE", "DECIMAL", "DOUBLE", "FLOAT", "HEX", "INT", "SMALLINT", "STRING",
             "TIMESTAMP", "TINYINT", "TYPEOF")  # fmt: skip
