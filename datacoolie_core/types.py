"""Data type names from metadata (schema hints, SQL ``CAST``) -> Polars dtypes.

DataCoolie metadata is mostly written for Spark SQL (``long``, ``timestamp``, ``decimal(12,2)``);
``schema_hint_type_system`` may select another vocabulary. The aliases below cover Spark SQL,
PostgreSQL, MySQL, SQL Server, Oracle and SQLite names; a name that is in none of them is an error
at validation time (DataCoolie silently skipped the cast).
"""

from __future__ import annotations

import re

import polars as pl

_UTC = "UTC"

_SIMPLE: dict[str, pl.DataType] = {}


def _alias(dtype: pl.DataType, *names: str) -> None:
    for name in names:
        _SIMPLE[name] = dtype


_alias(
    pl.String(),
    "string",
    "varchar",
    "char",
    "text",
    "nvarchar",
    "nchar",
    "character varying",
    "character",
    "varchar2",
    "nvarchar2",
    "clob",
    "nclob",
    "ntext",
    "uuid",
    "json",
    "jsonb",
    "str",
    "utf8",
)
_alias(pl.Int8(), "byte", "tinyint", "int8_t")
_alias(pl.Int16(), "short", "smallint", "int2")
_alias(pl.Int32(), "int", "integer", "int4", "mediumint", "int32")
_alias(pl.Int64(), "long", "bigint", "int8", "int64", "number_integer")
_alias(pl.Float32(), "float", "real", "float4", "float32")
_alias(pl.Float64(), "double", "double precision", "float8", "float64", "binary_double")
_alias(pl.Boolean(), "boolean", "bool", "bit")
_alias(pl.Date(), "date")
_alias(pl.Time(), "time")
_alias(pl.Binary(), "binary", "varbinary", "blob", "bytea", "image", "raw")
_alias(
    pl.Datetime("us", _UTC), "timestamp", "timestamptz", "timestamp with time zone", "timestamp_ltz", "datetimeoffset"
)
_alias(pl.Datetime("us"), "timestamp_ntz", "datetime", "datetime2", "timestamp without time zone", "smalldatetime")


_DECIMAL = re.compile(r"^(decimal|numeric|number|dec)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?$")
_SIZED = re.compile(r"^([a-z_ ]+?)\s*\(\s*\d+(?:\s*,\s*\d+)?\s*\)$")

KNOWN_TYPE_NAMES: tuple[str, ...] = (*sorted(_SIMPLE), "decimal(p,s)", "numeric(p,s)", "number(p,s)")


def polars_dtype(type_name: str) -> pl.DataType:
    """The Polars dtype of a metadata type name such as ``long``, ``varchar(20)``, ``decimal(12,2)``.

    Raises:
        ValueError: the name is not a known type; the message suggests the closest known name.
    """
    name = " ".join(type_name.strip().lower().split())
    if name in _SIMPLE:
        return _SIMPLE[name]
    decimal = _DECIMAL.match(name)
    if decimal:
        precision = int(decimal.group(2)) if decimal.group(2) else 38
        scale = int(decimal.group(3)) if decimal.group(3) else (0 if decimal.group(2) else 18)
        if not 1 <= precision <= 38 or scale > precision:
            raise ValueError(f"decimal precision must be 1..38 and scale at most the precision, got {type_name!r}")
        return pl.Decimal(precision, scale)
    sized = _SIZED.match(name)  # varchar(20), char(3), timestamp(6) ...
    if sized and sized.group(1).strip() in _SIMPLE:
        return _SIMPLE[sized.group(1).strip()]
    from datacoolie_core.suggestions import did_you_mean

    raise ValueError(f"unknown data type '{type_name}'{did_you_mean(name, _SIMPLE)}")
