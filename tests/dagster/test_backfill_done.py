"""``datacoolie-dagster backfill`` after its runs succeeded: the second invocation queues nothing.

Everything is real: the bundled example (landed by its generator in a temporary working directory),
a SQLite instance from the repository's ``dagster.yaml``, the command itself, and the queued runs
executed by the instance (``instance.launch_run``, what the queue's daemon does) with Dagster's
in-process launcher, so the materializations the second invocation reads are the ones our partition
runs wrote.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from datacoolie_dagster.commands.backfill import BackfillPlan, add_backfill_parser, partition_spans
from datacoolie_dagster.definitions import defs
from datacoolie_dagster.example.generate import land_batch
from tests.dagster.conftest import REPOSITORY, materialize
from tests.dagster.test_backfill import workspace

ORDERS = dg.AssetKey(["silver", "sales", "orders"])
SIX_MONTHS = [f"2024-{m:02d}" for m in range(1, 7)]
IN_PROCESS_LAUNCHER = """
run_launcher:
  module: dagster._core.launcher.sync_in_memory_run_launcher
  class: SyncInMemoryRunLauncher
"""
"""Runs execute in the test process when launched (a test-only launcher shipped with Dagster)."""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$DAGSTER_HOME`` with the repository's settings; the example's first batch landed in ``./data``."""
    monkeypatch.chdir(tmp_path)  # the example's paths (./data/...) and the code location's working directory
    land_batch(tmp_path / "data", 1)
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((REPOSITORY / "dagster.yaml").read_text() + IN_PROCESS_LAUNCHER)
    return home


@pytest.fixture
def instance(home: Path) -> Iterator[dg.DagsterInstance]:
    with dg.DagsterInstance.from_config(str(home)) as opened:
        yield opened


def backfill(home: Path, capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    """``datacoolie-dagster backfill ARGS`` on the example; its output lines."""
    parser = argparse.ArgumentParser()
    add_backfill_parser(parser.add_subparsers(dest="command"))
    parsed = parser.parse_args(["backfill", *args, "-m", "datacoolie_dagster.definitions", "--instance", str(home)])
    capsys.readouterr()
    assert parsed.handler(parsed) == 0
    return capsys.readouterr().out.splitlines()


def work_off_the_queue(instance: dg.DagsterInstance) -> list[dg.DagsterRunStatus]:
    """Launch every queued run, oldest first, as the run queue's daemon does; their final statuses."""
    queued = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.QUEUED]))
    with workspace(instance) as context:
        request = context.create_request_context()
        for run in reversed(queued):
            instance.launch_run(run.run_id, request)
    return [run.status for run in instance.get_runs(filters=dg.RunsFilter(run_ids=[r.run_id for r in queued]))]


@pytest.mark.slow
def test_a_second_backfill_after_every_run_succeeded_queues_nothing(
    home: Path, instance: dg.DagsterInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    # the partitions' upstream (the example's paths are relative: they resolve in the working directory)
    assert materialize(defs, instance, ["bronze/sales/orders"]).success

    # backfill 1 — six months, max_partitions_per_run 3: two runs, and they succeed
    first = backfill(home, capsys, "silver/sales/orders", "2024-01..2024-06")
    assert [line.split()[2:] for line in first if line.startswith("queued ")] == [
        ["silver/sales/orders", "2024-01,2024-02,2024-03"],
        ["silver/sales/orders", "2024-04,2024-05,2024-06"],
    ]
    assert work_off_the_queue(instance) == [dg.DagsterRunStatus.SUCCESS] * 2
    # the references: the instance holds the six partitions, the Delta table the rows of those months
    assert instance.get_materialized_partitions(ORDERS) == set(SIX_MONTHS)
    silver = pl.read_delta(os.path.abspath("data/silver/sales/orders"))
    assert sorted(silver["order_month"].unique().to_list()) == SIX_MONTHS

    # backfill 2 — the same range: all six are done
    second = backfill(home, capsys, "silver/sales/orders", "2024-01..2024-06")
    assert second == [
        "skipped: 6 done silver/sales/orders: 2024-01..2024-06 "
        "(materialized by the current code version; --rerun queues them again)",
        "queued nothing: every partition named is done or live",
    ]
    assert len(instance.get_runs()) == 2 + 1  # the two backfill runs and the bronze run

    # backfill 3 — every partition of the stage: the six are skipped, the months after them queued
    third = backfill(home, capsys, "bronze2silver", "@all")
    queued = [line.split()[3] for line in third if line.startswith("queued ")]
    assert queued[0] == "2024-07,2024-08,2024-09"
    assert not set(SIX_MONTHS) & {p for run in queued for p in run.split(",")}
    assert (
        "skipped: 6 done silver/sales/orders: 2024-01..2024-06 "
        "(materialized by the current code version; --rerun queues them again)"
    ) in third


@pytest.mark.parametrize(
    ("keys", "expected"),
    [("abc", "a..c"), ("abdf", "a..b,d,f"), ("c", "c"), ("", "")],
    ids=["one-run", "gaps", "single", "none"],
)
def test_partition_spans(keys: str, expected: str) -> None:
    assert partition_spans(list("abcdef"), list(keys)) == expected


def test_skipped_lines_name_done_and_live_partitions_apart() -> None:
    every = tuple(f"2024-{m:02d}" for m in range(1, 7))
    plan = BackfillPlan(
        runs=(),
        done={ORDERS: ("2024-01", "2024-02", "2024-04")},
        live={ORDERS: ("2024-04", "2024-05")},
        selected={ORDERS: every},
    )
    assert plan.skipped_lines(rerun=False) == [
        "skipped: 2 done silver/sales/orders: 2024-01..2024-02 "
        "(materialized by the current code version; --rerun queues them again)",
        "skipped: 2 live silver/sales/orders: 2024-04..2024-05 "
        "(a run or asset backfill that has not finished targets them)",
    ]
    assert plan.skipped_lines(rerun=True) == [
        "skipped: 2 live silver/sales/orders: 2024-04..2024-05 "
        "(a run or asset backfill that has not finished targets them)",
    ]
