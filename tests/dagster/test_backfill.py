"""``datacoolie-dagster backfill``: only partitions neither done (current code version) nor live are
queued, ``max_partitions_per_run`` to a run, once even under concurrent invocations.

Runs go to a real SQLite instance with the QueuedRunCoordinator and no daemon, so queued runs stay
QUEUED (= live). The code location is the bundled example (``silver/sales/orders``: monthly partitions
from 2024-01, ``max_partitions_per_run: 3``), loaded in process.
"""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget

from datacoolie_dagster.backfill import (
    BackfillError,
    add_backfill_parser,
    contiguous_chunks,
    plan_backfill,
    run_backfill,
    select_partitions,
)

ORDERS = dg.AssetKey(["silver", "sales", "orders"])
QUEUED = {"run_coordinator": {"module": "dagster.core.run_coordinator", "class": "QueuedRunCoordinator"}}
MONTHS = dg.MonthlyPartitionsDefinition(start_date="2024-01", end_date="2024-07", fmt="%Y-%m")


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[dg.DagsterInstance]:
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "home"), overrides=QUEUED) as test_instance:
        yield test_instance


def workspace(instance: dg.DagsterInstance) -> WorkspaceProcessContext:
    origin = LoadableTargetOrigin(module_name="datacoolie_dagster.definitions", working_directory=os.getcwd())
    target = InProcessWorkspaceLoadTarget(InProcessCodeLocationOrigin(origin, location_name="example"))
    return WorkspaceProcessContext(instance, target)


def backfill(instance: dg.DagsterInstance, partitions: str, *, rerun: bool = False) -> list[tuple[str, ...]]:
    """One invocation; the partitions of each run it queued, in order."""
    with workspace(instance) as context:
        plan, _ = run_backfill(context, "silver/sales/orders", partitions, rerun=rerun)
    return [run.partition_keys for run in plan.runs]


def queued(instance: dg.DagsterInstance) -> list[tuple[str, str, str]]:
    """``(first, last, status)`` of every run on the instance, sorted; all must be tagged as ours."""
    rows = []
    for run in instance.get_runs():
        assert run.tags["datacoolie/automated"] == "true"
        assert run.tags["datacoolie/trigger"] == "backfill"
        assert run.asset_selection == {ORDERS}
        first = run.tags.get("dagster/partition") or run.tags["dagster/asset_partition_range_start"]
        last = run.tags.get("dagster/partition") or run.tags["dagster/asset_partition_range_end"]
        rows.append((first, last, run.status.value))
    return sorted(rows)


def code_version(instance: dg.DagsterInstance) -> str:
    with workspace(instance) as context:
        version = context.create_request_context().asset_graph.get(ORDERS).code_version
    assert version
    return version


def report_materialized(instance: dg.DagsterInstance, partitions: list[str], version: str) -> None:
    for partition in partitions:
        tags = {"dagster/code_version": version}
        instance.report_runless_asset_event(dg.AssetMaterialization(ORDERS, partition=partition, tags=tags))


def finish_all(instance: dg.DagsterInstance) -> None:
    """Every queued run fails (a worker that died before writing anything)."""
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.QUEUED])):
        instance.report_run_failed(run)


def test_range_is_queued_in_policy_sized_contiguous_runs(instance: dg.DagsterInstance) -> None:
    assert backfill(instance, "2024-01..2024-07") == [
        ("2024-01", "2024-02", "2024-03"),
        ("2024-04", "2024-05", "2024-06"),
        ("2024-07",),
    ]
    assert queued(instance) == [
        ("2024-01", "2024-03", "QUEUED"),
        ("2024-04", "2024-06", "QUEUED"),
        ("2024-07", "2024-07", "QUEUED"),
    ]


def test_partitions_queued_or_running_are_not_queued_again(instance: dg.DagsterInstance) -> None:
    # invocation 1 — the whole range
    backfill(instance, "2024-01..2024-04")
    # invocation 2 — same range: everything is live
    assert backfill(instance, "2024-01..2024-04") == []
    # invocation 3 — a wider range: only the new months
    assert backfill(instance, "2024-02..2024-05") == [("2024-05",)]
    assert len(instance.get_runs()) == 3


def test_after_a_partial_failure_only_failed_and_missing_are_queued(instance: dg.DagsterInstance) -> None:
    version = code_version(instance)
    # backfill 1 — all runs end: 2024-01..03 were written, 2024-04..06 failed
    backfill(instance, "2024-01..2024-06")
    finish_all(instance)
    report_materialized(instance, ["2024-01", "2024-02", "2024-03"], version)
    # backfill 2 — only the failed ones
    assert backfill(instance, "2024-01..2024-06") == [("2024-04", "2024-05", "2024-06")]
    # backfill 3 — 2024-05 failed again: runs never span a done partition
    finish_all(instance)
    report_materialized(instance, ["2024-04", "2024-06"], version)
    assert backfill(instance, "2024-01..2024-08") == [("2024-05",), ("2024-07", "2024-08")]


def test_rerun_queues_done_partitions_but_never_live_ones(instance: dg.DagsterInstance) -> None:
    report_materialized(instance, ["2024-01", "2024-02", "2024-03"], code_version(instance))
    assert backfill(instance, "2024-04..2024-05") == [("2024-04", "2024-05")]  # now live
    assert backfill(instance, "2024-01..2024-06") == [("2024-06",)]
    assert backfill(instance, "2024-01..2024-06", rerun=True) == [("2024-01", "2024-02", "2024-03")]


def test_a_partition_written_by_old_code_is_queued_again(instance: dg.DagsterInstance) -> None:
    report_materialized(instance, ["2024-01", "2024-03"], code_version(instance))
    report_materialized(instance, ["2024-02"], "0ld")
    # the latest materialization decides: 2024-03 rewritten by old code is stale again
    report_materialized(instance, ["2024-03"], "0ld")
    assert backfill(instance, "2024-01..2024-03") == [("2024-02", "2024-03")]


def test_two_concurrent_invocations_queue_each_partition_once(instance: dg.DagsterInstance) -> None:
    results: list[list[tuple[str, ...]]] = []
    threads = [
        threading.Thread(target=lambda: results.append(backfill(instance, "2024-01..2024-09"))) for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    queued_partitions = sorted(p for result in results for run in result for p in run)
    assert queued_partitions == [f"2024-{m:02d}" for m in range(1, 10)]
    assert sorted(len(result) for result in results) == [0, 3]
    assert [status for *_, status in queued(instance)] == ["QUEUED"] * 3


def test_a_stage_targets_its_partitioned_assets(instance: dg.DagsterInstance) -> None:
    with workspace(instance) as context:
        plan, _ = run_backfill(context, "bronze2silver", "@all")
    assert {run.asset_key for run in plan.runs} == {ORDERS}
    assert plan.runs[0].partition_keys[:3] == ("2024-01", "2024-02", "2024-03")
    assert all(len(run.partition_keys) <= 3 for run in plan.runs)


@pytest.mark.parametrize(
    ("target", "partitions", "message"),
    [
        ("silver/sales/order", "2024-01", "did you mean 'silver/sales/orders'"),
        ("bronze/sales/orders", "2024-01", "not partitioned"),
        ("silver/sales/orders", "2023-12..2024-02", "no partition '2023-12'"),
        ("silver/sales/orders", "2024-03..2024-01", "reversed"),
    ],
    ids=["unknown-asset", "unpartitioned", "before-first", "reversed"],
)
def test_bad_targets_and_partitions_are_errors(
    instance: dg.DagsterInstance, target: str, partitions: str, message: str
) -> None:
    with workspace(instance) as context, pytest.raises(BackfillError, match=message):
        plan_backfill(instance, context.create_request_context().asset_graph, target, partitions)
    assert instance.get_runs() == []


@pytest.mark.parametrize(
    ("todo", "size", "expected"),
    [
        ("abcdef", 3, ["abc", "def"]),
        ("abcdefg", 3, ["abc", "def", "g"]),
        ("abdeg", 3, ["ab", "de", "g"]),
        ("abcdefg", None, ["abcdefg"]),
        ("", 2, []),
    ],
    ids=["exact", "remainder", "gaps-split", "single-run", "nothing"],
)
def test_contiguous_chunks(todo: str, size: int | None, expected: list[str]) -> None:
    chunks = contiguous_chunks(list("abcdefg"), list(todo), size)
    assert ["".join(chunk) for chunk in chunks] == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("@all", ["2024-01", "2024-02", "2024-03", "2024-04", "2024-05", "2024-06"]),
        ("2024-02..2024-04", ["2024-02", "2024-03", "2024-04"]),
        ("2024-05", ["2024-05"]),
        ("2024-05..2024-05", ["2024-05"]),
    ],
    ids=["all", "range-inclusive", "single", "range-of-one"],
)
def test_select_partitions(instance: dg.DagsterInstance, spec: str, expected: list[str]) -> None:
    assert select_partitions(MONTHS, spec, asset=ORDERS, instance=instance) == expected


def test_cli_queues_through_the_instance_in_dagster_home(tmp_path: Path) -> None:
    home = tmp_path / "cli_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("run_coordinator:\n  module: dagster.core.run_coordinator\n"
                                       "  class: QueuedRunCoordinator\n", encoding="utf-8")  # fmt: skip
    parser = argparse.ArgumentParser()
    add_backfill_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        ["backfill", "silver/sales/orders", "2024-01..2024-04", "-m", "datacoolie_dagster.definitions",
         "--instance", str(home)]
    )  # fmt: skip
    assert args.handler(args) == 0
    assert args.handler(args) == 0  # nothing left: everything is queued
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert queued(instance) == [("2024-01", "2024-03", "QUEUED"), ("2024-04", "2024-04", "QUEUED")]
