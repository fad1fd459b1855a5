"""Slot 18: hash columns (DataCoolie T-06, ``transform.hash_columns``).

``dc_hash_v1`` serialises the listed columns, in the declared order, into one unambiguous string:
``"DCH1;"`` then per column ``"<T>N;"`` for null, else ``"<T><utf8 byte length>:<text>;"``. The tag
T is ``S`` string, ``I`` integer (decimal text), ``B`` boolean (``true``/``false``), ``D`` date
(``YYYY-MM-DD``). The byte-length prefix makes ``("ab", "c")`` and ``("a", "bc")`` differ. The value
is the lowercase hex SHA-256 of that payload (``algorithm: sha256``, a String column) or, with
``algorithm: xxhash64`` (DataCoolie 0.2.0), XXH64 of the payload's UTF-8 bytes with seed 42 read as a
*signed* 64-bit integer (an Int64 column): what Spark's ``xxhash64(payload)`` returns, Spark's default
seed being 42. The payload is built with Polars string expressions; only the hashing itself runs per
row in Python (hashlib, the ``xxhash`` binding of the reference C library).
"""

from __future__ import annotations

import hashlib

import polars as pl

from datacoolie_core.columns import TRAILING_COLUMNS
from datacoolie_core.models.transform import HashColumn
from datacoolie_core.transforms.base import TransformContext
from datacoolie_core.transforms.resolve import find_column, reserved_match, resolve_columns, transform_error

PAYLOAD_PREFIX = "DCH1;"
XXHASH64_SEED = 42
"""Spark's ``xxhash64`` seed, which DataCoolie 0.2.0 keeps."""


class HashColumnAdder:
    """Add one ``dc_hash_v1`` column (``sha256`` or ``xxhash64``) per ``transform.hash_columns`` entry.

    The target must not exist already nor be a framework column; source columns follow
    ``missing_column_policy`` (an entry left with no column is skipped). Label ``HashColumnAdder``.
    """

    name = "HashColumnAdder"
    order = 18

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]:
        added = False
        for index, definition in enumerate(ctx.dataflow.transform.hash_columns):
            key = f"transform.hash_columns[{index}]"
            schema = frame.collect_schema()
            _check_definition(ctx, definition, key, schema.names())
            columns = resolve_columns(ctx, schema.names(), definition.columns, key=f"{key}.columns")
            if columns:
                payload = dc_hash_v1_payload([(name, schema[name]) for name in columns], ctx=ctx, key=key)
                digest = xxhash64_signed(payload) if definition.algorithm == "xxhash64" else sha256_hex(payload)
                frame = frame.with_columns(digest.alias(definition.target_column))
                added = True
        return frame, self.name if added else None


def _check_definition(ctx: TransformContext, definition: HashColumn, key: str, names: list[str]) -> None:
    target = definition.target_column
    if reserved_match(target, TRAILING_COLUMNS):
        raise transform_error(ctx, f"{key}.target_column '{target}' is a framework column", "choose another name")
    existing = find_column(names, target, ctx.column_name_mode)
    if existing is not None:
        raise transform_error(
            ctx, f"{key}.target_column '{target}' already exists in the data as '{existing}'", "choose another name"
        )


def dc_hash_v1_payload(columns: list[tuple[str, pl.DataType]], *, ctx: TransformContext, key: str) -> pl.Expr:
    """The ``dc_hash_v1`` payload of ``columns`` (name, dtype) in order, as a String expression.

    Raises:
        TransformError: a column's dtype has no ``dc_hash_v1`` tag (floats, timestamps, decimals, ...).
    """
    parts = [pl.lit(PAYLOAD_PREFIX)]
    for name, dtype in columns:
        tag, text = _tagged_text(ctx, key, name, dtype)
        present = pl.concat_str(pl.lit(tag), text.str.len_bytes().cast(pl.String), pl.lit(":"), text, pl.lit(";"))
        parts.append(pl.when(pl.col(name).is_null()).then(pl.lit(f"{tag}N;")).otherwise(present))
    return pl.concat_str(parts)


def _tagged_text(ctx: TransformContext, key: str, name: str, dtype: pl.DataType) -> tuple[str, pl.Expr]:
    column = pl.col(name)
    if dtype == pl.String:
        return "S", column
    if dtype.is_integer():
        return "I", column.cast(pl.String)
    if dtype == pl.Boolean:
        return "B", pl.when(column).then(pl.lit("true")).otherwise(pl.lit("false"))
    if dtype == pl.Date:
        return "D", column.dt.to_string("%Y-%m-%d")
    raise transform_error(
        ctx,
        f"{key}: column '{name}' is {dtype}, which dc_hash_v1 cannot serialise (string, integer, boolean, date)",
        "cast it to string (schema hint or computed column) before hashing",
    )


def sha256_hex(payload: pl.Expr) -> pl.Expr:
    """Lowercase hex SHA-256 of a String expression's UTF-8 bytes, row by row (nulls stay null)."""
    return payload.map_batches(_sha256_batch, return_dtype=pl.String, is_elementwise=True)


def _sha256_batch(values: pl.Series) -> pl.Series:
    return pl.Series(
        values.name,
        [None if v is None else hashlib.sha256(v.encode("utf-8")).hexdigest() for v in values.to_list()],
        dtype=pl.String,
    )


def xxhash64_signed(payload: pl.Expr) -> pl.Expr:
    """XXH64 (seed 42) of a String expression's UTF-8 bytes as a signed Int64, row by row (nulls stay null)."""
    return payload.map_batches(_xxhash64_batch, return_dtype=pl.Int64, is_elementwise=True)


def _xxhash64_batch(values: pl.Series) -> pl.Series:
    import xxhash  # imported on first use: most dataflows hash nothing

    def signed(text: str) -> int:
        digest = xxhash.xxh64_intdigest(text.encode("utf-8"), seed=XXHASH64_SEED)
        return digest - (1 << 64) if digest >= 1 << 63 else digest  # Spark's long is signed

    return pl.Series(values.name, [None if v is None else signed(v) for v in values.to_list()], dtype=pl.Int64)
