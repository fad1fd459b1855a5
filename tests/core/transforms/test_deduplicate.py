from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from datacoolie_core.errors import TransformError
from datacoolie_core.transforms import Deduplicator, TransformContext

from .conftest import RUN_ID, RUN_TIME, MakeCtx, make_dataflow

KEYED = {"transform": {"deduplicate_columns": ["ID"], "latest_data_columns": ["version"]}}
RANKED = {"transform": {**KEYED["transform"], "configure": {"deduplicate_by_rank": True}}}

# one input, several groups: a clear winner, a tie on the best value, a null beside a value,
# an all-null group, and a null key
ROWS = pl.DataFrame(
    {
        "id": [1, 1, 2, 2, 2, 3, 3, 4, 4, None, None],
        "version": [1, 2, 5, 5, 4, None, 7, None, None, 1, 3],
        "row": ["1a", "1b", "2a", "2b", "2c", "3a", "3b", "4a", "4b", "na", "nb"],
    }
)


def test_row_number_keeps_the_latest_row_per_key_nulls_last_first_tie_wins(make_ctx: MakeCtx) -> None:
    out, label = Deduplicator().apply(ROWS.lazy(), make_ctx(**KEYED))

    assert label == "Deduplicator"
    # kept rows stay in input order
    assert_frame_equal(out.collect(), ROWS.filter(pl.col("row").is_in(["1b", "2a", "3b", "4a", "nb"])))


def test_rank_keeps_every_row_tied_on_the_best_values_and_all_null_groups(make_ctx: MakeCtx) -> None:
    out, label = Deduplicator().apply(ROWS.lazy(), make_ctx(**RANKED))

    assert label == "Deduplicator(RANK)"
    assert_frame_equal(out.collect(), ROWS.filter(pl.col("row").is_in(["1b", "2a", "2b", "3b", "4a", "4b", "nb"])))


def test_several_order_columns_compare_lexicographically(make_ctx: MakeCtx) -> None:
    ctx = make_ctx(transform={"deduplicate_columns": ["k"], "latest_data_columns": ["day", "seq"]})
    frame = pl.DataFrame(
        {"k": ["a", "a", "a", "a"], "day": [2, 2, 1, None], "seq": [1, None, 9, 99], "row": [1, 2, 3, 4]}
    )

    out = Deduplicator().apply(frame.lazy(), ctx)[0].collect()

    assert out["row"].to_list() == [1]


@pytest.mark.parametrize(
    ("blocks", "label"),
    [
        (
            {
                "destination": {"load_type": "merge_overwrite", "merge_keys": ["id"]},
                "source": {"watermark_columns": ["version"]},
            },
            "Deduplicator(RANK)",
        ),
        (
            {
                "destination": {"load_type": "merge_upsert", "merge_keys": ["id"]},
                "source": {"watermark_columns": ["version"]},
            },
            "Deduplicator",
        ),
        (
            {
                "destination": {"load_type": "merge_overwrite", "merge_keys": ["id"]},
                "transform": {"deduplicate_columns": ["id"], "latest_data_columns": ["version"]},
            },
            "Deduplicator",
        ),
        (
            {
                "destination": {"load_type": "scd2", "merge_keys": ["id"], "configure": {"scd2_effective_column": "v"}},
                "transform": {"deduplicate_columns": ["id"], "latest_data_columns": ["version"]},
            },
            "Deduplicator",
        ),
    ],
    ids=[
        "merge_overwrite-defaults-to-rank",
        "merge_upsert-row-number",
        "explicit-keys-row-number",
        "scd2-explicit-keys",
    ],
)
def test_semantics_by_load_type(make_ctx: MakeCtx, blocks: dict[str, Any], label: str) -> None:
    assert Deduplicator().apply(ROWS.lazy(), make_ctx(**blocks))[1] == label


def test_scd2_keeps_every_version_by_default(make_ctx: MakeCtx) -> None:
    # DataCoolie kept the latest version per merge key, so a batch's intermediate versions vanished
    # from the history; the scd2 load chains them all instead (docs/scd2.md)
    scd2 = {"load_type": "scd2", "merge_keys": ["id"], "configure": {"scd2_effective_column": "version"}}
    ctx = make_ctx(destination=scd2, source={"watermark_columns": ["version"]})

    out, label = Deduplicator().apply(ROWS.lazy(), ctx)

    assert label is None
    assert_frame_equal(out.collect(), ROWS)


@pytest.mark.parametrize(
    "blocks",
    [{}, {"transform": {"deduplicate_columns": ["id"]}}, {"source": {"watermark_columns": ["version"]}}],
    ids=["nothing", "keys-without-order", "order-without-keys"],
)
def test_no_op_without_keys_or_order(make_ctx: MakeCtx, blocks: dict[str, Any]) -> None:
    out, label = Deduplicator().apply(ROWS.lazy(), make_ctx(**blocks))

    assert label is None
    assert_frame_equal(out.collect(), ROWS)


@pytest.mark.parametrize(
    ("blocks", "message"),
    [
        (
            {"transform": {"deduplicate_columns": ["idx"], "latest_data_columns": ["version"]}},
            r"transform.deduplicate_columns names column 'idx'.*must exist whatever missing_column_policy says",
        ),
        (
            {
                "destination": {"load_type": "merge_upsert", "merge_keys": ["key"]},
                "source": {"watermark_columns": ["version"]},
            },
            r"destination.merge_keys names column 'key'",
        ),
        (
            {"transform": {"deduplicate_columns": ["id"], "latest_data_columns": ["ver"]}},
            r"transform.latest_data_columns names column 'ver'",
        ),
        (
            {"transform": {"deduplicate_columns": ["id"]}, "source": {"watermark_columns": ["changed"]}},
            r"source.watermark_columns names column 'changed'",
        ),
    ],
    ids=["dedup-key", "merge-key", "order-column", "watermark-order"],
)
def test_missing_keys_and_order_columns_are_errors_even_with_ignore(
    make_ctx: MakeCtx, blocks: dict[str, Any], message: str
) -> None:
    transform = {**blocks.get("transform", {}), "configure": {"missing_column_policy": "ignore"}}
    ctx = make_ctx(**{**blocks, "transform": transform})

    with pytest.raises(TransformError, match=message):
        Deduplicator().apply(ROWS.lazy(), ctx)


@settings(max_examples=40, deadline=None)
@given(
    versions=st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=1, max_size=12),
    keys=st.lists(st.integers(0, 2), min_size=12, max_size=12),
    seed=st.integers(0, 2**16),
    rank=st.booleans(),
)
def test_result_does_not_depend_on_the_order_of_rows_that_are_not_tied(
    versions: list[int | None], keys: list[int], seed: int, rank: bool
) -> None:
    transform: dict[str, Any] = {"deduplicate_columns": ["k"], "latest_data_columns": ["v"]}
    if rank:
        transform["configure"] = {"deduplicate_by_rank": True}
    ctx = TransformContext(make_dataflow(transform=transform), RUN_ID, RUN_TIME)
    frame = pl.DataFrame({"k": keys[: len(versions)], "v": versions}).with_row_index("row")
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=seed)

    def winners(data: pl.DataFrame) -> pl.DataFrame:
        # rows tied on (k, v) are interchangeable except for their id: compare the (k, v) multiset
        return Deduplicator().apply(data.lazy(), ctx)[0].collect().select("k", "v").sort("k", "v", nulls_last=True)

    assert_frame_equal(winners(frame), winners(shuffled))
    best = frame.group_by("k").agg(pl.col("v").max())  # max ignores nulls: a null never beats a value
    assert_frame_equal(winners(frame).unique().sort("k"), best.sort("k"), check_row_order=False)
