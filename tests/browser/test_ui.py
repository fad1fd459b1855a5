"""The bundled example through the Dagster UI in a real Chromium, checked against the instance and Delta.

From a fresh clone's state (a new ``DAGSTER_HOME``, nothing landed, no table), a user opens Lineage and finds every example
table, materializes ``bronze/sales/orders`` from its asset page, and backfills two partitions of
``silver/sales/orders`` through the partition dialog. Then the instance's event log must hold exactly
those materializations, and the row counts they claim must be what the Delta history says was
written. Screenshots of every step: ``tests/browser/artifacts/<test>/`` (or ``$BROWSER_ARTIFACTS``).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest
from deltalake import DeltaTable
from selenium.webdriver.remote.webdriver import WebDriver

from datacoolie_dagster import constants
from datacoolie_dagster.example import METADATA_PATH
from tests.browser import pages
from tests.browser.ui_support import (
    ARTIFACTS,
    LOCATION_QUERY,
    DagsterDev,
    Shots,
    chromium,
    chromium_binary,
    dagster_dev,
    wait_until,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

UNPARTITIONED = "bronze/sales/orders"
PARTITIONED = "silver/sales/orders"
PARTITIONS = ("2024-02", "2024-03")
PARTITION_COLUMN = "order_month"
RUN_TIMEOUT = 240  # a run or backfill on a loaded 2-core machine
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
BACKFILL_LIVE = {"REQUESTED", "CANCELING", "FAILING"}
SHOWN = (constants.ROWS_INSERTED, constants.ROWS_UPDATED, "dagster/row_count")  # read off the Partitions tab
LANDING_JOB, STAGE_JOB = "datacoolie_landing2bronze", "datacoolie_bronze2silver"
MONTHS = tuple(f"2024-0{m}" for m in range(1, 7))  # batch 1's orders were created January to June 2024
LAUNCH_RUN = """
mutation($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}
"""


def example_tables() -> dict[str, set[str]]:
    """``{stage (the asset group): {destination key}}`` of the bundled example's metadata."""
    document = json.loads(METADATA_PATH.read_text())
    tables: dict[str, set[str]] = {}
    for flow in document["dataflows"]:
        destination = flow["destination"]
        parts = [destination["connection_name"], destination.get("schema_name"), destination["table"]]
        tables.setdefault(flow["stage"], set()).add("/".join(p for p in parts if p))
    return tables


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[DagsterDev]:
    chromium_binary()  # skip (or fail under CI) before starting anything
    with dagster_dev(tmp_path) as dev:
        yield dev


def test_user_materializes_and_backfills_the_example_in_the_ui(
    deployment: DagsterDev, request: pytest.FixtureRequest
) -> None:
    dev = deployment
    every_table = set().union(*example_tables().values())
    assert _materializations(dev, every_table) == {key: [] for key in every_table}, "not a fresh instance"
    assert not dev.data.exists(), "a fresh clone: nothing landed, no table"  # the first run lands batch 1
    with chromium() as driver:
        shots = Shots(driver, ARTIFACTS / request.node.name)
        try:
            try:
                run_prefix, backfill_id, shown = _drive(dev, driver, shots)
            except BaseException:
                shots.take("failure")
                raise
            events = _materializations(dev, every_table)
            assert {k: len(v) for k, v in events.items()} == {k: _expected_count(k) for k in every_table}
            _check_unpartitioned(dev, events[UNPARTITIONED], run_prefix)
            truth = _check_partitions(dev, events[PARTITIONED], backfill_id)
            # and the UI shows the true counts: what a user reads on the Partitions tab
            assert shown == {key: {k: str(truth[key][k]) for k in SHOWN} for key in PARTITIONS}
            _stage_job_marks_the_partitions_it_wrote(dev, driver, shots)
            (shots.folder / "wall-time.txt").write_text(f"{time.monotonic() - dev.started:.1f} s\n")
        finally:
            shutil.copyfile(dev.log, shots.folder / "dagster-dev.log")


def _stage_job_marks_the_partitions_it_wrote(dev: DagsterDev, driver: WebDriver, shots: Shots) -> None:
    """The incremental stage job loads all of bronze into silver: exactly the six months its rows fall in
    are marked, in the instance and on the Partitions tab (launched as the Launchpad does, by GraphQL;
    first ``landing2bronze``, which loads the customer snapshot ``bronze2silver`` also reads)."""
    _launch_and_wait(dev, LANDING_JOB)
    run_id = _launch_and_wait(dev, STAGE_JOB)
    with dg.DagsterInstance.from_config(str(dev.home)) as instance:
        key = dg.AssetKey.from_user_string(PARTITIONED)
        assert instance.get_materialized_partitions(key) == set(MONTHS)
        written = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), limit=100).records
        by_job = sorted(str(r.partition_key) for r in written if r.run_id == run_id)
    months = pl.read_delta(str(dev.data / PARTITIONED))[PARTITION_COLUMN].unique().sort().to_list()
    assert by_job == months == list(MONTHS)  # one per month its rows went to, nothing else
    pages.open_partitions(driver, PARTITIONED, len(MONTHS))
    shots.take("partitions after the stage job")


def _launch_and_wait(dev: DagsterDev, job: str) -> str:
    """Launch ``job`` with its default config (the daemon dequeues it); its run id, once it succeeded."""
    (location,) = [e["name"] for e in dev.graphql(LOCATION_QUERY)["workspaceOrError"]["locationEntries"]]
    selector = {"repositoryLocationName": location, "repositoryName": "__repository__", "jobName": job}
    launched = dev.graphql(LAUNCH_RUN, {"params": {"selector": selector, "runConfigData": {}}})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id: str = launched["run"]["runId"]
    status = wait_until(lambda: _run_finished(dev, run_id), RUN_TIMEOUT, f"{job} run {run_id} to finish")
    assert status == dg.DagsterRunStatus.SUCCESS, dev.log_tail()
    return run_id


def _expected_count(key: str) -> int:
    return {UNPARTITIONED: 1, PARTITIONED: len(PARTITIONS)}.get(key, 0)


def _drive(dev: DagsterDev, driver: WebDriver, shots: Shots) -> tuple[str, str, dict[str, dict[str, str]]]:
    """The clicks; the run id prefix and backfill id the UI announced, and the partitions' counts it shows."""
    driver.get(dev.url)
    if dev.graphql("{ shouldShowNux }")["shouldShowNux"]:
        shots.take("community dialog")
        pages.skip_community_dialog(driver)
    found = pages.lineage_tables(driver)
    shots.take("lineage")
    assert {g: keys for g, keys in found.items() if g != constants.SOURCES_GROUP} == example_tables()

    run_prefix = pages.materialize_unpartitioned(driver, UNPARTITIONED)
    shots.take("materialize launched")
    status = wait_until(lambda: _run_finished(dev, run_prefix), RUN_TIMEOUT, f"run {run_prefix} to finish")
    assert status == dg.DagsterRunStatus.SUCCESS, dev.log_tail()
    pages.wait_materialized(driver)
    shots.take("materialized")

    backfill_id = pages.backfill_range(driver, PARTITIONED, PARTITIONS[0], PARTITIONS[-1], len(PARTITIONS))
    shots.take("backfill launched")
    status = wait_until(
        lambda: (s := dev.backfill_status(backfill_id)) not in BACKFILL_LIVE and s,
        RUN_TIMEOUT,
        f"backfill {backfill_id} to finish",
    )
    assert status == "COMPLETED_SUCCESS", dev.log_tail()
    pages.open_partitions(driver, PARTITIONED, len(PARTITIONS))
    shots.take("partitions materialized")
    shown = {}
    for key in PARTITIONS:
        shown[key] = pages.partition_metadata(driver, key, SHOWN)
        shots.take(f"partition {key}")
    return run_prefix, backfill_id, shown


def _run_finished(dev: DagsterDev, prefix: str) -> dg.DagsterRunStatus | None:
    with dg.DagsterInstance.from_config(str(dev.home)) as instance:
        runs = [r for r in instance.get_runs() if r.run_id.startswith(prefix)]
    assert len(runs) <= 1, f"run id prefix {prefix} is ambiguous"
    return runs[0].status if runs and runs[0].status in FINISHED else None


def _materializations(dev: DagsterDev, keys: set[str]) -> dict[str, list[dg.EventLogRecord]]:
    with dg.DagsterInstance.from_config(str(dev.home)) as instance:
        return {
            key: list(instance.fetch_materializations(dg.AssetKey.from_user_string(key), limit=100).records)
            for key in keys
        }


def _check_unpartitioned(dev: DagsterDev, records: list[dg.EventLogRecord], run_prefix: str) -> None:
    (record,) = records
    assert record.run_id.startswith(run_prefix)
    table = DeltaTable(str(dev.data / UNPARTITIONED))
    (commit,) = _commits(table)
    claimed = _claims(record)
    truth = {
        constants.ROWS_INSERTED: _inserted(commit),
        constants.ROWS_UPDATED: _updated(commit),
        constants.DELTA_VERSION: commit["version"],
        "dagster/row_count": pl.read_delta(str(dev.data / UNPARTITIONED)).height,
        "partition": None,
    }
    assert claimed == truth


def _check_partitions(dev: DagsterDev, records: list[dg.EventLogRecord], backfill_id: str) -> dict[str, dict[str, Any]]:
    """Each partition's claims against the Delta commit it wrote (one per partition, in key order); the truth."""
    path = str(dev.data / PARTITIONED)
    with dg.DagsterInstance.from_config(str(dev.home)) as instance:
        for record in records:
            run = instance.get_run_by_id(record.run_id)
            assert run is not None
            assert run.tags.get("dagster/backfill") == backfill_id
    by_partition = {str(r.partition_key): r for r in records}
    assert sorted(by_partition) == list(PARTITIONS)
    commits = _commits(DeltaTable(path))
    assert len(commits) == len(PARTITIONS), [c["operation"] for c in commits]
    rows = pl.read_delta(path).group_by(PARTITION_COLUMN).len()
    in_table = dict(zip(rows[PARTITION_COLUMN].to_list(), rows["len"].to_list(), strict=True))
    claimed = {key: _claims(by_partition[key]) for key in PARTITIONS}
    truth = {
        key: {
            constants.ROWS_INSERTED: _inserted(commit),
            constants.ROWS_UPDATED: _updated(commit),
            constants.DELTA_VERSION: commit["version"],
            # the rows the partition holds after its commit, not the whole table's
            "dagster/row_count": pl.read_delta(path, version=commit["version"])
            .filter(pl.col(PARTITION_COLUMN) == key)
            .height,
            "partition": key,
        }
        for key, commit in zip(PARTITIONS, commits, strict=True)
    }
    assert claimed == truth
    # a fresh table: what each partition inserted is what the table holds in that partition
    assert {key: claimed[key][constants.ROWS_INSERTED] for key in PARTITIONS} == {k: in_table[k] for k in PARTITIONS}
    return truth


def _claims(record: dg.EventLogRecord) -> dict[str, Any]:
    """What a materialization says it wrote (a missing key shows as ``None`` in the diff)."""
    event = record.asset_materialization
    assert event is not None
    keys = (constants.ROWS_INSERTED, constants.ROWS_UPDATED, constants.DELTA_VERSION, "dagster/row_count")
    claims: dict[str, Any] = {k: event.metadata[k].value if k in event.metadata else None for k in keys}
    return claims | {"partition": event.partition}


def _commits(table: DeltaTable) -> list[dict[str, Any]]:
    """The data-writing commits, oldest first."""
    history = sorted(table.history(), key=lambda h: int(h["version"]))
    return [h for h in history if h["operation"] in {"WRITE", "MERGE", "DELETE", "UPDATE"}]


def _inserted(commit: dict[str, Any]) -> int:
    metrics = commit.get("operationMetrics") or {}
    return int(metrics.get("num_target_rows_inserted", metrics.get("num_added_rows", 0)))


def _updated(commit: dict[str, Any]) -> int:
    return int((commit.get("operationMetrics") or {}).get("num_target_rows_updated", 0))
