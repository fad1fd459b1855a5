"""``datacoolie-dagster backfill``: only partitions neither done (current code version) nor live are
queued, ``max_partitions_per_run`` to a run, once even under concurrent invocations.

Every instance-level test runs on a real instance built from the repository's ``dagster.yaml``
(SQLite) and ``dagster.postgres.yaml`` (a private PostgreSQL server): their run coordinator is the
queue and no daemon runs, so queued runs stay QUEUED (= live). The code location is the bundled
example (``silver/sales/orders``: monthly partitions from 2024-01, ``max_partitions_per_run: 3``),
loaded in process.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import TypeVar

import dagster as dg
import psycopg2
import pytest
from dagster._core.definitions.assets.graph.asset_graph_subset import AssetGraphSubset
from dagster._core.definitions.assets.graph.remote_asset_graph import RemoteWorkspaceAssetGraph
from dagster._core.definitions.events import AssetKeyPartitionKey
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.utils import make_new_backfill_id
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget

from datacoolie_dagster.commands.backfill import (
    ADVISORY_LOCK_KEY,
    BackfillError,
    add_backfill_parser,
    contiguous_chunks,
    plan_backfill,
    run_backfill,
    select_partitions,
)
from tests.dagster.conftest import REPOSITORY, InstanceSettings
from tests.dagster.daemon_support import wait_until

ORDERS = dg.AssetKey(["silver", "sales", "orders"])
T = TypeVar("T")
MONTHS = dg.MonthlyPartitionsDefinition(start_date="2024-01", end_date="2024-07", fmt="%Y-%m")


@pytest.fixture
def settings(instance_settings: InstanceSettings, monkeypatch: pytest.MonkeyPatch) -> InstanceSettings:
    """``instance_settings`` (sqlite | postgres) with its ``DATACOOLIE_PG_*`` variables set."""
    for name, value in instance_settings.env.items():
        monkeypatch.setenv(name, value)
    return instance_settings


@pytest.fixture
def instance(tmp_path: Path, settings: InstanceSettings) -> Iterator[dg.DagsterInstance]:
    with open_instance(tmp_path / "home", settings.config) as opened:
        yield opened


def open_instance(home: Path, config: Path) -> dg.DagsterInstance:
    """The instance of a fresh ``$DAGSTER_HOME`` holding ``config`` as its ``dagster.yaml``."""
    home.mkdir()
    shutil.copyfile(config, home / "dagster.yaml")
    return dg.DagsterInstance.from_config(str(home))


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


def asset_graph(instance: dg.DagsterInstance) -> RemoteWorkspaceAssetGraph:
    with workspace(instance) as context:
        return context.create_request_context().asset_graph


def code_version(instance: dg.DagsterInstance) -> str:
    version = asset_graph(instance).get(ORDERS).code_version
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


def concurrently(*calls: Callable[[], T]) -> list[T]:
    """Run ``calls`` in threads at once; their results (re-raising their errors)."""
    with ThreadPoolExecutor(len(calls)) as pool:
        futures = [pool.submit(call) for call in calls]
        return [future.result(timeout=60) for future in futures]


def waiting_for_lock(connection: psycopg2.extensions.connection) -> int:
    """Sessions waiting for an advisory lock in ``connection``'s database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        row = cursor.fetchone()
    assert row is not None
    return int(row[0])


def request_asset_backfill(instance: dg.DagsterInstance, partitions: list[str]) -> PartitionBackfill:
    """What the UI's "Materialize selected" over ``partitions`` stores: a REQUESTED asset backfill, no runs."""
    requested = PartitionBackfill.from_asset_partitions(
        backfill_id=make_new_backfill_id(), asset_graph=asset_graph(instance), partition_names=partitions,
        asset_selection=[ORDERS], backfill_timestamp=time.time(), tags={}, dynamic_partitions_store=instance,
        all_partitions=False, title=None, description=None, run_config=None,
    )  # fmt: skip
    instance.add_backfill(requested)
    return requested


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
    version = code_version(instance)
    # round 1 — two invocations at once over the same range
    rounds = concurrently(
        lambda: backfill(instance, "2024-01..2024-09"), lambda: backfill(instance, "2024-01..2024-09")
    )
    assert sorted(p for runs in rounds for run in runs for p in run) == [f"2024-{m:02d}" for m in range(1, 10)]
    assert sorted(len(runs) for runs in rounds) == [0, 3]
    # the runs end: 2024-01..03 and 2024-07..09 were written, 2024-04..06 failed
    finish_all(instance)
    report_materialized(instance, ["2024-01", "2024-02", "2024-03", "2024-07", "2024-08", "2024-09"], version)
    # round 2 — two at once again: only the failed ones, once
    rounds = concurrently(
        lambda: backfill(instance, "2024-01..2024-09"), lambda: backfill(instance, "2024-01..2024-09")
    )
    assert sorted(rounds) == [[], [("2024-04", "2024-05", "2024-06")]]
    assert queued(instance) == [
        ("2024-01", "2024-03", "FAILURE"),
        ("2024-04", "2024-06", "FAILURE"),
        ("2024-04", "2024-06", "QUEUED"),
        ("2024-07", "2024-09", "FAILURE"),
    ]


def test_two_homes_on_one_postgres_database_share_the_lock(
    tmp_path: Path, postgres_database: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two CI runners: different ``$DAGSTER_HOME`` (so different flock files), one PostgreSQL database."""
    for name, value in postgres_database.items():
        monkeypatch.setenv(name, value)
    config = REPOSITORY / "dagster.postgres.yaml"
    dsn = InstanceSettings("postgres", config, postgres_database).dsn()
    with (
        open_instance(tmp_path / "home_a", config) as a,
        open_instance(tmp_path / "home_b", config) as b,
        ThreadPoolExecutor(2) as pool,
    ):
        # a third session holds the lock, so both invocations are under way before either may plan;
        # closing it releases the lock, also when the test fails, so the threads always end
        with closing(psycopg2.connect(dsn)) as holder:
            holder.autocommit = True
            holder.cursor().execute("SELECT pg_advisory_lock(%s)", (ADVISORY_LOCK_KEY,))
            futures = [pool.submit(backfill, i, "2024-01..2024-09") for i in (a, b)]
            wait_until(lambda: waiting_for_lock(holder) == 2 or all(f.done() for f in futures), 60, "2 waiters")
            queued_while_held = len(a.get_runs())
        rounds = [f.result(timeout=60) for f in futures]
        assert sorted(p for runs in rounds for run in runs for p in run) == [f"2024-{m:02d}" for m in range(1, 10)]
        assert sorted(len(runs) for runs in rounds) == [0, 3]
        assert len(b.get_runs()) == 3
        assert queued_while_held == 0  # they did wait for the lock in the database


def test_partitions_of_a_requested_asset_backfill_are_live(instance: dg.DagsterInstance) -> None:
    requested = request_asset_backfill(instance, ["2024-02", "2024-03", "2024-04"])
    assert backfill(instance, "2024-01..2024-06") == [("2024-01",), ("2024-05", "2024-06")]
    assert backfill(instance, "2024-01..2024-06", rerun=True) == []  # --rerun never queues live ones
    # the backfill is canceled before it launched anything: its partitions are missing again
    instance.update_backfill(requested.with_status(BulkActionStatus.CANCELED))
    assert backfill(instance, "2024-01..2024-06") == [("2024-02", "2024-03", "2024-04")]


def test_an_asset_backfill_no_longer_holds_what_it_wrote_or_failed(instance: dg.DagsterInstance) -> None:
    graph = asset_graph(instance)
    requested = request_asset_backfill(instance, ["2024-02", "2024-03", "2024-04"])
    # the backfill daemon's bookkeeping after its 2024-02 run succeeded and its 2024-03 run failed
    report_materialized(instance, ["2024-02"], code_version(instance))
    data = requested.asset_backfill_data
    assert data is not None
    progressed = data._replace(
        materialized_subset=AssetGraphSubset.from_asset_partition_set({AssetKeyPartitionKey(ORDERS, "2024-02")}, graph),
        failed_and_downstream_subset=AssetGraphSubset.from_asset_partition_set(
            {AssetKeyPartitionKey(ORDERS, "2024-03")}, graph
        ),
    )
    instance.update_backfill(requested.with_asset_backfill_data(progressed, instance, graph))
    # 2024-02 is done, 2024-03 failed and is queued, 2024-04 is still the backfill's
    assert backfill(instance, "2024-01..2024-05") == [("2024-01",), ("2024-03",), ("2024-05",)]


@pytest.mark.slow
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
def test_select_partitions(spec: str, expected: list[str]) -> None:
    with dg.DagsterInstance.ephemeral() as ephemeral:  # only a (never used) dynamic-partitions store
        assert select_partitions(MONTHS, spec, asset=ORDERS, instance=ephemeral) == expected


@pytest.mark.slow
def test_cli_queues_through_the_instance_in_dagster_home(tmp_path: Path, settings: InstanceSettings) -> None:
    home = tmp_path / "cli_home"
    open_instance(home, settings.config).dispose()
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
