"""Slot 18: hash columns (DataCoolie T-06, ``transform.hash_columns``).

``dc_hash_v1`` serialises the listed columns, in the declared order, into one unambiguous string:
``"DCH1;"`` then per column ``"<T>N;"`` for null, else ``"<T><utf8 byte length>:<text>;"``. The tag
T is ``S`` string, ``I`` integer (decimal text), ``B`` boolean (``true``/``false``), ``D`` date
(``YYYY-MM-DD``). The byte-length prefix makes ``("ab", "c")`` and ``("a", "bc")`` differ. The value
is the lowercase hex SHA-256 of that payload: the payload is built with Polars string expressions;
only the hashing itself runs per row in Python (hashlib).
"""

from __future__ import annotations

import hashlib

import polars as pl

from datacoolie_core.columns import TRAILING_COLUMNS
from datacoolie_core.models.transform import HashColumn
from datacoolie_core.transforms.base import TransformContext
from datacoolie_core.transforms.resolve import find_column, reserved_match, resolve_columns, transform_error

PAYLOAD_PREFIX = "DCH1;"


class HashColumnAdder:
    """Add one ``sha256`` / ``dc_hash_v1`` column per ``transform.hash_columns`` entry.

    The target must not exist already nor be a framework column; source columns follow
    ``missing_column_policy`` (an entry left with no column is skipped). ``xxhash64`` is not
    supported yet (TransformError). Label ``HashColumnAdder``.
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
                frame = frame.with_columns(sha256_hex(payload).alias(definition.target_column))
                added = True
        return frame, self.name if added else None


def _check_definition(ctx: TransformContext, definition: HashColumn, key: str, names: list[str]) -> None:
    target = definition.target_column
    if definition.algorithm != "sha256":
        raise transform_error(
            ctx,
            f"{key}.algorithm '{definition.algorithm}' is not supported yet (Spark-compatible xxhash64 is not implemented)",
            "use algorithm 'sha256'",
        )
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
