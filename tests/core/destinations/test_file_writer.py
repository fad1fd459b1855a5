"""The flat-file writer: unique append files, atomic overwrite swap, crash repair, formats, partitions."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, time
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core import faults
from datacoolie_core.destinations import FileWriter, file_writer, get_writer
from datacoolie_core.errors import DestinationError
from tests.core.destinations.builders import APP, make_destination, marker

PARQUET = FileWriter("parquet")
READERS = {
    "parquet": pl.read_parquet,
    "csv": pl.read_csv,
    "json": pl.read_json,
    "jsonl": pl.read_ndjson,
    "avro": pl.read_avro,
}


def data_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))


def read_folder(folder: Path, fmt: str = "parquet") -> pl.DataFrame:
    return pl.concat([READERS[fmt](f) for f in data_files(folder)]).sort("id")


def leftovers(root: Path) -> list[str]:
    """What the writer left in its work folder besides its lock file."""
    work = root.parent / f".{root.name}.datacoolie"
    return sorted(p.name for p in work.iterdir() if p.name != ".lock")


def test_append_twice_at_once_writes_two_files(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, "parquet", load_type="append")
    root = Path(str(dest.path))
    first = PARQUET.write(pl.DataFrame({"id": [1]}), dest, marker=marker(1))
    PARQUET.write(pl.DataFrame({"id": [2]}), dest, marker=marker(2))
    names = [f.name for f in data_files(root)]
    assert len(names) == 2
    assert all(name.startswith("part-") and name.endswith(".parquet") for name in names)
    assert_frame_equal(read_folder(root), pl.DataFrame({"id": [1, 2]}))
    assert (first.rows_written, first.files_added, first.commit_sequence) == (1, 1, 1)
    assert first.bytes_added == min(f.stat().st_size for f in data_files(root))
    assert leftovers(root) == []


def test_committed_sequence_round_trip_and_fan_in(tmp_path: Path) -> None:
    append = make_destination(tmp_path, "parquet", load_type="append")
    overwrite = make_destination(tmp_path, "parquet", load_type="overwrite")
    assert PARQUET.committed_sequence(append, APP) is None
    PARQUET.write(pl.DataFrame({"id": [1]}), append, marker=marker(1))
    PARQUET.write(pl.DataFrame({"id": [2]}), append, marker=marker(2))
    assert PARQUET.committed_sequence(append, APP) == 2
    # another dataflow overwrites the folder: the first one's files are gone, its sequence is not
    PARQUET.write(pl.DataFrame({"id": [9]}), overwrite, marker=marker(5, "datacoolie:other"))
    assert PARQUET.committed_sequence(append, APP) == 2
    assert PARQUET.committed_sequence(append, "datacoolie:other") == 5
    assert_frame_equal(read_folder(Path(str(append.path))), pl.DataFrame({"id": [9]}))
    # a replayed write is recognised, not repeated
    again = PARQUET.write(pl.DataFrame({"id": [2]}), append, marker=marker(2))
    assert (again.recovered, again.commit_sequence) == (True, 2)
    assert_frame_equal(read_folder(Path(str(append.path))), pl.DataFrame({"id": [9]}))


@pytest.mark.parametrize("exchange", [True, False], ids=["atomic-exchange", "rename-aside"])
def test_overwrite_swaps_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool) -> None:
    if not exchange:
        monkeypatch.setattr(file_writer, "_exchange", lambda a, b: False)
    dest = make_destination(tmp_path, "parquet", load_type="overwrite")
    root = Path(str(dest.path))
    PARQUET.write(pl.DataFrame({"id": [1, 2]}), dest, marker=marker(1))
    info = PARQUET.write(pl.DataFrame({"id": [3]}), dest, marker=marker(2))
    assert_frame_equal(read_folder(root), pl.DataFrame({"id": [3]}))
    assert len(data_files(root)) == 1
    assert (info.files_added, info.files_removed) == (1, 1)
    assert leftovers(root) == []


CRASHING_OVERWRITE = textwrap.dedent(
    """
    import sys
    import polars as pl
    from datacoolie_core.destinations import CommitMarker, FileWriter
    from datacoolie_core.models import Connection, Destination

    connection = Connection.model_validate({"name": "lake", "format": "parquet", "configure": {"base_path": sys.argv[1]}})
    dest = Destination.model_validate(
        {"connection_name": "lake", "table": "orders", "load_type": "overwrite"},
        context={"connections": {"lake": connection}},
    )
    marker = CommitMarker(app_id="datacoolie:orders", sequence=2, dataflow_run_id="run-2")
    FileWriter("parquet").write(pl.DataFrame({"id": [3, 4]}), dest, marker=marker)
    """
)


def test_a_crash_during_overwrite_keeps_the_old_data_and_the_rerun_writes_once(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, "parquet", load_type="overwrite")
    root = Path(str(dest.path))
    PARQUET.write(pl.DataFrame({"id": [1, 2]}), dest, marker=marker(1))
    env = os.environ | {faults.ENV_VAR: faults.DURING_FILE_OVERWRITE}
    crashed = subprocess.run([sys.executable, "-c", CRASHING_OVERWRITE, str(tmp_path)], env=env, check=False)
    assert crashed.returncode == -signal.SIGKILL
    # the old content is intact; the staged new files wait in the work folder
    assert_frame_equal(read_folder(root), pl.DataFrame({"id": [1, 2]}))
    assert leftovers(root)
    # the next call repairs: the uncommitted staging is discarded, the write did not land
    assert PARQUET.committed_sequence(dest, APP) == 1
    assert leftovers(root) == []
    # the rerun writes the new data exactly once
    PARQUET.write(pl.DataFrame({"id": [3, 4]}), dest, marker=marker(2))
    assert_frame_equal(read_folder(root), pl.DataFrame({"id": [3, 4]}))
    assert PARQUET.committed_sequence(dest, APP) == 2


def test_a_committed_overwrite_interrupted_mid_swap_is_rolled_forward(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest = make_destination(tmp_path, "parquet", load_type="overwrite")
    root = Path(str(dest.path))
    PARQUET.write(pl.DataFrame({"id": [1]}), dest, marker=marker(1))

    def crash_after_moving_the_old_folder_aside(stage: Path, target: Path, old: Path) -> None:
        os.rename(target, old)
        raise KeyboardInterrupt  # stands in for a kill between the two renames

    monkeypatch.setattr(file_writer, "_swap_in", crash_after_moving_the_old_folder_aside)
    with pytest.raises(KeyboardInterrupt):
        PARQUET.write(pl.DataFrame({"id": [2]}), dest, marker=marker(2))
    monkeypatch.undo()
    assert not root.exists()
    # the commit record was written, so the repair finishes the swap rather than undoing it
    assert PARQUET.committed_sequence(dest, APP) == 2
    assert_frame_equal(read_folder(root), pl.DataFrame({"id": [2]}))
    assert leftovers(root) == []


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json", "jsonl", "avro"])
def test_every_format_round_trips(tmp_path: Path, fmt: str) -> None:
    dest = make_destination(tmp_path, fmt, load_type="append")
    frame = pl.DataFrame({"id": [1, 2], "name": ["a", "b"]})
    get_writer(fmt).write(frame, dest, marker=marker(1))
    assert [f.suffix for f in data_files(Path(str(dest.path)))] == [f".{fmt}"]
    assert_frame_equal(read_folder(Path(str(dest.path)), fmt), frame)


def test_avro_writes_zoned_timestamps_and_times_as_strings(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, "avro", load_type="overwrite")
    stamp = datetime(2024, 1, 2, 3, 4, tzinfo=UTC)
    frame = pl.DataFrame({"id": [1], "at": [stamp], "local": [stamp.replace(tzinfo=None)], "t": [time(1, 2)]})
    get_writer("avro").write(frame, dest, marker=marker(1))
    back = read_folder(Path(str(dest.path)), "avro")
    assert back.schema == pl.Schema({"id": pl.Int64, "at": pl.String, "local": pl.Datetime("us"), "t": pl.String})
    assert back.row(0) == (1, str(pl.Series([stamp]).cast(pl.String)[0]), stamp.replace(tzinfo=None), "01:02:00")


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_partitioned_output_uses_hive_folders(tmp_path: Path, fmt: str) -> None:
    dest = make_destination(tmp_path, fmt, load_type="append", partition_columns=["Region"])
    root = Path(str(dest.path))
    frame = pl.DataFrame({"id": [1, 2, 3], "region": ["eu", "us/west", None]})
    get_writer(fmt).write(frame, dest, marker=marker(1))
    folders = sorted(str(f.parent.relative_to(root)) for f in data_files(root))
    assert folders == ["region=__HIVE_DEFAULT_PARTITION__", "region=eu", "region=us%2Fwest"]
    ids = {str(f.parent.relative_to(root)): READERS[fmt](f)["id"].to_list() for f in data_files(root)}
    assert ids == {"region=eu": [1], "region=us%2Fwest": [2], "region=__HIVE_DEFAULT_PARTITION__": [3]}


@pytest.mark.parametrize("fmt", ["json", "avro"])
def test_json_and_avro_cannot_be_partitioned(tmp_path: Path, fmt: str) -> None:
    dest = make_destination(tmp_path, fmt, load_type="append", partition_columns=["region"])
    with pytest.raises(DestinationError, match=f"partitioning not supported for {fmt}"):
        get_writer(fmt).write(pl.DataFrame({"id": [1], "region": ["eu"]}), dest, marker=marker(1))


def test_merge_load_types_are_rejected_with_the_allowed_ones(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, "csv", load_type="merge_upsert", merge_keys=["id"])
    with pytest.raises(
        DestinationError, match=r"'merge_upsert' is not supported for files; allowed: append, overwrite"
    ):
        get_writer("csv").write(pl.DataFrame({"id": [1]}), dest, marker=marker(1))


def test_date_folder_partitions_place_the_files_under_today(tmp_path: Path) -> None:
    dest = make_destination(
        tmp_path, "parquet", load_type="append", connection={"date_folder_partitions": "{year}/{month}/{day}"}
    )
    before = datetime.now(UTC)
    PARQUET.write(pl.DataFrame({"id": [1]}), dest, marker=marker(1))
    after = datetime.now(UTC)
    (file,) = data_files(Path(str(dest.path)))
    folder = str(file.parent.relative_to(Path(str(dest.path))))
    assert folder in {f"{moment:%Y/%m/%d}" for moment in (before, after)}
    assert PARQUET.committed_sequence(dest, APP) == 1


def test_a_failed_file_write_names_the_table_and_leaves_nothing_behind(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, "csv", load_type="append")
    with pytest.raises(DestinationError, match=r"destination table 'orders' at .*orders: file write failed") as caught:
        get_writer("csv").write(pl.DataFrame({"id": [1], "tags": [["a", "b"]]}), dest, marker=marker(1))
    assert caught.value.__cause__ is not None
    assert get_writer("csv").committed_sequence(dest, APP) is None
    assert leftovers(Path(str(dest.path))) == []
