"""``xxhash64`` hash columns against Apache Spark: DataCoolie 0.2.0 defines the value as Spark's
``xxhash64`` (seed 42) of the ``dc_hash_v1`` payload, so PySpark hashing the same payload strings is
the oracle, and ``sha2(payload, 256)`` is the oracle of the ``sha256`` column next to it."""

from __future__ import annotations

from datetime import date
from typing import Any

import polars as pl

from datacoolie_core.transforms import HashColumnAdder

from .conftest import MakeCtx


def _payload(s: str | None, i: int | None, b: bool | None, d: date | None) -> str:
    """The dc_hash_v1 payload, written out independently of the engine's Polars expressions."""

    def part(tag: str, text: str | None) -> str:
        return f"{tag}N;" if text is None else f"{tag}{len(text.encode('utf-8'))}:{text};"

    flag = None if b is None else str(b).lower()
    return (
        "DCH1;"
        + part("S", s)
        + part("I", None if i is None else str(i))
        + part("B", flag)
        + part("D", None if d is None else d.isoformat())
    )


def test_xxhash64_and_sha256_match_spark(make_ctx: MakeCtx, spark: Any) -> None:
    rows = [
        ("ab", 1, True, date(2024, 1, 2)),
        (None, -(2**63), False, None),
        ("é€ 中文", None, None, date(1970, 1, 1)),
        ("x" * 100, 2**63 - 1, True, date(9999, 12, 31)),
        ("", 0, False, date(2024, 2, 29)),
    ]
    frame = pl.DataFrame(rows, schema={"s": pl.String, "i": pl.Int64, "b": pl.Boolean, "d": pl.Date}, orient="row")
    hashes = [
        {"target_column": "xx", "columns": ["s", "i", "b", "d"], "algorithm": "xxhash64"},
        {"target_column": "sha", "columns": ["s", "i", "b", "d"], "algorithm": "sha256"},
    ]
    ours = HashColumnAdder().apply(frame.lazy(), make_ctx(transform={"hash_columns": hashes}))[0].collect()

    payloads = spark.createDataFrame([(n, _payload(*row)) for n, row in enumerate(rows)], "n int, payload string")
    theirs = payloads.selectExpr("n", "xxhash64(payload) AS xx", "sha2(payload, 256) AS sha").orderBy("n").collect()

    assert ours["xx"].to_list() == [r["xx"] for r in theirs]
    assert ours["sha"].to_list() == [r["sha"] for r in theirs]
