"""A plain-Python XXH64 (the xxHash specification, ``doc/xxhash_spec.md``): an oracle independent of
the C library the engine calls. Slow, for test vectors only."""

from __future__ import annotations

P1 = 0x9E3779B185EBCA87
P2 = 0xC2B2AE3D27D4EB4F
P3 = 0x165667B19E3779F9
P4 = 0x85EBCA77C2B2AE63
P5 = 0x27D4EB2F165667C5
MASK = (1 << 64) - 1


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & MASK


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * P2) & MASK
    return (_rotl(acc, 31) * P1) & MASK


def _merge(acc: int, val: int) -> int:
    acc ^= _round(0, val)
    return (acc * P1 + P4) & MASK


def xxh64(data: bytes, seed: int = 0) -> int:
    """The unsigned 64-bit XXH64 digest of ``data``."""
    n, i = len(data), 0
    if n >= 32:
        acc = [(seed + P1 + P2) & MASK, (seed + P2) & MASK, seed & MASK, (seed - P1) & MASK]
        while i + 32 <= n:
            for k in range(4):
                acc[k] = _round(acc[k], int.from_bytes(data[i + 8 * k : i + 8 * k + 8], "little"))
            i += 32
        h = (_rotl(acc[0], 1) + _rotl(acc[1], 7) + _rotl(acc[2], 12) + _rotl(acc[3], 18)) & MASK
        for a in acc:
            h = _merge(h, a)
    else:
        h = (seed + P5) & MASK
    h = (h + n) & MASK
    while i + 8 <= n:
        h ^= _round(0, int.from_bytes(data[i : i + 8], "little"))
        h = (_rotl(h, 27) * P1 + P4) & MASK
        i += 8
    if i + 4 <= n:
        h ^= (int.from_bytes(data[i : i + 4], "little") * P1) & MASK
        h = (_rotl(h, 23) * P2 + P3) & MASK
        i += 4
    while i < n:
        h ^= (data[i] * P5) & MASK
        h = (_rotl(h, 11) * P1) & MASK
        i += 1
    h ^= h >> 33
    h = (h * P2) & MASK
    h ^= h >> 29
    h = (h * P3) & MASK
    return h ^ (h >> 32)


def signed(value: int) -> int:
    """An unsigned 64-bit value as Spark's (signed) long."""
    return value - (1 << 64) if value >= 1 << 63 else value
