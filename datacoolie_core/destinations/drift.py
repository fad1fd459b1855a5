"""Type drift between a batch and the Delta table it is written to: lossless widenings pass, lossy casts fail.

delta-rs casts an appended or merged batch to the table's column types without a word: a Float64
``2.5`` stored into a ``long`` column became ``2``, a Float64 ``1e300`` into a ``float`` column became
``inf``. Delta's schema enforcement on Spark refuses such writes, and so do we: before anything is
written, every batch column whose values the table's type cannot hold exactly fails the write,
naming the column and both types. A schema hint casting the column to the table's type (slot 10)
is how a dataflow asks for the cast.

Passed silently, because every value survives them (Delta's own type-widening list, read from the
batch's side): a narrower integer into a wider integer (byte → short → integer → long), ``float``
into ``double``, byte/short/integer into ``double``, an integer or a narrower decimal into a decimal
with room for every digit, a date into a timestamp, and an all-null column into anything. A timestamp
into a ``date`` column loses its time of day and is refused. ``overwrite`` replaces the table's
schema, so it never casts and is not checked. Only numeric and date/timestamp targets are checked:
other mismatches (a number into a ``string`` column) keep every value and stay delta-rs's business.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl
from deltalake import DeltaTable
from deltalake.schema import PrimitiveType

from datacoolie_core.errors import DestinationError

_INTEGER_BITS = {"byte": 8, "short": 16, "integer": 32, "long": 64}
_SIGNED_BITS: dict[type[pl.DataType], int] = {pl.Int8: 8, pl.Int16: 16, pl.Int32: 32, pl.Int64: 64, pl.Int128: 128}
_UNSIGNED_BITS: dict[type[pl.DataType], int] = {pl.UInt8: 8, pl.UInt16: 16, pl.UInt32: 32, pl.UInt64: 64}
_INTEGER_DIGITS = {8: 3, 16: 5, 32: 10, 64: 20, 128: 39}
"""Decimal digits an integer of that many bits needs (Delta widens ``long`` to ``decimal(20, 0)``)."""
_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")


@dataclass(frozen=True)
class LossyColumn:
    """A batch column the table's type cannot hold exactly."""

    name: str
    batch_type: str
    table_type: str


def check_no_lossy_casts(schema: Mapping[str, pl.DataType], table: DeltaTable, *, table_name: str) -> None:
    """Fail when writing a batch of ``schema`` into ``table`` would cast a column with loss.

    Raises:
        DestinationError: naming each such column with the batch's and the table's types, and the fix.
    """
    stored = {field.name: field.type.type for field in table.schema().fields if isinstance(field.type, PrimitiveType)}
    lossy = [
        LossyColumn(name, _polars_name(dtype), stored[name])
        for name, dtype in schema.items()
        if name in stored and not fits(dtype, stored[name])
    ]
    if lossy:
        listed = "; ".join(f"'{c.name}' is {c.batch_type} in the data but {c.table_type} in the table" for c in lossy)
        raise DestinationError(
            f"destination table '{table_name}': writing would lose values: {listed}; nothing was written. "
            "Delta refuses such a cast: add a schema hint casting the column to the table's type if the cast "
            "is wanted, or overwrite the table to change its schema"
        )


def fits(dtype: pl.DataType, table_type: str) -> bool:
    """True when every value of ``dtype`` survives a cast to the Delta type named ``table_type``."""
    dtype = dtype() if isinstance(dtype, type) else dtype  # a bare class such as pl.Int32
    if dtype == pl.Null or _polars_name(dtype) == table_type:
        return True
    if table_type in _INTEGER_BITS:
        return _fits_integer(dtype, _INTEGER_BITS[table_type])
    if table_type == "double":
        return dtype in (pl.Float32, pl.Float64) or _fits_integer(dtype, 32)
    if table_type == "float":
        return dtype == pl.Float32
    if decimal := _DECIMAL.fullmatch(table_type):
        return _fits_decimal(dtype, int(decimal.group(1)), int(decimal.group(2)))
    if table_type == "date":
        return dtype == pl.Date
    if table_type in ("timestamp", "timestamp_ntz"):
        return dtype == pl.Date or isinstance(dtype, pl.Datetime)
    return True


def _fits_integer(dtype: pl.DataType, bits: int) -> bool:
    signed = _SIGNED_BITS.get(type(dtype))
    if signed is not None:
        return signed <= bits
    unsigned = _UNSIGNED_BITS.get(type(dtype))
    return unsigned is not None and unsigned < bits


def _fits_decimal(dtype: pl.DataType, precision: int, scale: int) -> bool:
    if isinstance(dtype, pl.Decimal):
        source_precision = dtype.precision or 38
        return dtype.scale <= scale and source_precision - dtype.scale <= precision - scale
    bits = _SIGNED_BITS.get(type(dtype)) or _UNSIGNED_BITS.get(type(dtype))
    return bits is not None and _INTEGER_DIGITS[bits] <= precision - scale


def _polars_name(dtype: pl.DataType) -> str:
    """The Delta name of ``dtype`` when it has an exact one, else Polars' own name."""
    if isinstance(dtype, pl.Decimal):
        return f"decimal({dtype.precision or 38},{dtype.scale})"
    if isinstance(dtype, pl.Datetime):
        return "timestamp" if dtype.time_zone else "timestamp_ntz"
    names: dict[type[pl.DataType], str] = {pl.Int8: "byte", pl.Int16: "short", pl.Int32: "integer", pl.Int64: "long"}
    names |= {pl.Float32: "float", pl.Float64: "double", pl.Date: "date", pl.Boolean: "boolean", pl.String: "string"}
    return names.get(type(dtype), str(dtype))
