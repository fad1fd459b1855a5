"""The bundled example from a fresh clone: nothing landed, a project instance, then the UI's actions.

The definitions are the code location's own (``build_example_definitions``, what ``definitions.py``
serves for the bundled example), run in-process against an instance in a temporary
``DAGSTER_HOME`` holding the repository's ``dagster.yaml``; the Delta tables are read back.
"""

from __future__ import annotations

import importlib
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from datacoolie_dagster.example.generate import LATE_ORDERS, NEW_ORDERS, UPDATES, land_batch
from datacoolie_dagster.example_jobs import LAND_JOB_NAME, build_example_definitions
from tests.dagster.conftest import REPOSITORY, failure_message, key

UNPARTITIONED = ["bronze/crm/customers", "bronze/sales/orders", "silver/crm/customers"]
ORDERS = "silver/sales/orders"
FIRST_HALF = [f"2024-0{m}" for m in range(1, 7)]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project folder as the working directory (the example's ``./data`` goes here)."""
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def home_instance(tmp_path: Path) -> Iterator[dg.DagsterInstance]:
    """The instance of a temporary ``DAGSTER_HOME`` with the project's ``dagster.yaml``."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(REPOSITORY / "dagster.yaml", home / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        yield instance


def example_definitions() -> dg.Definitions:
    return build_example_definitions(state_base_path="data/state", log_base_path="data/logs")


def run(
    defs: dg.Definitions, instance: dg.DagsterInstance, selection: Sequence[str], partitions: Sequence[str] = ()
) -> dg.ExecuteInProcessResult:
    """Materialize ``selection`` (a partition range in one run, as a backfill of ``max_partitions_per_run`` does)."""
    tags = {}
    if partitions:
        tags = {
            "dagster/asset_partition_range_start": partitions[0],
            "dagster/asset_partition_range_end": partitions[-1],
        }
    result = dg.materialize(
        list(defs.assets or []),  # type: ignore[arg-type]
        resources=defs.resources,
        instance=instance,
        selection=list(selection),
        tags=tags,
        raise_on_error=False,
    )
    assert result.success, failure_message(result)
    return result


def materialize_all(defs: dg.Definitions, instance: dg.DagsterInstance, months: Sequence[str]) -> None:
    """What "Materialize all" launches: the unpartitioned tables, then the partitions (3 per run)."""
    run(defs, instance, UNPARTITIONED)
    for i in range(0, len(months), 3):
        run(defs, instance, [ORDERS], months[i : i + 3])


def rows(path: str) -> pl.DataFrame:
    return pl.read_delta(f"data/{path}")


def log_messages(instance: dg.DagsterInstance, result: dg.ExecuteInProcessResult) -> list[str]:
    """Every message of the run's event log, as the UI's run page lists them."""
    return [entry.user_message for entry in instance.all_logs(result.run_id)]


@pytest.mark.slow
def test_a_fresh_clone_materializes_every_example_table(project: Path, home_instance: dg.DagsterInstance) -> None:
    defs = example_definitions()
    assert not (project / "data").exists()  # loading the code location touched no data

    # materialize 1 — nothing landed: the first run lands batch 1 before it reads, and says so
    first = run(defs, home_instance, UNPARTITIONED)
    assert any(
        "bundled example: no order file under data/landing yet, so batch 1" in m
        for m in log_messages(home_instance, first)
    )
    assert sorted(p.name for p in (project / "data/landing/sales/orders").iterdir()) == ["orders_0001.csv"]
    for months in (FIRST_HALF[:3], FIRST_HALF[3:]):
        run(defs, home_instance, [ORDERS], months)
    for table in [*UNPARTITIONED, ORDERS]:
        assert home_instance.get_latest_materialization_event(key(table)) is not None, table
    assert home_instance.get_materialized_partitions(key(ORDERS)) == set(FIRST_HALF)
    assert rows("bronze/sales/orders").height == 600
    assert (rows("silver/sales/orders").height, rows("silver/crm/customers").height) == (600, 40)

    # the UI's land action, then materialize again: the new batch's rows are inserted
    landed = defs.resolve_job_def(LAND_JOB_NAME).execute_in_process(instance=home_instance)
    assert landed.success
    assert sorted(p.name for p in (project / "data/landing/sales/orders").iterdir()) == [
        "orders_0001.csv", "orders_0002.csv", "orders_0002_late.csv",
    ]  # fmt: skip
    materialize_all(defs, home_instance, [*FIRST_HALF, "2024-07"])
    assert rows("bronze/sales/orders").height == 600 + NEW_ORDERS + UPDATES + LATE_ORDERS
    silver = rows("silver/sales/orders")
    assert (silver.height, silver["order_id"].n_unique()) == (600 + NEW_ORDERS + LATE_ORDERS,) * 2
    assert silver.filter(pl.col("order_month") == "2024-07").height == NEW_ORDERS
    customers = rows("silver/crm/customers")
    assert customers.height == 45  # five customers moved: a new version each
    assert home_instance.get_materialized_partitions(key(ORDERS)) == {*FIRST_HALF, "2024-07"}


@pytest.mark.slow
def test_the_first_batch_lands_once_and_not_over_landed_files(project: Path, home_instance: dg.DagsterInstance) -> None:
    land_batch(project / "data", 1)
    land_batch(project / "data", 2)
    before = {p: p.stat().st_mtime_ns for p in (project / "data/landing").rglob("*.*")}
    result = run(example_definitions(), home_instance, ["bronze/sales/orders"])
    assert not any("bundled example" in m for m in log_messages(home_instance, result))
    assert {p: p.stat().st_mtime_ns for p in (project / "data/landing").rglob("*.*")} == before
    assert rows("bronze/sales/orders").height == 600 + NEW_ORDERS + UPDATES + LATE_ORDERS


def test_the_land_job_lands_the_next_batch_in_order(project: Path, home_instance: dg.DagsterInstance) -> None:
    job = example_definitions().resolve_job_def(LAND_JOB_NAME)
    for batch in (1, 2, 3):
        result = job.execute_in_process(instance=home_instance)
        assert result.success
        (output,) = [e for e in result.all_events if e.is_successful_output]
        assert output.event_specific_data.metadata["batch"].value == batch  # type: ignore[union-attr]
    names = sorted(p.name for p in (project / "data/landing/sales/orders").iterdir())
    assert names == [
        "orders_0001.csv",
        "orders_0002.csv",
        "orders_0002_late.csv",
        "orders_0003.csv",
        "orders_0003_late.csv",
    ]
    again = job.execute_in_process(instance=home_instance, run_config={"ops": {"land_batch": {"config": {"batch": 2}}}})
    assert any(
        "batch 2 was already landed under data/landing: nothing written" in m
        for m in log_messages(home_instance, again)
    )


def test_only_the_bundled_example_gets_the_land_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datacoolie_dagster.definitions as definitions

    assert LAND_JOB_NAME in {j.name for j in definitions.defs.jobs or []}
    own = tmp_path / "metadata.json"
    shutil.copyfile(definitions.EXAMPLE_METADATA, own)  # the same tables, but the user's file
    monkeypatch.setenv("DATACOOLIE_METADATA", str(own))
    try:
        reloaded = importlib.reload(definitions)
        assert LAND_JOB_NAME not in {j.name for j in reloaded.defs.jobs or []}
    finally:
        monkeypatch.delenv("DATACOOLIE_METADATA")
        importlib.reload(definitions)
