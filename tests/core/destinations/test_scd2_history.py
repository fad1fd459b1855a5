"""SCD2 history does not depend on batch boundaries (docs/scd2.md).

Random change streams of a few keys (updates, ties at one instant, exact re-deliveries, late
versions) split into random runs give the history one run over everything gives, and the one-run
history is the one a plain Python model of the rules gives. Then the same with whole dataflow runs,
one of them SIGKILLed before or after its commit and rerun.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from datacoolie_core import columns as fc
from datacoolie_core.destinations import DeltaWriter
from datacoolie_core.faults import AFTER_COMMIT, BEFORE_COMMIT, ENV_VAR
from tests.core.destinations.builders import TS, at, make_destination, marker, scd2_batch
from tests.core.orchestration.test_dataflow_runner import CRASHING_RUN, REPO, execute

WRITER = DeltaWriter()
Event = tuple[int, str, int]
"""``(key, content, hour)``: one delivered version of a key, effective at that hour of day 1."""
LOAD_STAMPS = (fc.CREATED_AT, fc.UPDATED_AT, fc.DATAFLOW_RUN_ID)
"""Our run-id and load-time columns: they say when a row was written, not what the history is."""


@st.composite
def in_order_runs(draw: st.DrawFn) -> list[list[Event]]:
    """Runs whose versions of a key are never older than that key's versions in earlier runs.

    Inside a run anything goes: any order, several versions of a key, ties at one instant (the
    content alphabet is small, so unchanged versions are common), and exact re-deliveries of what
    an earlier instant holds (late by now, they change nothing, in one run or in many).
    """
    latest: dict[int, int] = {}
    delivered: list[Event] = []
    runs: list[list[Event]] = []
    for _ in range(draw(st.integers(1, 4))):
        fresh = st.tuples(st.integers(0, 2), st.sampled_from("abc"), st.integers(0, 2))
        run = [(k, c, latest.get(k, 0) + offset) for k, c, offset in draw(st.lists(fresh, min_size=1, max_size=5))]
        if draw(st.booleans()) and delivered:
            held = {(k, hour): (k, c, hour) for k, c, hour in delivered}  # the last delivery at an instant wins
            run.insert(draw(st.integers(0, len(run))), draw(st.sampled_from(sorted(held.values()))))
        for key, _, hour in run:
            latest[key] = max(latest.get(key, 0), hour)
        delivered += run
        runs.append(run)
    return runs


@st.composite
def late_runs(draw: st.DrawFn) -> list[list[Event]]:
    """Versions in any order across runs (late ones too), each instant with its own content.

    With one content per instant no delivery is an unchanged version of its predecessor, the one
    case whose order matters (docs/scd2.md, "Late versions").
    """
    instants = st.tuples(st.integers(0, 2), st.integers(0, 7))
    stream = [(k, f"v{hour}", hour) for k, hour in draw(st.lists(instants, min_size=1, max_size=14))]
    cuts = sorted(draw(st.sets(st.integers(1, max(len(stream) - 1, 1)), max_size=4)) - {len(stream)})
    bounds = [0, *cuts, len(stream)]
    return [stream[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def model(stream: Sequence[Event], *, time_tracked: bool = False) -> pl.DataFrame:
    """The rules in plain Python: by instant the last delivery wins; equal neighbours are one version.

    ``time_tracked``: the effective time is itself a tracked column (as ``changed_at`` is in a
    dataflow), so only an exact re-delivery is ever equal to its neighbour.
    """
    rows: list[tuple[int, str, datetime, datetime | None]] = []
    for key in sorted({k for k, _, _ in stream}):
        at_instant = {hour: content for k, content, hour in stream if k == key}  # later deliveries overwrite
        versions: list[tuple[int, str]] = []
        for hour in sorted(at_instant):
            if not versions or versions[-1][1] != at_instant[hour] or time_tracked:
                versions.append((hour, at_instant[hour]))
        ends = [at(1, hour) for hour, _ in versions[1:]] + [None]
        rows += [(key, content, at(1, hour), end) for (hour, content), end in zip(versions, ends, strict=True)]
    schema = pl.Schema({"id": pl.Int64(), "name": pl.String(), fc.VALID_FROM: TS, fc.VALID_TO: TS})
    return pl.DataFrame(rows, schema=schema, orient="row").with_columns(
        pl.col(fc.VALID_TO).is_null().alias(fc.IS_CURRENT), pl.lit(fc.AUTHOR).alias(fc.UPDATED_BY)
    )


def history(path: str | Path, *dropped: str) -> pl.DataFrame:
    """The whole table but the load stamps (and ``dropped``), sorted by key and effective time."""
    table = pl.read_delta(str(path)).drop(*LOAD_STAMPS, *dropped)
    return table.sort("id", fc.VALID_FROM)


def load_runs(runs: Sequence[Sequence[Event]]) -> pl.DataFrame:
    """Write each run as one scd2 load into a new table; the table's history."""
    with tempfile.TemporaryDirectory() as folder:
        dest = make_destination(
            Path(folder), load_type="scd2", merge_keys=["id"], configure={"scd2_effective_column": "t"}
        )
        for load, run in enumerate(runs, start=1):
            WRITER.write(scd2_batch([(k, c, at(1, hour)) for k, c, hour in run], load=load), dest, marker=marker(load))
        return history(Path(folder) / "orders")


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(runs=in_order_runs())
def test_in_order_runs_give_the_history_of_one_run(runs: list[list[Event]]) -> None:
    stream = [event for run in runs for event in run]
    one_run = load_runs([stream])
    assert_frame_equal(one_run, model(stream))
    assert_frame_equal(load_runs(runs), one_run)


@settings(max_examples=40, deadline=None)
@given(runs=late_runs())
def test_late_versions_land_where_one_run_puts_them(runs: list[list[Event]]) -> None:
    stream = [event for run in runs for event in run]
    one_run = load_runs([stream])
    assert_frame_equal(one_run, model(stream))
    assert_frame_equal(load_runs(runs), one_run)


# Whole dataflow runs -------------------------------------------------------------------------------
# Files land in a folder; the watermark is an ingestion sequence (dropped before the write), so
# every row is read exactly once whatever its effective time; `changed_at` is the effective column.


def write_metadata(root: Path) -> Path:
    source = {"connection_name": "landing", "schema_name": "sales", "table": "orders", "watermark_columns": ["seq"]}
    destination = {
        "connection_name": "lake",
        "schema_name": "silver",
        "table": "orders",
        "load_type": "scd2",
        "merge_keys": ["id"],
        "configure": {"scd2_effective_column": "changed_at"},
    }
    document: dict[str, Any] = {
        "connections": [
            {"name": "landing", "format": "parquet", "configure": {"base_path": str(root / "landing")}},
            {"name": "lake", "format": "delta", "configure": {"base_path": str(root / "lake")}},
        ],
        "dataflows": [
            {
                "name": "orders",
                "stage": "bronze2silver",
                "source": source,
                "transform": {"drop_columns": ["seq"]},
                "destination": destination,
            }
        ],
    }
    path = root / "meta" / "metadata.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def land(root: Path, index: int, run: Sequence[Event]) -> None:
    """Run ``index``'s versions as file ``NNN.parquet``; ``seq`` grows across files (the watermark)."""
    folder = root / "landing" / "sales" / "orders"
    folder.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(
        {
            "id": [k for k, _, _ in run],
            "name": [c for _, c, _ in run],
            "changed_at": [at(1, hour) for _, _, hour in run],
            "seq": [index * 100 + i for i in range(len(run))],
        },
        schema_overrides={"changed_at": TS},
    ).write_parquet(folder / f"{index:03d}.parquet")


def lake_history(root: Path) -> pl.DataFrame:
    # the file's path and time differ between the two landing folders; its name does not
    return history(root / "lake" / "silver" / "orders", fc.FILE_PATH, fc.FILE_MODIFICATION_TIME)


def run_killed(metadata: Path, crash_at: str) -> None:
    crashed = subprocess.run(
        [sys.executable, "-c", CRASHING_RUN, str(metadata)],
        cwd=REPO, env=os.environ | {ENV_VAR: crash_at}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr


SAMPLE = [[(1, "a", 0)], [(1, "b", 1), (1, "c", 2), (1, "b", 1)], [(1, "d", 2), (2, "x", 0)]]
"""Run 2 chains two versions and re-delivers one; run 3 replaces version c at its own instant."""


@pytest.mark.slow
@settings(max_examples=4, deadline=None, phases=(Phase.explicit, Phase.reuse, Phase.generate))  # no slow shrinking
@given(runs=in_order_runs(), crash_at=st.sampled_from([BEFORE_COMMIT, AFTER_COMMIT]), pick=st.integers(0, 3))
@example(runs=SAMPLE, crash_at=BEFORE_COMMIT, pick=1)
@example(runs=SAMPLE, crash_at=AFTER_COMMIT, pick=1)
@example(runs=[[(1, "a", 0)], [(1, "a", 0)]], crash_at=BEFORE_COMMIT, pick=1)  # a run that changes nothing
def test_a_run_killed_and_rerun_gives_the_history_of_one_run(runs: list[list[Event]], crash_at: str, pick: int) -> None:
    killed = pick % len(runs)
    with tempfile.TemporaryDirectory() as one_folder, tempfile.TemporaryDirectory() as many_folder:
        one, many = Path(one_folder), Path(many_folder)
        # one run over every file
        for index, run in enumerate(runs):
            land(one, index, run)
        info, _, _ = execute(write_metadata(one))
        assert info.status == "succeeded", info.error_message
        stream = [event for run in runs for event in run]
        expected = model(stream, time_tracked=True).with_columns(pl.col(fc.VALID_FROM).alias("changed_at"))
        assert_frame_equal(lake_history(one).drop(fc.FILE_NAME), expected, check_column_order=False)
        # a run per file; one of them killed (before or after its commit), then run again
        metadata = write_metadata(many)
        for index, run in enumerate(runs):
            land(many, index, run)
            if index == killed:
                run_killed(metadata, crash_at)
            info, _, _ = execute(metadata)
            assert info.status in ("succeeded", "skipped"), info.error_message
        assert_frame_equal(lake_history(many), lake_history(one))


def lake(rows: Sequence[tuple[int, str, int, int | None, int]]) -> pl.DataFrame:
    """Expected lake rows: ``(id, name, from hour, to hour, index of the file that delivered it)``."""
    return pl.DataFrame(
        [(k, name, at(1, start), at(1, start), None if end is None else at(1, end)) for k, name, start, end, _ in rows],
        schema={"id": pl.Int64, "name": pl.String, "changed_at": TS, fc.VALID_FROM: TS, fc.VALID_TO: TS},
        orient="row",
    ).with_columns(
        pl.col(fc.VALID_TO).is_null().alias(fc.IS_CURRENT),
        pl.Series(fc.FILE_NAME, [f"{r[-1]:03d}.parquet" for r in rows]),
        pl.lit(fc.AUTHOR).alias(fc.UPDATED_BY),
    )


def test_files_landed_between_runs_all_reach_the_history(tmp_path: Path) -> None:
    metadata = write_metadata(tmp_path)
    # load 1 — initial
    land(tmp_path, 0, [(1, "a", 0), (2, "x", 3)])
    execute(metadata)
    assert_frame_equal(lake_history(tmp_path), lake([(1, "a", 0, None, 0), (2, "x", 3, None, 0)]))
    # load 2 — two versions of key 1 in two files landed since the last run (one delivered twice):
    # both are history (DataCoolie's default dedup kept only the latest)
    land(tmp_path, 1, [(1, "b", 1)])
    land(tmp_path, 2, [(1, "c", 2), (1, "b", 1)])
    execute(metadata)
    history = [(1, "a", 0, 1, 0), (1, "b", 1, 2, 1), (1, "c", 2, None, 2), (2, "x", 3, None, 0)]
    assert_frame_equal(lake_history(tmp_path), lake(history))
    # load 3 — a late version of key 2 (effective before its current one) takes its place in the past
    land(tmp_path, 3, [(2, "w", 1)])
    execute(metadata)
    history[3:] = [(2, "w", 1, 3, 3), (2, "x", 3, None, 0)]
    assert_frame_equal(lake_history(tmp_path), lake(history))
    # load 4 — nothing new: skipped, the history stays
    info, _, _ = execute(metadata)
    assert (info.status, info.skip_reason) == ("skipped", "no new source rows")
    assert_frame_equal(lake_history(tmp_path), lake(history))


def test_a_late_version_cannot_rechain_an_unchanged_redelivery_that_left_no_row() -> None:
    # the one case where runs matter (docs/scd2.md): "a" re-delivered unchanged at hour 3 left no
    # row, so a "b" at hour 2 arriving in a later run cannot know that "a" came back at hour 3
    one_run = load_runs([[(1, "a", 1), (1, "a", 3), (1, "b", 2)]])
    assert one_run.select("name", fc.VALID_FROM, fc.VALID_TO).rows() == [
        ("a", at(1, 1), at(1, 2)), ("b", at(1, 2), at(1, 3)), ("a", at(1, 3), None),
    ]  # fmt: skip
    two_runs = load_runs([[(1, "a", 1), (1, "a", 3)], [(1, "b", 2)]])
    assert two_runs.select("name", fc.VALID_FROM, fc.VALID_TO).rows() == [
        ("a", at(1, 1), at(1, 2)), ("b", at(1, 2), None),
    ]  # fmt: skip
