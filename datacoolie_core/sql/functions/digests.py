"""Spark SQL digests and hashes: MD5, SHA1, SHA2, CRC32 and Spark's own HASH (Murmur3) and XXHASH64.

Polars has no native digest (its ``hash`` is a different function, seeded per run), so these run
row by row in Python over the argument values (``map_batches``), like the ``hash_columns`` transform:
exact, but far slower than the native expressions; a million-row surrogate key costs seconds.

``HASH`` and ``XXHASH64`` follow Spark's ``HashExpression``: seed 42, each non-NULL argument hashed in
turn with the previous hash as the seed, by type: BOOLEAN, the integers and DATE as a 4-byte int,
BIGINT and the timestamps as an 8-byte long, DOUBLE/FLOAT by their IEEE bits (``-0.0`` as ``0.0``),
DECIMAL up to 18 digits by its unscaled long (wider: the unscaled value's bytes), a STRING by its UTF-8 bytes. Spark's Murmur3 reads the
trailing bytes of a string one signed byte at a time, which standard Murmur3 libraries do not.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions.registry import Handler, arity, dtype, literal
from datacoolie_core.sql.parse import READ_DIALECT, SqlExpressionError

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

SEED = 42
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF
_SHA2 = {0: "sha256", 224: "sha224", 256: "sha256", 384: "sha384", 512: "sha512"}


def _binary_argument(c: Compiler, node: exp.Expression, name: str) -> pl.Expr:
    """A STRING argument (Spark casts it to BINARY as UTF-8); other types Spark refuses at analysis."""
    found = dtype(c, node)
    if found is not None and found not in (pl.String(), pl.Null()):
        raise SqlExpressionError(
            f"{name} takes a STRING (Spark reads it as BINARY), got {found} in "
            f"'{node.sql(dialect=READ_DIALECT)}' (in {c.text!r})"
        )
    return c.compile(node).cast(pl.String)


def _per_row(value: pl.Expr, function: Callable[[str], Any], dtype_out: pl.DataType) -> pl.Expr:
    def batch(values: pl.Series) -> pl.Series:
        return pl.Series(values.name, [None if v is None else function(v) for v in values.to_list()], dtype=dtype_out)

    return value.map_batches(batch, return_dtype=dtype_out, is_elementwise=True)


def _hex_digest(algorithm: str) -> Callable[[str], str]:
    return lambda text: hashlib.new(algorithm, text.encode("utf-8")).hexdigest()


def _digest(name: str, algorithm: str) -> Handler:
    def handler(c: Compiler, node: exp.Expression) -> pl.Expr:
        return _per_row(_binary_argument(c, node.this, name), _hex_digest(algorithm), pl.String())

    return handler


def _sha2(c: Compiler, node: exp.SHA2) -> pl.Expr:
    bits = literal(c, node.args.get("length"), "the SHA2 bit length")
    value = _binary_argument(c, node.this, "SHA2")
    if bits not in _SHA2:  # Spark: NULL for any other length
        return pl.lit(None, dtype=pl.String)
    return _per_row(value, _hex_digest(_SHA2[bits]), pl.String())


def _crc32(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    value = _binary_argument(c, arity(c, node, 1)[0], "CRC32")
    return _per_row(value, lambda text: zlib.crc32(text.encode("utf-8")), pl.Int64())


# --- Spark's Murmur3_x86_32 ------------------------------------------------------------------------


def _rotl32(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK32


def _mix_k1(k1: int) -> int:
    k1 = (k1 * 0xCC9E2D51) & _MASK32
    return (_rotl32(k1, 15) * 0x1B873593) & _MASK32


def _mix_h1(h1: int, k1: int) -> int:
    h1 = _rotl32(h1 ^ k1, 13)
    return (h1 * 5 + 0xE6546B64) & _MASK32


def _fmix32(h1: int, length: int) -> int:
    h1 ^= length
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK32
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK32
    return h1 ^ (h1 >> 16)


def _murmur3_int(value: int, seed: int) -> int:
    return _fmix32(_mix_h1(seed, _mix_k1(value & _MASK32)), 4)


def _murmur3_long(value: int, seed: int) -> int:
    h1 = _mix_h1(seed, _mix_k1(value & _MASK32))
    h1 = _mix_h1(h1, _mix_k1((value >> 32) & _MASK32))
    return _fmix32(h1, 8)


def _murmur3_bytes(data: bytes, seed: int) -> int:
    aligned = len(data) - len(data) % 4
    h1 = seed
    for (word,) in struct.iter_unpack("<I", data[:aligned]):
        h1 = _mix_h1(h1, _mix_k1(word))
    for byte in data[aligned:]:  # Spark's legacy tail: each byte alone, sign-extended
        h1 = _mix_h1(h1, _mix_k1((byte - 256 if byte > 127 else byte) & _MASK32))
    return _fmix32(h1, len(data))


# --- XXH64 (the reference algorithm: Spark's int/long paths equal it on the little-endian bytes) ---


def _xxh64(data: bytes, seed: int) -> int:
    import xxhash  # imported on first use: most expressions hash nothing

    return int(xxhash.xxh64_intdigest(data, seed=seed & _MASK64))


def _xxhash_int(value: int, seed: int) -> int:
    return _xxh64(struct.pack("<i", value), seed)


def _xxhash_long(value: int, seed: int) -> int:
    return _xxh64(struct.pack("<q", value), seed)


# --- per-type serialisation shared by both ---------------------------------------------------------

Hasher = tuple[Callable[[int, int], int], Callable[[int, int], int], Callable[[bytes, int], int]]
_MURMUR3: Hasher = (_murmur3_int, _murmur3_long, _murmur3_bytes)
_XXHASH64: Hasher = (_xxhash_int, _xxhash_long, _xxh64)


def _value_hasher(source: pl.DataType, hasher: Hasher) -> Callable[[Any, int], int]:
    """How one argument of Polars dtype ``source`` is hashed (its physical value and the seed)."""
    as_int, as_long, as_bytes = hasher
    if source == pl.Boolean() or source in (pl.Int8(), pl.Int16(), pl.Int32(), pl.Date()):
        return lambda v, seed: as_int(int(v), seed)
    if source == pl.Int64() or isinstance(source, pl.Datetime):
        return lambda v, seed: as_long(int(v), seed)
    if source == pl.Float64():
        return lambda v, seed: as_long(0 if v == 0 else struct.unpack("<q", struct.pack("<d", v))[0], seed)
    if source == pl.Float32():
        return lambda v, seed: as_int(0 if v == 0 else struct.unpack("<i", struct.pack("<f", v))[0], seed)
    if isinstance(source, pl.Decimal) and (source.precision or 38) <= 18:
        scale = source.scale
        return lambda v, seed: as_long(int(Decimal(v).scaleb(scale)), seed)
    if isinstance(source, pl.Decimal):  # wider: the unscaled value's BigInteger.toByteArray
        scale = source.scale
        return lambda v, seed: as_bytes(_big_integer_bytes(int(Decimal(v).scaleb(scale))), seed)
    if source == pl.String():
        return lambda v, seed: as_bytes(v.encode("utf-8"), seed)
    raise ValueError(f"{source} cannot be hashed here")


def _big_integer_bytes(value: int) -> bytes:
    """Java's ``BigInteger.toByteArray``: minimal two's complement, big-endian."""
    magnitude = value if value >= 0 else ~value  # Java's bitLength leaves out the sign bit
    return value.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True)


def _physical(expr: pl.Expr, source: pl.DataType) -> pl.Expr:
    """The argument as the plain number or text :func:`_value_hasher` reads."""
    if source == pl.Date():
        return expr.cast(pl.Int32)
    if isinstance(source, pl.Datetime):
        return expr.dt.epoch("us")
    if source == pl.Boolean():
        return expr.cast(pl.Int32)
    return expr


def _spark_hash(name: str, hasher: Hasher, width: int) -> Handler:
    out_dtype = pl.Int32() if width == 32 else pl.Int64()

    def handler(c: Compiler, node: exp.Anonymous) -> pl.Expr:
        arguments = arity(c, node, 1, 256)
        columns, hashers = [], []
        for k, argument in enumerate(arguments):
            found = dtype(c, argument) or pl.String()
            if found == pl.Null():
                continue  # a NULL leaves the hash as it is
            try:
                hashers.append(_value_hasher(found, hasher))
            except ValueError:
                raise SqlExpressionError(
                    f"{name} of {found} ('{argument.sql(dialect=READ_DIALECT)}') is not supported: only STRING, "
                    f"BOOLEAN, integers, DOUBLE, FLOAT, DECIMAL, DATE and TIMESTAMP (in {c.text!r})"
                ) from None
            columns.append(_physical(c.compile(argument), found).alias(f"a{k}"))
        if not columns:
            return pl.lit(SEED, dtype=out_dtype)

        def batch(rows: pl.Series) -> pl.Series:
            out = []
            for row in rows.to_list():
                seed = SEED
                for value, hash_value in zip(row.values(), hashers, strict=True):
                    if value is not None:
                        seed = hash_value(value, seed)
                half = 1 << (width - 1)
                out.append(seed - (1 << width) if seed >= half else seed)  # Spark's int/long is signed
            return pl.Series(rows.name, out, dtype=out_dtype)

        return pl.struct(columns).map_batches(batch, return_dtype=out_dtype, is_elementwise=True)

    return handler


NODES: dict[type[exp.Expression], Handler] = {
    exp.MD5: _digest("MD5", "md5"),
    exp.SHA: _digest("SHA1", "sha1"),
    exp.SHA2: _sha2,
}
NAMES: dict[str, Handler] = {
    "CRC32": _crc32,
    "HASH": _spark_hash("HASH", _MURMUR3, 32),
    "XXHASH64": _spark_hash("XXHASH64", _XXHASH64, 64),
}
SUPPORTED = ("CRC32", "HASH", "MD5", "SHA", "SHA1", "SHA2", "XXHASH64")
