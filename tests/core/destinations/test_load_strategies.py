"""Narrated multi-load tests of every Delta load strategy, reading the whole table back after each load."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
from deltalake import DeltaTable
from polars.testing import assert_frame_equal

from datacoolie_core.columns import IS_CURRENT, VALID_FROM, VALID_TO
from datacoolie_core.destinations import LOAD_STRATEGIES, DeltaWriter, ReplaceWindow, get_strategy
from datacoolie_core.destinations.load_strategies import ACTION, last_per_key
from datacoolie_core.destinations.scd2_history import MATCH_FROM, plan_scd2
from datacoolie_core.errors import DestinationError
from tests.core.destinations.builders import (
    APP,
    TS,
    at,
    batch,
    make_destination,
    marker,
    read_table,
    scd2_batch,
    scd2_stored,
    stored,
)

WRITER = DeltaWriter()
Version = tuple[int | None, str, datetime, datetime | None, int, int]
"""``(id, name, valid_from, valid_to, created load, updated load)``, as :func:`scd2_stored` takes it."""


def test_append(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="append")
    # load 1 — initial
    WRITER.write(batch([(1, "a", 10), (2, "b", 20)], load=1), dest, marker=marker(1))
    assert_frame_equal(read_table(dest.path, "id", "name"), stored([(1, "a", 10, 1, 1), (2, "b", 20, 1, 1)]))
    # load 2 — updates and a new key: append keeps every version
    WRITER.write(batch([(2, "B", 21), (3, "c", 30)], load=2), dest, marker=marker(2))
    expected = [(1, "a", 10, 1, 1), (2, "B", 21, 2, 2), (2, "b", 20, 1, 1), (3, "c", 30, 2, 2)]
    assert_frame_equal(read_table(dest.path, "id", "name"), stored(expected))
    # load 3 — late and equal-timestamp rows are appended as they come
    WRITER.write(batch([(1, "a0", 9)], load=3), dest, marker=marker(3))
    expected.insert(1, (1, "a0", 9, 3, 3))
    assert_frame_equal(read_table(dest.path, "id", "name"), stored(expected))
    # load 4 — duplicate batch keys all land
    WRITER.write(batch([(4, "d", 40), (4, "d", 40)], load=4), dest, marker=marker(4))
    expected += [(4, "d", 40, 4, 4), (4, "d", 40, 4, 4)]
    assert_frame_equal(read_table(dest.path, "id", "name"), stored(expected))


def test_append_evolves_the_schema(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="append")
    WRITER.write(pl.DataFrame({"id": [1], "name": ["a"]}), dest, marker=marker(1))
    # a new column joins the schema; earlier rows read it as null
    WRITER.write(pl.DataFrame({"id": [2], "name": ["b"], "score": [2.5]}), dest, marker=marker(2))
    # a missing column reads as null in the new rows
    WRITER.write(pl.DataFrame({"id": [3], "score": [3.5]}), dest, marker=marker(3))
    expected = pl.DataFrame({"id": [1, 2, 3], "name": ["a", "b", None], "score": [None, 2.5, 3.5]})
    assert_frame_equal(read_table(dest.path), expected)


def test_overwrite_replaces_rows_and_schema(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="full_load")  # normalised to overwrite
    # load 1 — initial
    WRITER.write(batch([(1, "a", 10), (2, "b", 20)], load=1), dest, marker=marker(1))
    assert_frame_equal(read_table(dest.path), stored([(1, "a", 10, 1, 1), (2, "b", 20, 1, 1)]))
    # load 2 — the batch is the table; `amount` is dropped and `region` appears
    second = batch([(2, "B", "eu"), (3, "c", "us")], load=2, columns=("id", "name", "region"))
    WRITER.write(second, dest, marker=marker(2))
    assert_frame_equal(read_table(dest.path), second)
    # load 3 — late and equal-timestamp rows: still just the batch
    third = batch([(1, "a0", "eu")], load=3, columns=("id", "name", "region"))
    WRITER.write(third, dest, marker=marker(3))
    assert_frame_equal(read_table(dest.path), third)
    # load 4 — duplicate batch keys are written as given
    fourth = batch([(4, "d", "eu"), (4, "d", "eu")], load=4, columns=("id", "name", "region"))
    WRITER.write(fourth, dest, marker=marker(4))
    assert_frame_equal(read_table(dest.path), fourth)


def test_merge_upsert(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="merge_upsert", merge_keys=["ID"])  # resolved case-insensitively
    # load 1 — initial: creates the table
    WRITER.write(batch([(1, "a", 10), (2, "b", 20)], load=1), dest, marker=marker(1))
    assert_frame_equal(read_table(dest.path), stored([(1, "a", 10, 1, 1), (2, "b", 20, 1, 1)]))
    # load 2 — updates and a new key: key 2 keeps its __created_at, gets the new __updated_at
    info = WRITER.write(batch([(2, "B", 21), (3, "c", 30)], load=2), dest, marker=marker(2))
    expected = [(1, "a", 10, 1, 1), (2, "B", 21, 1, 2), (3, "c", 30, 2, 2)]
    assert_frame_equal(read_table(dest.path), stored(expected))
    assert (info.rows_inserted, info.rows_updated, info.rows_deleted, info.rows_written) == (1, 1, 0, 2)
    # load 3 — late and equal-timestamp rows: upsert has no time guard, the last delivery wins
    # (the watermark filter and the dedup order are what keep late rows out upstream)
    WRITER.write(batch([(1, "a0", 9)], load=3), dest, marker=marker(3))
    expected[0] = (1, "a0", 9, 1, 3)
    assert_frame_equal(read_table(dest.path), stored(expected))
    # load 4 — duplicate batch keys: the last row per key in frame order wins, never two target rows
    WRITER.write(batch([(3, "x", 1), (4, "d", 40), (3, "y", 2), (4, "e", 41)], load=4), dest, marker=marker(4))
    expected[2:] = [(3, "y", 2, 2, 4), (4, "e", 41, 4, 4)]
    assert_frame_equal(read_table(dest.path), stored(expected))


def test_merge_upsert_evolves_the_schema(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="merge_upsert", merge_keys=["id"])
    WRITER.write(pl.DataFrame({"id": [1, None], "name": ["a", "n"]}), dest, marker=marker(1))
    # a new source column is added to the table, not dropped (DataCoolie F-11 dropped it); the null
    # key matches nothing, so its row is inserted beside the stored one
    WRITER.write(pl.DataFrame({"id": [1, None], "name": ["A", "N"], "score": [1.5, 2.5]}), dest, marker=marker(2))
    expected = pl.DataFrame({"id": [None, None, 1], "name": ["N", "n", "A"], "score": [2.5, None, 1.5]})
    assert_frame_equal(read_table(dest.path, "id", "name"), expected)


def test_merge_overwrite(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="merge_overwrite", merge_keys=["id"])
    # load 1 — initial
    WRITER.write(batch([(1, "a", 10), (2, "b", 20)], load=1), dest, marker=marker(1))
    assert_frame_equal(read_table(dest.path), stored([(1, "a", 10, 1, 1), (2, "b", 20, 1, 1)]))
    # load 2 — updates and a new key: key 2's rows are replaced by the batch's two rows
    info = WRITER.write(batch([(2, "B", 21), (2, "B2", 22), (3, "c", 30)], load=2), dest, marker=marker(2))
    expected = [(1, "a", 10, 1, 1), (2, "B", 21, 2, 2), (2, "B2", 22, 2, 2), (3, "c", 30, 2, 2)]
    assert_frame_equal(read_table(dest.path, "id", "name"), stored(expected))
    assert (info.rows_inserted, info.rows_deleted) == (3, 1)
    # load 3 — late and equal-timestamp rows: the key group is replaced, whatever its timestamps
    WRITER.write(batch([(2, "b0", 5)], load=3), dest, marker=marker(3))
    expected[1:3] = [(2, "b0", 5, 3, 3)]
    assert_frame_equal(read_table(dest.path, "id", "name"), stored(expected))
    # load 4 — duplicate batch keys: both rows land (ties are kept for merge_overwrite) ...
    WRITER.write(batch([(4, "d", 40), (4, "d", 40)], load=4), dest, marker=marker(4))
    expected += [(4, "d", 40, 4, 4), (4, "d", 40, 4, 4)]
    assert_frame_equal(read_table(dest.path, "id", "name"), stored(expected))
    # load 5 — ... and never compound: the next delivery replaces the whole group
    WRITER.write(batch([(4, "d", 41)], load=5), dest, marker=marker(5))
    expected[-2:] = [(4, "d", 41, 5, 5)]
    assert_frame_equal(read_table(dest.path, "id", "name"), stored(expected))
    assert ACTION not in read_table(dest.path).columns


def test_merge_overwrite_with_a_replace_window(tmp_path: Path) -> None:
    dest = make_destination(
        tmp_path,
        load_type="merge_overwrite",
        merge_keys=["id"],
        configure={"replace_by_watermark": True},
    )
    columns = ("id", "name", "ts")
    # load 1 — initial: one row per day
    first = pl.DataFrame({"id": [1, 2, 3, 4], "name": ["a", "b", "c", "d"], "ts": [at(1), at(2), at(3), at(4)]})
    WRITER.write(first, dest, marker=marker(1))
    # load 2 — window (day 1, day 3]: key 3 was deleted at the source, key 2 changed, key 4 moved
    # into the window; rows of the window go, key 4's old row outside it goes by key
    second = pl.DataFrame({"id": [2, 4], "name": ["B", "D"], "ts": [at(2, 12), at(3)]}, schema_overrides={"ts": TS})
    window = ReplaceWindow({"TS": (at(1), at(3))})  # column names resolve case-insensitively
    info = WRITER.write(second, dest, marker=marker(2), window=window)
    expected = pl.DataFrame(
        {"id": [1, 2, 4], "name": ["a", "B", "D"], "ts": [at(1), at(2, 12), at(3)]}, schema_overrides={"ts": TS}
    )
    assert_frame_equal(read_table(dest.path).select(columns), expected)
    assert (info.rows_inserted, info.rows_deleted) == (2, 3)


def test_scd2(tmp_path: Path) -> None:
    dest = make_destination(
        tmp_path, load_type="scd2", merge_keys=["id"], configure={"scd2_effective_column": "changed_at"}
    )
    # load 1 — initial: every key current
    WRITER.write(scd2_batch([(1, "a", at(1)), (2, "b", at(1))], load=1), dest, marker=marker(1))
    history: list[Version] = [(1, "a", at(1), None, 1, 1), (2, "b", at(1), None, 1, 1)]
    assert_frame_equal(read_table(dest.path, "id", VALID_FROM), scd2_stored(history))
    # load 2 — updates and a new key: key 1 changed (closed + new version), key 2 re-delivered
    # unchanged (nothing happens), key 3 is new
    info = WRITER.write(scd2_batch([(1, "A", at(2)), (2, "b", at(2)), (3, "c", at(2))], load=2), dest, marker=marker(2))
    history = [
        (1, "a", at(1), at(2), 1, 2),
        (1, "A", at(2), None, 2, 2),
        (2, "b", at(1), None, 1, 1),
        (3, "c", at(2), None, 2, 2),
    ]
    assert_frame_equal(read_table(dest.path, "id", VALID_FROM), scd2_stored(history))
    assert (info.rows_inserted, info.rows_updated) == (2, 1)
    # load 3 — several versions of a key in one batch, out of frame order, one delivered twice, and
    # two versions of key 2 at one instant (the one delivered last wins): all chained in effective order
    third = [(1, "C", at(4)), (1, "B", at(3)), (1, "B", at(3)), (2, "b4", at(4)), (2, "b5", at(5)), (2, "b5x", at(5))]
    info = WRITER.write(scd2_batch(third, load=3), dest, marker=marker(3))
    history = [
        (1, "a", at(1), at(2), 1, 2),
        (1, "A", at(2), at(3), 2, 3),
        (1, "B", at(3), at(4), 3, 3),
        (1, "C", at(4), None, 3, 3),
        (2, "b", at(1), at(4), 1, 3),
        (2, "b4", at(4), at(5), 3, 3),
        (2, "b5x", at(5), None, 3, 3),
        (3, "c", at(2), None, 2, 2),
    ]
    assert_frame_equal(read_table(dest.path, "id", VALID_FROM), scd2_stored(history))
    assert (info.rows_inserted, info.rows_updated) == (4, 2)
    # load 4 — a late version of key 1 (day 2, noon) lands inside version A, which it closes
    WRITER.write(scd2_batch([(1, "L", at(2, 12))], load=4), dest, marker=marker(4))
    history[1:2] = [(1, "A", at(2), at(2, 12), 2, 4), (1, "L", at(2, 12), at(3), 4, 4)]
    assert_frame_equal(read_table(dest.path, "id", VALID_FROM), scd2_stored(history))
    # load 5 — key 3 again at its current instant with new content: the later delivery replaces
    # it; a late re-delivery of A inside A's own validity changes nothing
    info = WRITER.write(scd2_batch([(3, "C", at(2)), (1, "A", at(2, 6))], load=5), dest, marker=marker(5))
    history[-1] = (3, "C", at(2), None, 5, 5)
    assert_frame_equal(read_table(dest.path, "id", VALID_FROM), scd2_stored(history))
    assert (info.rows_inserted, info.rows_updated, info.rows_deleted) == (1, 0, 1)
    # load 6 — an unchanged re-delivery: no change, but the marker still commits
    version = DeltaTable(str(dest.path)).version()
    WRITER.write(scd2_batch([(2, "b5x", at(6))], load=6), dest, marker=marker(6))
    assert_frame_equal(read_table(dest.path, "id", VALID_FROM), scd2_stored(history))
    assert DeltaTable(str(dest.path)).version() == version + 1
    assert WRITER.committed_sequence(dest, APP) == 6
    assert ACTION not in read_table(dest.path).columns


def test_scd2_matches_null_keys(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="scd2", merge_keys=["id"], configure={"scd2_effective_column": "x"})
    # load 1 — initial, with a null key
    WRITER.write(scd2_batch([(1, "a", at(1)), (None, "n", at(1))], load=1), dest, marker=marker(1))
    # load 2 — the null key replaced at its instant and then changed; key 1 changed
    second: list[tuple[int | None, str, datetime]] = [(1, "b", at(2)), (None, "m", at(1)), (None, "k", at(2))]
    info = WRITER.write(scd2_batch(second, load=2), dest, marker=marker(2))
    history: list[Version] = [
        (None, "m", at(1), at(2), 2, 2),
        (None, "k", at(2), None, 2, 2),
        (1, "a", at(1), at(2), 1, 2),
        (1, "b", at(2), None, 2, 2),
    ]
    assert_frame_equal(read_table(dest.path, "id", VALID_FROM), scd2_stored(history))
    assert (info.rows_inserted, info.rows_updated, info.rows_deleted) == (3, 1, 1)


def test_scd2_rejects_null_effective_times(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="scd2", merge_keys=["id"], configure={"scd2_effective_column": "x"})
    rows = scd2_batch([(1, "a", at(1))], load=1).with_columns(pl.lit(None, dtype=TS).alias(VALID_FROM))
    with pytest.raises(DestinationError, match=r"1 row\(s\) have a null __valid_from"):
        WRITER.write(rows, dest, marker=marker(1))


def _versions(*rows: tuple[int, str, int]) -> pl.DataFrame:
    return scd2_batch([(k, name, at(day)) for k, name, day in rows], load=1)


def _history(*rows: tuple[int, str, int]) -> pl.DataFrame:
    """A stored chain: each version valid until the next one of its key."""
    next_from = pl.col(VALID_FROM).shift(-1).over("id")
    return _versions(*rows).with_columns(next_from.alias(VALID_TO), next_from.is_null().alias(IS_CURRENT))


@pytest.mark.parametrize(
    ("stored", "incoming", "inserted", "moved", "deleted"),
    [
        ([], [(1, "a", 1)], [(1, "a", 1, None)], [], []),
        ([(1, "a", 1)], [(1, "a", 1)], [], [], []),
        ([(1, "a", 1)], [(1, "a", 2)], [], [], []),
        ([(1, "a", 1)], [(1, "b", 2)], [(1, "b", 2, None)], [(1, 1, 2)], []),
        ([(1, "a", 2)], [(1, "b", 2)], [(1, "b", 2, None)], [], [2]),
        ([(1, "a", 2)], [(1, "b", 1)], [(1, "b", 1, 2)], [], []),
        ([(1, "a", 2)], [(1, "a", 1)], [(1, "a", 1, None)], [], [2]),
        (
            [(1, "a", 1)],
            [(1, "b", 2), (1, "b", 3), (1, "c", 4)],
            [(1, "b", 2, 4), (1, "c", 4, None)],
            [(1, 1, 2)],
            [],
        ),
        ([(1, "a", 1)], [(1, "a", 2), (1, "b", 3)], [(1, "b", 3, None)], [(1, 1, 3)], []),
        ([(1, "a", 1), (1, "c", 3)], [(1, "b", 2)], [(1, "b", 2, 3)], [(1, 1, 2)], []),
        ([(1, "a", 1), (1, "b", 2)], [(1, "a", 2)], [], [(1, 1, None)], [2]),
        ([], [(1, "a", 3), (1, "b", 1)], [(1, "b", 1, 3), (1, "a", 3, None)], [], []),
        ([], [(1, "a", 1), (1, "b", 1), (1, "a", 1)], [(1, "a", 1, None)], [], []),
    ],
    ids=[
        "new-key",
        "exact-redelivery",
        "unchanged-redelivery-later",
        "changed-later",
        "same-instant-last-delivered-wins",
        "late-version-before-the-first",
        "late-equal-version-takes-over",
        "chain-in-batch",
        "unchanged-then-changed",
        "late-version-splits-a-closed-one",
        "back-to-the-previous-content-reopens-it",
        "new-key-out-of-order-batch",
        "same-instant-in-batch-last-wins",
    ],
)
def test_plan_scd2(
    stored: list[tuple[int, str, int]],
    incoming: list[tuple[int, str, int]],
    inserted: list[tuple[int, str, int, int | None]],
    moved: list[tuple[int, int, int | None]],
    deleted: list[int],
) -> None:
    plan = plan_scd2(_versions(*incoming), _history(*stored) if stored else None, ["id"])
    got = plan.inserts.select("id", "name", VALID_FROM, VALID_TO, IS_CURRENT).rows()
    assert got == [(k, n, at(f), None if t is None else at(t), t is None) for k, n, f, t in inserted]
    got = plan.updates.select("id", MATCH_FROM, VALID_TO, IS_CURRENT).rows()
    assert got == [(k, at(f), None if t is None else at(t), t is None) for k, f, t in moved]
    assert plan.deletes.rows() == [(1, at(day)) for day in deleted]


def test_plan_scd2_repairs_two_current_rows_at_one_instant() -> None:
    # DataCoolie appends a re-read version as a second current row at the same instant (F-01)
    stored = pl.concat([_history((1, "a", 1)), _history((1, "a", 1))])
    plan = plan_scd2(_versions((1, "b", 2)), stored, ["id"])
    assert plan.deletes.rows() == [(1, at(1))]
    got = plan.inserts.select("id", "name", VALID_FROM, VALID_TO, IS_CURRENT).rows()
    assert got == [(1, "a", at(1), at(2), False), (1, "b", at(2), None, True)]
    assert plan.updates.is_empty()


def test_registry_names_every_strategy_and_suggests_on_typos() -> None:
    assert sorted(LOAD_STRATEGIES) == ["append", "merge_overwrite", "merge_upsert", "overwrite", "scd2"]
    with pytest.raises(DestinationError, match=r"unknown load_type 'merge_upsrt'; did you mean 'merge_upsert'\?"):
        get_strategy("merge_upsrt")


def test_scd2_unchanged_redelivery_creates_no_extra_current_row(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="scd2", merge_keys=["id"], configure={"scd2_effective_column": "x"})
    WRITER.write(scd2_batch([(1, "a", at(1)), (2, "b", at(1))], load=1), dest, marker=marker(1))
    # the same content again, even with a later effective time (F-01: a replayed window)
    WRITER.write(scd2_batch([(1, "a", at(1)), (2, "b", at(3))], load=2), dest, marker=marker(2))
    assert_frame_equal(
        read_table(dest.path, "id", VALID_FROM), scd2_stored([(1, "a", at(1), None, 1, 1), (2, "b", at(1), None, 1, 1)])
    )


@pytest.mark.parametrize(
    ("rows", "keys", "expected"),
    [
        ({"k": [1, 2, 3], "v": [1, 2, 3]}, ["k"], {"k": [1, 2, 3], "v": [1, 2, 3]}),
        ({"k": [3, 1, 3], "v": [1, 2, 3]}, ["k"], {"k": [1, 3], "v": [2, 3]}),
        ({"k": [None, 1, None], "v": [1, 2, 3]}, ["k"], {"k": [None, 1, None], "v": [1, 2, 3]}),
        ({"k": [None, 1, None, 1], "v": [1, 2, 3, 4]}, ["k"], {"k": [None, None, 1], "v": [1, 3, 4]}),
        ({"k": [1, 1, 1], "j": ["a", "b", "a"], "v": [1, 2, 3]}, ["k", "j"], {"k": [1, 1], "j": ["b", "a"], "v": [2, 3]}),
        ({"k": [None, 2], "v": [1, 2]}, ["k"], {"k": [None, 2], "v": [1, 2]}),
    ],
    ids=[
        "unique-keys",
        "repeated-key-last-wins",
        "null-keys-are-each-kept",
        "null-keys-kept-beside-a-repeated-key",
        "composite-key",
        "one-null-key",
    ],
)  # fmt: skip
def test_a_merge_batch_keeps_the_last_row_per_key(
    rows: dict[str, list[object]], keys: list[str], expected: dict[str, list[object]]
) -> None:
    frame = pl.DataFrame(rows)
    assert_frame_equal(last_per_key(frame, keys), pl.DataFrame(expected, schema=frame.schema))


def test_a_merge_batch_without_repeated_keys_is_not_copied() -> None:
    frame = pl.DataFrame({"k": [1, 2, None], "v": ["a", "b", "c"]})
    assert last_per_key(frame, ["k"]) is frame


def test_merge_upsert_null_keys_never_match(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    dest = make_destination(tmp_path, load_type="merge_upsert", merge_keys=["id"])
    # load 1 — one keyed row, two null-key rows: every null-key row is its own insert
    info = WRITER.write(batch([(1, "a", 10), (None, "n1", 1), (None, "n2", 2)], load=1), dest, marker=marker(1))
    assert info.null_key_rows == 2
    # load 2 — a new null-key row matches no stored one (target.id = source.id, as DataCoolie's MERGE)
    with caplog.at_level("WARNING", logger="datacoolie_core.destinations.load_strategies"):
        info = WRITER.write(batch([(None, "n3", 3), (1, "A", 11)], load=2), dest, marker=marker(2))
    assert (info.null_key_rows, info.rows_inserted, info.rows_updated) == (1, 1, 1)
    assert "1 row(s) have a null merge key (id)" in caplog.text
    expected = [(None, "n1", 1, 1, 1), (None, "n2", 2, 1, 1), (None, "n3", 3, 2, 2), (1, "A", 11, 1, 2)]
    assert_frame_equal(read_table(dest.path, "id", "name"), stored(expected).sort(["id", "name"], nulls_last=False))


def test_merge_overwrite_null_keys_never_replace_stored_ones(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="merge_overwrite", merge_keys=["id"])
    WRITER.write(batch([(1, "a", 10), (None, "n1", 1)], load=1), dest, marker=marker(1))
    info = WRITER.write(batch([(None, "n2", 2)], load=2), dest, marker=marker(2))
    assert info.null_key_rows == 1
    assert read_table(dest.path, "name")["name"].to_list() == ["a", "n1", "n2"]


def test_merge_upsert_keeps_a_column_the_batch_lacks(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="merge_upsert", merge_keys=["id"])
    WRITER.write(batch([(1, "a", 10), (2, "b", 20)], load=1), dest, marker=marker(1))
    # load 2 — the batch has no `amount`: the update keeps the stored amount, the insert gets null
    WRITER.write(batch([(1, "A", None), (3, "c", None)], load=2).drop("amount"), dest, marker=marker(2))
    table = read_table(dest.path)
    assert table.select("id", "name", "amount").rows() == [(1, "A", 10), (2, "b", 20), (3, "c", None)]
