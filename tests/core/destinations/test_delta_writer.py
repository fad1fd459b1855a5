"""The delta writer: exactly-once recovery, column resolution, partitioning, destination errors."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from deltalake import DeltaTable
from polars.testing import assert_frame_equal

from datacoolie_core.destinations import DeltaWriter, ReplaceWindow, delta
from datacoolie_core.destinations.load_strategies import DeltaTarget, merge_upsert
from datacoolie_core.errors import CommitConflictError, DestinationError
from datacoolie_core.models import Connection, Destination
from tests.core.destinations.builders import APP, at, make_destination, marker, read_table

WRITER = DeltaWriter()


def test_a_committed_sequence_is_not_written_again(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="append")
    WRITER.write(pl.DataFrame({"id": [1]}), dest, marker=marker(1))
    WRITER.write(pl.DataFrame({"id": [2]}), dest, marker=marker(2))
    # the run crashed after the commit, before its watermark save: the retry is recognised
    retry = WRITER.write(pl.DataFrame({"id": [2]}), dest, marker=marker(2))
    assert (retry.recovered, retry.commit_sequence, retry.table_version, retry.rows_written) == (True, 2, 1, 0)
    assert_frame_equal(read_table(dest.path), pl.DataFrame({"id": [1, 2]}))
    assert WRITER.committed_sequence(dest, APP) == 2
    # another dataflow's first write to the same table is not mistaken for a replay
    other = WRITER.write(pl.DataFrame({"id": [3]}), dest, marker=marker(1, "datacoolie:other"))
    assert (other.recovered, other.table_version) == (False, 2)


def test_partitioned_merge_extends_the_keys_with_partition_columns(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="merge_upsert", merge_keys=["id"], partition_columns=["Region"])
    # load 1 — initial: the table is created partitioned
    WRITER.write(pl.DataFrame({"id": [1, 2], "region": ["eu", "us"], "v": ["a", "b"]}), dest, marker=marker(1))
    assert DeltaTable(str(dest.path)).metadata().partition_columns == ["region"]
    assert sorted(p.name for p in Path(str(dest.path)).glob("region=*")) == ["region=eu", "region=us"]
    # load 2 — key 1 moves partition: (id, region) is the key, so it is a new row (M-28)
    WRITER.write(pl.DataFrame({"id": [1, 2], "region": ["us", "us"], "v": ["A", "B"]}), dest, marker=marker(2))
    expected = pl.DataFrame({"id": [1, 1, 2], "region": ["eu", "us", "us"], "v": ["a", "A", "B"]})
    assert_frame_equal(read_table(dest.path, "id", "region").select("id", "region", "v"), expected)


def test_partitioned_append_and_overwrite(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="append", partition_columns=["day"])
    WRITER.write(pl.DataFrame({"id": [1, 2], "day": [at(1).date(), at(2).date()]}), dest, marker=marker(1))
    WRITER.write(pl.DataFrame({"id": [3], "day": [at(2).date()]}), dest, marker=marker(2))
    assert sorted(p.name for p in Path(str(dest.path)).glob("day=*")) == ["day=2024-01-01", "day=2024-01-02"]
    assert read_table(dest.path)["id"].to_list() == [1, 2, 3]
    overwrite = make_destination(tmp_path, load_type="overwrite", partition_columns=["day"])
    WRITER.write(pl.DataFrame({"id": [9], "day": [at(3).date()]}), overwrite, marker=marker(3))
    assert_frame_equal(read_table(dest.path).select("id", "day"), pl.DataFrame({"id": [9], "day": [at(3).date()]}))


def test_a_missing_merge_key_names_the_table_and_suggests(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="merge_upsert", merge_keys=["order_idd"])
    with pytest.raises(
        DestinationError,
        match=r"table 'orders': merge key column 'order_idd' is not in the data; did you mean 'order_id'",
    ):
        WRITER.write(pl.DataFrame({"order_id": [1]}), dest, marker=marker(1))


def test_a_window_needs_merge_overwrite(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="merge_upsert", merge_keys=["id"])
    with pytest.raises(DestinationError, match="a replace window needs load_type 'merge_overwrite'"):
        WRITER.write(pl.DataFrame({"id": [1]}), dest, marker=marker(1), window=ReplaceWindow({"id": (0, 1)}))


def test_a_destination_without_base_path_is_an_error() -> None:
    connection = Connection.model_validate({"name": "cat", "format": "delta", "configure": {"catalog": "main"}})
    dest = Destination.model_validate(
        {"connection_name": "cat", "table": "orders"}, context={"connections": {"cat": connection}}
    )
    with pytest.raises(DestinationError, match=r"connection 'cat' needs configure\.base_path"):
        WRITER.write(pl.DataFrame({"id": [1]}), dest, marker=marker(1))


def test_a_write_that_changes_nothing_still_commits_its_marker(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="merge_upsert", merge_keys=["id"])
    WRITER.write(pl.DataFrame({"id": [1], "v": ["a"]}), dest, marker=marker(1))
    # delta-rs skips the commit of a MERGE that changes nothing; the marker must land regardless
    info = WRITER.write(
        pl.DataFrame({"id": [], "v": []}, schema={"id": pl.Int64, "v": pl.String}), dest, marker=marker(2)
    )
    assert (info.table_version, info.rows_written, WRITER.committed_sequence(dest, APP)) == (1, 0, 2)
    assert_frame_equal(read_table(dest.path), pl.DataFrame({"id": [1], "v": ["a"]}))


def test_two_first_writes_racing_to_create_the_table_conflict(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="merge_upsert", merge_keys=["id"])
    WRITER.write(pl.DataFrame({"id": [1]}), dest, marker=marker(1, "datacoolie:winner"))
    # the loser saw no table when it started (None snapshot) and must not silently replace the winner's
    target = DeltaTarget(path=str(dest.path), table=None, marker=marker(1), merge_keys=("id",))
    with pytest.raises(CommitConflictError, match="created concurrently"), delta.translate_errors(str(dest.path)):
        merge_upsert(pl.DataFrame({"id": [2]}), target)
    assert_frame_equal(read_table(dest.path), pl.DataFrame({"id": [1]}))
