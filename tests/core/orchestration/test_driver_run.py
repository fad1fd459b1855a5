"""``DataCoolieDriver.run`` end to end: selection, sharding, parallel buckets, retry, query files, dry run.

Each test names the seed paragraph it proves (``000_…txt``); every table is a real Delta table.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core import DataCoolieRunConfig, DataFlow, FileProvider
from datacoolie_core.errors import MetadataError, TransientError
from datacoolie_core.orchestration import dataflow_tasks
from datacoolie_core.orchestration.dataflow_runner import run_dataflow
from datacoolie_core.orchestration.distributor import JobDistributor
from datacoolie_core.orchestration.driver import DataCoolieDriver
from tests.core.orchestration import driver_support
from tests.core.orchestration.driver_support import Lake, dataflow_rows, function_source

BUSINESS = ["order_id", "amount", "updated_at"]


def config(**values: Any) -> DataCoolieRunConfig:
    return DataCoolieRunConfig(retry_delay=0, **values)


def statuses(result: Any) -> dict[str, str]:
    return {r.dataflow_name: r.status for r in result.runtimes}


# --- selection --------------------------------------------------------------------------------


def six_flows(lake: Lake) -> Lake:
    for index in range(6):
        lake.add(f"flow_{index}", stage=f"s{index % 3}")
    lake.add("retired", is_active=False)
    return lake


def test_load_dataflows_applies_the_active_filter_and_the_shard(tmp_path: Path) -> None:
    lake = six_flows(Lake(tmp_path))
    lake.write()
    shards, everything = [], []
    for index in (0, 1):
        with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=config(job_num=2, job_index=index)) as d:
            shards.append([x.name for x in d.load_dataflows()])
            everything += [x.name for x in d.load_dataflows(active_only=False)]

    assert sorted(shards[0] + shards[1]) == [f"flow_{i}" for i in range(6)]
    assert not set(shards[0]) & set(shards[1])
    assert shards[0]
    assert shards[1]
    assert sorted(everything) == sorted([f"flow_{i}" for i in range(6)] + ["retired"])


class CountingProvider(FileProvider):
    """Counts metadata loads: an explicit list must not cause one."""

    loads = 0

    def get_dataflows(self, *args: Any, **kwargs: Any) -> list[DataFlow]:
        self.loads += 1
        return super().get_dataflows(*args, **kwargs)


def test_explicit_dataflows_run_as_given_but_inactive_ones_are_skipped(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.connections += [
        {"name": "old_fn", "format": "function", "is_active": False},
        {"name": "old_lake", "format": "delta", "is_active": False, "configure": {"base_path": str(tmp_path / "old")}},
    ]
    for index in range(4):
        lake.add(f"flow_{index}")
    lake.add("retired", is_active=False)
    lake.add("old_source", source={"connection_name": "old_fn", "python_function": "x.y"})
    lake.add("old_destination", destination={"connection_name": "old_lake"})
    lake.write()
    provider = CountingProvider(lake.metadata_path)
    everything = provider.get_dataflows(active_only=False)
    provider.loads = 0

    with DataCoolieDriver(metadata_provider=provider, config=config(job_num=2, job_index=0)) as driver:
        result = driver.run(dataflows=everything)

    assert provider.loads == 0  # no reload
    assert statuses(result) == {
        **{f"flow_{i}": "succeeded" for i in range(4)},  # every shard's flow: no shard selection
        "retired": "skipped",
        "old_source": "skipped",
        "old_destination": "skipped",
    }
    reasons = {r.dataflow_name: r.skip_reason for r in result.runtimes if r.status == "skipped"}
    assert reasons == {
        "retired": "dataflow is inactive",
        "old_source": "source connection 'old_fn' is inactive",
        "old_destination": "destination connection 'old_lake' is inactive",
    }
    assert not lake.has_table("retired")
    assert not (tmp_path / "old").exists()
    # shard 0 ran them all, including flows that load_dataflows would have left to shard 1
    assert any(JobDistributor.shard_of(d, 2) == 1 for d in everything if d.is_active)


@pytest.mark.parametrize(
    ("stage", "expected"),
    [
        (["s0", "s1"], ["flow_0", "flow_1", "flow_3", "flow_4"]),
        ("s0,s2", ["flow_0", "flow_2", "flow_3", "flow_5"]),
        (" s2 ", ["flow_2", "flow_5"]),
        (None, [f"flow_{i}" for i in range(6)]),
    ],
    ids=["list", "comma-string", "one-stage", "every-stage"],
)
def test_stage_lists_and_comma_strings_select_a_union(tmp_path: Path, stage: Any, expected: list[str]) -> None:
    lake = six_flows(Lake(tmp_path))
    lake.write()
    with DataCoolieDriver(metadata_base_path=lake.metadata_path) as driver:
        result = driver.run(stage=stage)
    assert sorted(statuses(result)) == expected
    assert set(statuses(result).values()) == {"succeeded"}


# --- job distribution -------------------------------------------------------------------------


def test_three_shards_run_every_active_dataflow_exactly_once(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    for index in range(6):
        lake.add(f"independent_{index}")
    for order in (10, 20, 30):
        lake.add(f"grouped_{order}", group_number=4, execution_order=order)
    lake.add("retired", is_active=False)
    lake.write()

    ran: Counter[str] = Counter()
    shard_of_group: set[int] = set()
    for index in range(3):
        with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=config(job_num=3, job_index=index)) as d:
            result = d.run()
        assert result.failed == 0
        ran.update(r.dataflow_name for r in result.runtimes if r.status == "succeeded")
        shard_of_group |= {index for r in result.runtimes if r.dataflow_name.startswith("grouped_")}

    assert ran == Counter([*(f"independent_{i}" for i in range(6)), "grouped_10", "grouped_20", "grouped_30"])
    assert shard_of_group == {4 % 3}  # a whole group stays on one job
    assert not lake.has_table("retired")


# --- parallel execution -----------------------------------------------------------------------


def test_a_later_order_reads_what_an_earlier_order_wrote_in_the_same_run(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.add("summary", group_number=1, execution_order=20, source={"connection_name": "lake", "table": "raw"})
    lake.add("raw", group_number=1, execution_order=10)
    lake.add("raw_copy", group_number=1, execution_order=10)
    lake.write()

    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=config(max_workers=4)) as driver:
        result = driver.run()

    assert statuses(result) == {"summary": "succeeded", "raw": "succeeded", "raw_copy": "succeeded"}
    summary, raw = (r for r in result.runtimes if r.dataflow_name in ("summary", "raw"))
    assert summary.start_time >= max(r.end_time for r in result.runtimes if r.dataflow_name != "summary")
    assert_frame_equal(lake.table("summary").select(BUSINESS), lake.table("raw").select(BUSINESS))
    assert raw.destination.rows_written == summary.source.rows_read == 3


def test_max_workers_caps_concurrent_dataflows(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    for index in range(3):
        lake.add(f"independent_{index}", source=function_source("gauged_orders"))
    lake.add("grouped_a", group_number=1, execution_order=5, source=function_source("gauged_orders"))
    lake.add("grouped_b", group_number=1, execution_order=5, source=function_source("gauged_orders"))
    lake.write()
    driver_support.GAUGE.update(running=0, peak=0)

    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=config(max_workers=2)) as driver:
        result = driver.run()

    assert result.succeeded == 5
    assert driver_support.GAUGE["peak"] == 2


def test_stop_on_error_leaves_pending_work_pending(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.add("broken", source=function_source("leaky_orders"))
    lake.add("later_a")
    lake.add("later_b", group_number=2, execution_order=10)
    lake.write()

    with DataCoolieDriver(
        metadata_base_path=lake.metadata_path, config=config(max_workers=1, stop_on_error=True)
    ) as driver:
        result = driver.run()

    assert (result.total, result.failed, result.pending, result.running) == (3, 1, 2, 0)
    assert statuses(result) == {"broken": "failed", "later_a": "pending", "later_b": "pending"}
    assert not lake.has_table("later_a")
    assert not lake.has_table("later_b")


# --- retry -------------------------------------------------------------------------------------


def test_a_transient_failure_is_retried_and_the_rows_are_written_once(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    counter = tmp_path / "calls"
    lake.add("orders", source=function_source("flaky_orders", counter_file=str(counter), failures=2)).write()

    with DataCoolieDriver(
        metadata_base_path=lake.metadata_path, log_base_path=lake.logs, config=config(retry_count=3)
    ) as driver:
        result = driver.run()

    (runtime,) = result.runtimes
    assert (runtime.status, runtime.retry_attempts) == ("succeeded", 2)
    assert counter.read_text() == "3"
    assert_frame_equal(lake.table("orders").select(BUSINESS[:2]), driver_support.orders_frame().select(BUSINESS[:2]))
    (row,) = dataflow_rows(lake.logs)
    assert (row["status"], row["retry_attempts"]) == ("succeeded", 2)


def test_every_attempt_runs_on_its_own_copy_of_the_prepared_dataflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a failed attempt changed in its dataflow is not seen by the next attempt."""
    lake = Lake(tmp_path)
    lake.add("orders").write()
    attempts: list[DataFlow] = []

    def first_attempt_changes_its_dataflow_then_fails(dataflow: DataFlow, run: Any, **kwargs: Any) -> Any:
        attempts.append(dataflow)
        if len(attempts) == 1:
            dataflow.source.configure.read_options["changed_by"] = "attempt 1"
            dataflow.destination.connection.configure.base_path = str(tmp_path / "elsewhere")
            raise TransientError("the first attempt fails after changing its dataflow")
        return run_dataflow(dataflow, run, **kwargs)

    monkeypatch.setattr(dataflow_tasks, "run_dataflow", first_attempt_changes_its_dataflow_then_fails)
    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=config(retry_count=2)) as driver:
        (runtime,) = driver.run().runtimes

    assert (runtime.status, runtime.retry_attempts) == ("succeeded", 1), runtime.error_message
    first, second = attempts
    assert second is not first
    assert second.source is not first.source
    assert second.destination.connection is not first.destination.connection
    assert "changed_by" not in second.source.configure.read_options
    assert second.destination.connection.configure.base_path == str(lake.root / "lake")
    assert lake.has_table("orders")
    assert not (tmp_path / "elsewhere").exists()


def test_a_metadata_class_failure_is_not_retried(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    counter = tmp_path / "calls"
    lake.add("orders", source=function_source("broken_metadata_orders", counter_file=str(counter))).write()

    with DataCoolieDriver(metadata_base_path=lake.metadata_path, config=config(retry_count=3)) as driver:
        (runtime,) = driver.run().runtimes

    assert (runtime.status, runtime.error_type, runtime.retry_attempts) == ("failed", "MetadataError", 0)
    assert counter.read_text() == "called\n"


@pytest.mark.parametrize(
    ("source_extra", "connection_extra", "error_type", "message"),
    [
        ({"query": "missing.sql"}, {}, "QueryFileError", "file not found"),
        (
            {},
            {"configure": {"password": "DC_TEST_UNSET_SECRET"}, "secrets_ref": {"env:": ["password"]}},
            "SecretError",
            "environment variable 'DC_TEST_UNSET_SECRET' is not set",
        ),
    ],
    ids=["missing-sql-file", "missing-env-secret"],
)
def test_a_preparation_failure_is_terminal_with_no_source_action(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    source_extra: dict[str, Any],
    connection_extra: dict[str, Any],
    error_type: str,
    message: str,
) -> None:
    monkeypatch.delenv("DC_TEST_UNSET_SECRET", raising=False)
    lake = Lake(tmp_path)
    lake.connections[2] |= connection_extra
    counter = tmp_path / "calls"
    lake.add("orders", source=function_source("counted_orders", counter_file=str(counter)) | source_extra).write()

    with DataCoolieDriver(
        metadata_base_path=lake.metadata_path, sql_base_path=tmp_path / "sql", config=config(retry_count=3)
    ) as driver:
        (runtime,) = driver.run().runtimes

    assert (runtime.status, runtime.error_type, runtime.retry_attempts) == ("failed", error_type, 0)
    assert message in (runtime.error_message or "")
    assert runtime.source.source_action == {}
    assert not counter.exists()
    assert not lake.has_table("orders")


# --- query files -----------------------------------------------------------------------------


QUERY = "SELECT order_id, amount FROM raw WHERE amount > 15"


@pytest.mark.parametrize(
    ("query", "file"),
    [
        ("orders.sql", "sql/orders.sql"),
        ("sql/orders.sql", "sql/orders.sql"),
        ("nested/orders.sql", "sql/nested/orders.sql"),
        ("artifact:/sql/x.sql", "artifact/sql/x.sql"),
    ],
    ids=["root-relative", "qualified", "nested", "artifact"],
)
def test_a_query_file_is_read_at_preparation(tmp_path: Path, query: str, file: str) -> None:
    lake = seeded_lake(tmp_path)
    lake.add("big_orders", source={"connection_name": "lake", "query": query}).write()
    (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / file).write_text(QUERY)

    with DataCoolieDriver(
        metadata_base_path=lake.metadata_path,
        sql_base_path=tmp_path / "sql",
        artifact_base_path=tmp_path / "artifact",
        log_base_path=lake.logs,
    ) as driver:
        (runtime,) = driver.run().runtimes

    assert runtime.status == "succeeded", runtime.error_message
    assert runtime.source.source_action["query"] == QUERY
    assert_frame_equal(
        lake.table("big_orders").select("order_id", "amount"),
        pl.DataFrame({"order_id": [2, 3], "amount": [20.0, 30.0]}),
    )
    (row,) = dataflow_rows(lake.logs)
    assert row["source_query"] == query  # the log keeps the authored reference


def test_a_query_file_reference_never_escapes_its_root(tmp_path: Path) -> None:
    lake = seeded_lake(tmp_path)
    lake.add("escape", source={"connection_name": "lake", "query": "../x.sql"}).write()
    (tmp_path / "x.sql").write_text(QUERY)

    # refused when the metadata is validated, before anything runs (docs/confinement.md)
    with (
        pytest.raises(MetadataError, match=r"dataflows\[0\]\.source\.query .*'\.\.' segments are not allowed"),
        DataCoolieDriver(metadata_base_path=lake.metadata_path, sql_base_path=tmp_path / "sql") as driver,
    ):
        driver.run()
    assert not lake.has_table("escape")


def seeded_lake(tmp_path: Path) -> Lake:
    (tmp_path / "sql").mkdir()
    driver_support.orders_frame().write_delta(str(tmp_path / "lake" / "raw"))
    return Lake(tmp_path)


# --- dry run -----------------------------------------------------------------------------------


def test_a_dry_run_touches_nothing_and_fails_only_invalid_preparation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DC_TEST_UNSET_SECRET", raising=False)
    lake = Lake(tmp_path)
    lake.connections[2] |= {"configure": {"password": "DC_TEST_UNSET_SECRET"}, "secrets_ref": {"env:": ["password"]}}
    counter = tmp_path / "calls"
    source = function_source("counted_orders", counter_file=str(counter)) | {"watermark_columns": ["updated_at"]}
    lake.add("orders", source=source)
    lake.add("queried", source=source | {"query": "missing.sql"})
    lake.add("retired", source=source, is_active=False)
    lake.write()
    (tmp_path / "sql").mkdir()

    with DataCoolieDriver(
        metadata_base_path=lake.metadata_path,
        sql_base_path=tmp_path / "sql",
        log_base_path=lake.logs,
        config=config(dry_run=True),
    ) as driver:
        result = driver.run(dataflows=driver.load_dataflows(active_only=False))

    assert (result.total, result.skipped, result.failed, result.succeeded) == (3, 2, 1, 0)
    assert statuses(result) == {"orders": "skipped", "queried": "failed", "retired": "skipped"}
    assert {r.dataflow_name: r.skip_reason for r in result.runtimes if r.status == "skipped"} == {
        "orders": "dry run",
        "retired": "dataflow is inactive",
    }
    assert not counter.exists()  # no source read
    assert not (tmp_path / "lake").exists()  # no table
    assert not (lake.metadata_path.parent / "watermarks").exists()  # no watermark read or written
    rows = {r["dataflow_name"]: r["status"] for r in dataflow_rows(lake.logs)}
    assert rows == {"orders": "skipped", "queried": "failed", "retired": "skipped"}
