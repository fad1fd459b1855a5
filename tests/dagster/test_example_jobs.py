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
from datacoolie_dagster.location.example_jobs import LAND_JOB_NAME, build_example_definitions
from tests.dagster.cli_support import CODE_LOCATION, Deployment, explain
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


@pytest.mark.slow
def test_a_fresh_clone_from_the_dagster_cli(tmp_path: Path, home_instance: dg.DagsterInstance) -> None:
    """The code location as Dagster loads it (``-m datacoolie_dagster.definitions``), in real processes."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copyfile(REPOSITORY / "workspace.yaml", project / "workspace.yaml")
    deployment = Deployment(project, tmp_path / "dagster_home")  # the home of ``home_instance``
    pointer = [*CODE_LOCATION, "-d", str(project)]

    tables = deployment.run("dagster", "asset", "materialize", *pointer, "--select", ",".join(UNPARTITIONED))
    assert tables.returncode == 0, explain(tables)
    assert "so batch 1 was landed before this run reads it" in tables.stdout + tables.stderr
    assert pl.read_delta(str(deployment.data / "bronze/sales/orders")).height == 600
    land = deployment.run("dagster", "job", "execute", *pointer, "-j", LAND_JOB_NAME)
    assert land.returncode == 0, explain(land)
    assert (deployment.data / "landing/sales/orders/orders_0002_late.csv").is_file()
    again = deployment.run("dagster", "asset", "materialize", *pointer, "--select", "bronze/sales/orders")
    assert again.returncode == 0, explain(again)
    assert (
        pl.read_delta(str(deployment.data / "bronze/sales/orders")).height == 600 + NEW_ORDERS + UPDATES + LATE_ORDERS
    )
    for table in UNPARTITIONED:
        assert home_instance.get_latest_materialization_event(key(table)) is not None, table


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


def test_the_source_sensor_sees_a_landed_batch(project: Path, home_instance: dg.DagsterInstance) -> None:
    defs = example_definitions()
    sensor = defs.resolve_sensor_def("datacoolie_sources")
    land = defs.resolve_job_def(LAND_JOB_NAME)

    # nothing landed: the tick skips, naming the folders that do not exist yet
    empty = sensor.evaluate_tick(dg.build_sensor_context(instance=home_instance, definitions=defs))
    assert not empty.run_requests
    assert "folder './data/landing/sales/orders' does not exist" in (empty.skip_message or "")
    cursor = empty.cursor
    for batch in (1, 2):
        assert land.execute_in_process(instance=home_instance).success
        tick = sensor.evaluate_tick(dg.build_sensor_context(instance=home_instance, definitions=defs, cursor=cursor))
        (request,) = tick.run_requests or []
        assert sorted(k.to_user_string() for k in request.asset_selection or []) == [
            "bronze/crm/customers", "bronze/sales/orders",
        ], batch  # fmt: skip
        cursor = tick.cursor
    quiet = sensor.evaluate_tick(dg.build_sensor_context(instance=home_instance, definitions=defs, cursor=cursor))
    assert not quiet.run_requests


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


def requested_spans(data: dg.SensorExecutionData) -> list[tuple[str, str]]:
    """``(first, last)`` partition of every requested run (a single partition: first == last)."""
    spans = []
    for request in data.run_requests or []:
        tags = request.tags
        single = request.partition_key or tags.get("dagster/partition")
        start = tags.get("dagster/asset_partition_range_start", single)
        spans.append((start, tags.get("dagster/asset_partition_range_end", single)))
    return sorted(spans)  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_landed_batch_requests_exactly_the_partitions_its_rows_fall_in(
    project: Path, home_instance: dg.DagsterInstance
) -> None:
    """The README's step 4: land a batch in the UI; the watermark sensor asks for its months, the late one too."""
    defs = example_definitions()
    sensor = defs.resolve_sensor_def("datacoolie_watermarks")
    materialize_all(defs, home_instance, FIRST_HALF)
    seen = sensor.evaluate_tick(dg.build_sensor_context(instance=home_instance, definitions=defs))
    assert requested_spans(seen) == []  # switched on: what bronze holds is the baseline, not a change

    assert defs.resolve_job_def(LAND_JOB_NAME).execute_in_process(instance=home_instance).success  # batch 2
    run(defs, home_instance, ["bronze/sales/orders"])  # what datacoolie_sources requests for the new files
    data = sensor.evaluate_tick(dg.build_sensor_context(instance=home_instance, definitions=defs, cursor=seen.cursor))
    # batch 2: new orders of 2024-07, updates of orders created in 2024-06, late orders created in 2024-02
    assert requested_spans(data) == [("2024-02", "2024-02"), ("2024-06", "2024-07")]

    for first, last in requested_spans(data):
        run(defs, home_instance, [ORDERS], [first] if first == last else [first, last])
    silver = rows("silver/sales/orders")
    assert (silver.height, silver["order_id"].n_unique()) == (600 + NEW_ORDERS + LATE_ORDERS,) * 2  # late ones in
    again = sensor.evaluate_tick(dg.build_sensor_context(instance=home_instance, definitions=defs, cursor=data.cursor))
    assert requested_spans(again) == []
