"""A new user's path through the README, in its order, in a real Chromium, judged by the Delta tables.

In a clone (the repository's ``make.sh``, ``dagster.yaml``, ``workspace.yaml`` and package):

1. ``./make.sh example`` — the Quickstart, before any Dagster instance exists;
2. ``./make.sh ui`` — the instance is created and the existing tables adopted;
3. the UI: every table shows its current Delta version, rows and columns (not "Never
   materialized"), the partitions of ``silver/sales/orders`` that hold rows show their own row
   counts, and nothing reads "Unsynced";
4. *Materialize* with no new source file: the run says it wrote nothing and the table keeps its state;
5. a backfill of 2024-02..2024-03: each partition shows its own inserted / updated / row counts;
6. ``./make.sh example`` again, now recorded in the UI's instance: each partition its commits touched
   shows that partition's share of them.

Every number read off the screen is compared with the Delta log and the table's rows (read with
deltalake and polars here), never with what we recorded. Screenshots of every step:
``tests/browser/artifacts/<test>/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest
from deltalake import DeltaTable
from selenium.webdriver.remote.webdriver import WebDriver

from datacoolie_dagster import constants
from tests.browser import pages
from tests.browser.test_ui import BACKFILL_LIVE, RUN_TIMEOUT, _run_finished, example_tables
from tests.browser.ui_support import ARTIFACTS, DagsterDev, Shots, chromium, chromium_binary, make_ui, wait_until
from tests.dagster.cli_support import BIN, REPOSITORY

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BRONZE, SILVER = "bronze/sales/orders", "silver/sales/orders"
MONTH = "order_month"  # silver orders' partition column, the month of created_at
BACKFILLED = ("2024-02", "2024-03")
SHOWN = (constants.ROWS_INSERTED, constants.ROWS_UPDATED, "dagster/row_count")
STALE_QUERY = """
query($path: [String!]!, $partitions: [String!]!) {
  assetNodeOrError(assetKey: {path: $path}) {
    ... on AssetNode { staleStatus staleStatusByPartition(partitions: $partitions) }
  }
}
"""


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """What a clone holds for the README's two commands: ``make.sh``, the instance and workspace files,
    the package (linked: the tests' own code)."""
    root = tmp_path / "clone"
    root.mkdir()
    for name in ("make.sh", "dagster.yaml", "workspace.yaml"):
        shutil.copy2(REPOSITORY / name, root / name)
    (root / "datacoolie_dagster").symlink_to(REPOSITORY / "datacoolie_dagster")
    return root


@pytest.fixture
def readme_env() -> dict[str, str]:
    """A user's shell: no Dagster or DataCoolie variable; ``VENV`` points ``make.sh`` at the installed venv."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DATACOOLIE_", "DAGSTER_"))}
    return base | {"VENV": str(BIN.parent)}


def make(root: Path, command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["./make.sh", command], cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def test_readme_order_example_then_the_ui(
    clone: Path, readme_env: dict[str, str], request: pytest.FixtureRequest
) -> None:
    chromium_binary()  # skip (or fail under CI) before running anything
    example = make(clone, "example", readme_env)
    assert "recording the runs" not in example.stdout
    assert not (clone / ".dagster").exists()
    every_table = sorted(set().union(*example_tables().values()))
    with make_ui(clone, readme_env) as dev, chromium() as driver:
        shots = Shots(driver, ARTIFACTS / request.node.name)
        try:
            assert f"adopted {len(every_table)} table(s)" in dev.log.read_text()
            driver.get(dev.url)
            if dev.graphql("{ shouldShowNux }")["shouldShowNux"]:
                pages.skip_community_dialog(driver)
            for key in every_table:
                _shows_the_table_as_it_is(dev, driver, key)
                shots.take(f"{key} after make ui")
            _shows_the_partitions_holding_rows(dev, driver)
            shots.take("partitions after make ui")
            _materialize_with_nothing_new(dev, driver)
            shots.take("materialized with nothing new")
            _backfill_shows_each_partitions_own_counts(dev, driver)
            shots.take("partitions after the backfill")
            _second_example_run_is_recorded_partition_by_partition(dev, driver, readme_env)
            shots.take("partitions after the second make example")
        except BaseException:
            shots.take("failure")
            raise
        finally:
            shutil.copyfile(dev.log, shots.folder / "dagster-dev.log")


def _shows_the_table_as_it_is(dev: DagsterDev, driver: WebDriver, key: str) -> None:
    """The asset page against the Delta log: version, rows (a partitioned table: its latest partition's)
    and every column with its Delta type."""
    path = str(dev.data / key)
    table = DeltaTable(path)
    rows = pl.read_delta(path)
    shown = pages.asset_overview(driver, key, (constants.DELTA_VERSION,))
    assert "Never materialized" not in str(shown["status"])
    assert shown["metadata"] == {constants.DELTA_VERSION: str(table.version())}
    partition = str(shown["status"]).splitlines()[-1] if key == SILVER else None
    held = rows.filter(pl.col(MONTH) == partition).height if partition else rows.height
    assert int(str(shown["row_count"]).replace(",", "")) == held
    assert shown["columns"] == delta_columns(table)
    assert "Unsynced" not in str(shown["page"])


def delta_columns(table: DeltaTable) -> dict[str, str]:
    """``{column: type}`` as the Delta log's schema string names them."""
    fields = json.loads(table.schema().to_json())["fields"]
    return {f["name"]: f["type"] if isinstance(f["type"], str) else json.dumps(f["type"]) for f in fields}


def _shows_the_partitions_holding_rows(dev: DagsterDev, driver: WebDriver) -> None:
    held = _rows_per_month(dev)
    pages.open_partitions(driver, SILVER, len(held))
    for month, rows in held.items():
        assert pages.partition_metadata(driver, month, ("dagster/row_count",)) == {"dagster/row_count": str(rows)}
    assert _stale(dev, SILVER, list(held)) == ["FRESH"] * len(held)


def _materialize_with_nothing_new(dev: DagsterDev, driver: WebDriver) -> None:
    """No new landing file: the run succeeds, writes nothing, and the asset says so over the same version."""
    version = DeltaTable(str(dev.data / BRONZE)).version()
    run_prefix = pages.materialize_unpartitioned(driver, BRONZE)
    status = wait_until(lambda: _run_finished(dev, run_prefix), RUN_TIMEOUT, f"run {run_prefix} to finish")
    assert status == dg.DagsterRunStatus.SUCCESS, dev.log_tail()
    assert pages.metadata_value(driver, constants.OUTCOME, "nothing written") == constants.NOTHING_WRITTEN
    assert DeltaTable(str(dev.data / BRONZE)).version() == version
    assert pages.metadata_value(driver, constants.DELTA_VERSION, str(version)) == str(version)
    # bronze's data version did not change: silver stays in sync
    months = list(_rows_per_month(dev))
    assert _stale(dev, SILVER, months) == ["FRESH"] * len(months)


def _backfill_shows_each_partitions_own_counts(dev: DagsterDev, driver: WebDriver) -> None:
    path = str(dev.data / SILVER)
    before = DeltaTable(path).version()
    backfill_id = pages.backfill_range(driver, SILVER, BACKFILLED[0], BACKFILLED[-1], len(BACKFILLED))
    status = wait_until(
        lambda: (s := dev.backfill_status(backfill_id)) not in BACKFILL_LIVE and s,
        RUN_TIMEOUT,
        f"backfill {backfill_id} to finish",
    )
    assert status == "COMPLETED_SUCCESS", dev.log_tail()
    versions = list(range(before + 1, DeltaTable(path).version() + 1))
    assert len(versions) == len(BACKFILLED), "one commit per replayed partition"
    _partitions_show(dev, driver, dict(zip(BACKFILLED, versions, strict=True)))
    assert _stale(dev, SILVER, list(BACKFILLED)) == ["FRESH"] * len(BACKFILLED)


def _second_example_run_is_recorded_partition_by_partition(
    dev: DagsterDev, driver: WebDriver, env: dict[str, str]
) -> None:
    """The README: with the UI's instance there, ``./make.sh example`` records its runs in it. Each
    partition shows its latest commit's share: the stage's merge for the months it touched, then the
    replay of the first quarter."""
    path = str(dev.data / SILVER)
    before = DeltaTable(path).version()
    second = make(dev.root, "example", env)
    assert "recording the runs in the UI's Dagster instance" in second.stdout
    latest: dict[str, int] = {}
    for version in range(before + 1, DeltaTable(path).version() + 1):
        for month, counts in partition_truth(path, version).items():
            if counts[constants.ROWS_INSERTED] or counts[constants.ROWS_UPDATED]:
                latest[month] = version
    assert len(latest) > len(BACKFILLED), latest  # new, updated and replayed months
    _partitions_show(dev, driver, latest)


def _partitions_show(dev: DagsterDev, driver: WebDriver, commit_of: dict[str, int]) -> None:
    """The Partitions tab shows, for each month, the counts its commit ``commit_of[month]`` gave it."""
    path = str(dev.data / SILVER)
    pages.open_partitions(driver, SILVER, len(_rows_per_month(dev)))
    for month, version in sorted(commit_of.items()):
        truth = {k: str(v) for k, v in partition_truth(path, version)[month].items()}
        assert pages.partition_metadata(driver, month, SHOWN) == truth, f"{month} at Delta version {version}"


def partition_truth(path: str, version: int) -> dict[str, dict[str, Any]]:
    """Per month, what the commit at ``version`` did, from the rows of that version and the one before:
    new order ids are inserted, orders whose ``__updated_at`` moved are updated (a MERGE rewrites it)."""
    after = pl.read_delta(path, version=version).select("order_id", MONTH, "__updated_at")
    previous = pl.read_delta(path, version=version - 1).select("order_id", "__updated_at") if version else None
    if previous is None:
        joined = after.with_columns(pl.lit(None, pl.Datetime("us", "UTC")).alias("before"))
    else:
        joined = after.join(previous.rename({"__updated_at": "before"}), on="order_id", how="left")
    per_month = joined.group_by(MONTH).agg(
        pl.col("before").is_null().sum().alias("inserted"),
        (pl.col("before").is_not_null() & (pl.col("before") != pl.col("__updated_at"))).sum().alias("updated"),
        pl.len().alias("rows"),
    )
    return {
        row[MONTH]: {
            constants.ROWS_INSERTED: row["inserted"],
            constants.ROWS_UPDATED: row["updated"],
            "dagster/row_count": row["rows"],
        }
        for row in per_month.iter_rows(named=True)
    }


def _rows_per_month(dev: DagsterDev) -> dict[str, int]:
    counts = pl.read_delta(str(dev.data / SILVER)).group_by(MONTH).len().sort(MONTH)
    return dict(zip(counts[MONTH].to_list(), counts["len"].to_list(), strict=True))


def _stale(dev: DagsterDev, key: str, partitions: list[str]) -> list[str]:
    """What the UI's "Unsynced" tags are computed from: Dagster's stale status of each partition."""
    answer = dev.graphql(STALE_QUERY, {"path": key.split("/"), "partitions": partitions})
    return list(answer["assetNodeOrError"]["staleStatusByPartition"])
