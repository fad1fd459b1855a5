from __future__ import annotations

import hashlib
from datetime import date
from decimal import Decimal
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.errors import TransformError
from datacoolie_core.transforms import HashColumnAdder
from tests.support.xxh64 import signed, xxh64

from .conftest import MakeCtx


def sha(payload: str) -> str:
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


PAYLOAD_CASES = [
    ("string", pl.Series(["ab"]), "DCH1;S2:ab;"),
    ("multibyte-length-in-bytes", pl.Series(["é€"]), "DCH1;S5:é€;"),
    ("empty-string-is-not-null", pl.Series([""]), "DCH1;S0:;"),
    ("null-string", pl.Series([None], dtype=pl.String), "DCH1;SN;"),
    ("integer", pl.Series([-42], dtype=pl.Int16), "DCH1;I3:-42;"),
    ("unsigned", pl.Series([7], dtype=pl.UInt64), "DCH1;I1:7;"),
    ("null-integer", pl.Series([None], dtype=pl.Int64), "DCH1;IN;"),
    ("bool-true", pl.Series([True]), "DCH1;B4:true;"),
    ("bool-false", pl.Series([False]), "DCH1;B5:false;"),
    ("date", pl.Series([date(2024, 1, 2)]), "DCH1;D10:2024-01-02;"),
    ("null-date", pl.Series([None], dtype=pl.Date), "DCH1;DN;"),
]


@pytest.mark.parametrize(("values", "payload"), [c[1:] for c in PAYLOAD_CASES], ids=[c[0] for c in PAYLOAD_CASES])
def test_dc_hash_v1_payload_per_type(make_ctx: MakeCtx, values: pl.Series, payload: str) -> None:
    ctx = make_ctx(transform={"hash_columns": [{"target_column": "row_hash", "columns": ["v"]}]})

    out, label = HashColumnAdder().apply(pl.LazyFrame({"v": values}), ctx)

    assert label == "HashColumnAdder"
    assert_frame_equal(out.collect(), pl.DataFrame({"v": values, "row_hash": [sha(payload)]}))


def test_columns_are_serialised_in_declared_order_and_lengths_disambiguate(make_ctx: MakeCtx) -> None:
    hashes = [
        {"target_column": "h_ab", "columns": ["a", "b"]},
        {"target_column": "h_ba", "columns": ["B", "A"]},
    ]
    ctx = make_ctx(transform={"hash_columns": hashes})
    frame = pl.DataFrame({"a": ["ab", "a"], "b": ["c", "bc"]})

    out = HashColumnAdder().apply(frame.lazy(), ctx)[0].collect()

    assert out["h_ab"].to_list() == [sha("DCH1;S2:ab;S1:c;"), sha("DCH1;S1:a;S2:bc;")]
    assert out["h_ba"].to_list() == [sha("DCH1;S1:c;S2:ab;"), sha("DCH1;S2:bc;S1:a;")]
    assert out["h_ab"].n_unique() == 2


@pytest.mark.parametrize(
    ("values", "dtype_text"),
    [
        (pl.Series([1.5]), "Float64"),
        (pl.Series([Decimal("1.50")], dtype=pl.Decimal(5, 2)), "Decimal"),
        (pl.Series([date(2024, 1, 1)]).cast(pl.Datetime("us")), "Datetime"),
    ],
    ids=["float", "decimal", "datetime"],
)
def test_unsupported_dtypes_are_refused(make_ctx: MakeCtx, values: pl.Series, dtype_text: str) -> None:
    ctx = make_ctx(transform={"hash_columns": [{"target_column": "h", "columns": ["v"]}]})

    with pytest.raises(TransformError, match=rf"hash_columns\[0\]: column 'v' is {dtype_text}.*cannot serialise"):
        HashColumnAdder().apply(pl.LazyFrame({"v": values}), ctx)


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ({"target_column": "V", "columns": ["v"]}, r"target_column 'V' already exists in the data as 'v'"),
        ({"target_column": "__updated_at", "columns": ["v"]}, r"target_column '__updated_at' is a framework column"),
        (
            {"target_column": "h", "columns": ["w"]},
            r"hash_columns\[0\].columns names column 'w', which is not in the data",
        ),
    ],
    ids=["target-exists", "target-reserved", "missing-source-column"],
)
def test_definition_errors(make_ctx: MakeCtx, definition: dict[str, Any], message: str) -> None:
    ctx = make_ctx(transform={"hash_columns": [definition]})

    with pytest.raises(TransformError, match=message):
        HashColumnAdder().apply(pl.LazyFrame({"v": ["x"]}), ctx)


def test_missing_source_columns_are_skipped_with_ignore(make_ctx: MakeCtx) -> None:
    hashes = [{"target_column": "h", "columns": ["gone", "v"]}, {"target_column": "none", "columns": ["gone"]}]
    ctx = make_ctx(transform={"hash_columns": hashes, "configure": {"missing_column_policy": "ignore"}})

    out = HashColumnAdder().apply(pl.LazyFrame({"v": ["x"]}), ctx)[0].collect()

    assert_frame_equal(out, pl.DataFrame({"v": ["x"], "h": [sha("DCH1;S1:x;")]}))


def test_no_hash_columns_is_a_no_op(make_ctx: MakeCtx) -> None:
    frame = pl.LazyFrame({"v": ["x"]})

    out, label = HashColumnAdder().apply(frame, make_ctx())

    assert label is None
    assert_frame_equal(out.collect(), frame.collect())


# --- xxhash64 (DataCoolie 0.2.0): XXH64 of the dc_hash_v1 payload, seed 42, as a signed long ------


@pytest.mark.parametrize(
    ("data", "seed", "digest"),
    [(b"", 0, 0xEF46DB3751D8E999), (b"a", 0, 0xD24EC4F1A98C6E5B), (b"abc", 0, 0x44BC2CF5AD770999)],
    ids=["empty", "a", "abc"],
)
def test_the_reference_xxh64_matches_published_vectors(data: bytes, seed: int, digest: int) -> None:
    assert xxh64(data, seed) == digest


def test_xxhash64_is_the_signed_xxh64_of_the_payload_with_seed_42(make_ctx: MakeCtx) -> None:
    hashes = [{"target_column": "h", "columns": ["s", "i", "b", "d"], "algorithm": "xxhash64"}]
    ctx = make_ctx(transform={"hash_columns": hashes})
    long_text = "x" * 40  # past 32 bytes: XXH64's four-lane stripe loop runs
    frame = pl.DataFrame(
        {
            "s": ["ab", None, "é€", long_text],
            "i": [1, -2, None, 0],
            "b": [True, False, None, True],
            "d": [date(2024, 1, 2), None, None, date(1999, 12, 31)],
        }
    )
    payloads = [
        "DCH1;S2:ab;I1:1;B4:true;D10:2024-01-02;",
        "DCH1;SN;I2:-2;B5:false;DN;",
        "DCH1;S5:é€;IN;BN;DN;",
        f"DCH1;S40:{long_text};I1:0;B4:true;D10:1999-12-31;",
    ]

    out = HashColumnAdder().apply(frame.lazy(), ctx)[0].collect()

    expected = [signed(xxh64(p.encode("utf-8"), 42)) for p in payloads]
    assert out.schema["h"] == pl.Int64
    assert out["h"].to_list() == expected
    assert any(v < 0 for v in expected)
    assert any(v > 0 for v in expected)


def test_sha256_and_xxhash64_columns_side_by_side(make_ctx: MakeCtx) -> None:
    hashes = [
        {"target_column": "row_sha", "columns": ["v"]},
        {"target_column": "row_xx", "columns": ["v"], "algorithm": "xxhash64"},
    ]
    ctx = make_ctx(transform={"hash_columns": hashes})

    out = HashColumnAdder().apply(pl.LazyFrame({"v": ["x"]}), ctx)[0].collect()

    expected = {"v": ["x"], "row_sha": [sha("DCH1;S1:x;")], "row_xx": [signed(xxh64(b"DCH1;S1:x;", 42))]}
    assert_frame_equal(out, pl.DataFrame(expected))
