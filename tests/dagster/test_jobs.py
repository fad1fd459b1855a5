"""Stage jobs executed in process: sharded fan-out, one shard per launch, stage barriers, maintenance."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from deltalake import DeltaTable

from datacoolie_core import FileProvider
from datacoolie_core.columns import DATAFLOW_RUN_ID
from datacoolie_core.orchestration.distributor import JobDistributor
from tests.dagster.conftest import ORDERS_EU, ORDERS_US, definitions, land, land_lineage, materialized

LANDED_ROWS = {
    "bronze/sales/orders": 3,
    "bronze/crm/customers": 2,
    "silver/sales/orders": 3,
    "silver/crm/customers": 2,
    "gold/reporting/revenue_by_city": 2,
}


def execute(
    defs: dg.Definitions, job: str, run_config: Mapping[str, object], instance: dg.DagsterInstance
) -> dg.ExecuteInProcessResult:
    return defs.resolve_job_def(job).execute_in_process(run_config=run_config, instance=instance, raise_on_error=False)


def delta_rows(root: Path) -> dict[str, int]:
    tables = [p.parent for p in (root / "lake").rglob("_delta_log")]
    return {str(t.relative_to(root / "lake")): pl.read_delta(str(t)).height for t in tables}


def shard_steps(result: dg.ExecuteInProcessResult) -> set[str]:
    return {str(e.step_key) for e in result.all_events if e.is_step_success and "run_shard" in (e.step_key or "")}


def test_fan_out_of_three_shards_writes_every_dataflow_exactly_once(lake: Path, instance: dg.DagsterInstance) -> None:
    land_lineage(lake)
    result = execute(definitions(lake), "datacoolie_all_stages", {"job_num": 3}, instance)

    assert result.success
    # every stage waited for all shards of the stage it reads, so a first run succeeds end to end
    assert delta_rows(lake) == LANDED_ROWS
    assert {k for k, _ in materialized(result)} == set(LANDED_ROWS)
    # the two fan-in writers of bronze orders each wrote once
    bronze = pl.read_delta(str(lake / "lake" / "bronze" / "sales" / "orders"))
    assert bronze[DATAFLOW_RUN_ID].n_unique() == 2
    assert shard_steps(result) == {
        f"datacoolie_run_shard_{stage}[shard_{i}]"
        for stage in ("landing2bronze", "bronze2silver", "silver2gold")
        for i in range(3)
    }


def test_one_shard_per_launch_runs_only_that_shards_dataflows(lake: Path, instance: dg.DagsterInstance) -> None:
    land_lineage(lake)
    defs = definitions(lake)
    provider = FileProvider(lake / "metadata.json")
    provider.initialize()
    mine = JobDistributor(job_num=3, job_index=1).select(provider.get_dataflows(stage="landing2bronze"))
    assert {d.name for d in mine} == {"orders_eu_to_bronze", "orders_us_to_bronze"}  # the fixture's shard 1

    result = execute(defs, "datacoolie_landing2bronze", {"job_num": 3, "job_index": 1}, instance)

    assert result.success
    assert shard_steps(result) == {"datacoolie_run_shard[shard_1]"}
    assert delta_rows(lake) == {"bronze/sales/orders": ORDERS_EU.height + ORDERS_US.height}
    assert materialized(result) == [("bronze/sales/orders", None)]


def test_stage_job_fans_out_and_records_a_materialization_per_table(lake: Path, instance: dg.DagsterInstance) -> None:
    land_lineage(lake)
    result = execute(definitions(lake), "datacoolie_landing2bronze", {"job_num": 3}, instance)

    assert result.success
    assert shard_steps(result) == {f"datacoolie_run_shard[shard_{i}]" for i in range(3)}
    assert delta_rows(lake) == {"bronze/sales/orders": 3, "bronze/crm/customers": 2}
    assert materialized(result) == [("bronze/crm/customers", None), ("bronze/sales/orders", None)]
    event = instance.get_latest_materialization_event(dg.AssetKey(["bronze", "sales", "orders"]))
    assert event is not None
    assert event.asset_materialization is not None
    assert event.asset_materialization.metadata["dagster/row_count"] == dg.IntMetadataValue(3)


@pytest.mark.parametrize("config", [{"job_num": 3, "job_index": 3}, {"job_num": 0}], ids=["index-past-end", "no-jobs"])
def test_invalid_shard_config_fails_before_running_anything(
    lake: Path, instance: dg.DagsterInstance, config: dict[str, int]
) -> None:
    land_lineage(lake)
    result = execute(definitions(lake), "datacoolie_landing2bronze", config, instance)
    assert not result.success
    assert not (lake / "lake" / "bronze").exists()


def test_maintenance_job_compacts_every_delta_destination(lake: Path, instance: dg.DagsterInstance) -> None:
    land_lineage(lake)
    defs = definitions(lake)
    assert execute(defs, "datacoolie_landing2bronze", {}, instance).success
    later = ORDERS_EU.with_columns(pl.col("order_id") + 10, pl.col("updated_at").dt.offset_by("1y"))
    land(lake, "sales/orders_eu", later, batch=2)
    assert execute(defs, "datacoolie_landing2bronze", {}, instance).success  # a second file to compact
    bronze = str(lake / "lake" / "bronze" / "sales" / "orders")
    assert len(DeltaTable(bronze).file_uris()) > 1

    result = defs.resolve_job_def("datacoolie_maintenance").execute_in_process(instance=instance)

    assert result.success
    assert len(DeltaTable(bronze).file_uris()) == 1
    assert "OPTIMIZE" in [entry["operation"] for entry in DeltaTable(bronze).history()]
    assert pl.read_delta(bronze).height == 5
    # the run's log says what was compacted, table by table
    messages = log_messages(instance, result)
    compacted = [m for m in messages if m.startswith("succeeded orders_us_to_bronze (compacted 3 file(s)")]
    assert len(compacted) == 1, messages
    assert "into 1 (" in compacted[0]
    assert (
        "skipped   orders_to_silver (reason: Delta table at ./lake/silver/sales/orders does not exist yet)"
        in " ".join(messages)
    )


def log_messages(instance: dg.DagsterInstance, result: dg.ExecuteInProcessResult) -> list[str]:
    return [entry.user_message for entry in instance.all_logs(result.run_id) if entry.user_message]


def test_stage_job_names_each_skipped_dataflow_and_why(lake: Path, instance: dg.DagsterInstance) -> None:
    land_lineage(lake)
    defs = definitions(lake)
    assert execute(defs, "datacoolie_landing2bronze", {}, instance).success

    again = execute(defs, "datacoolie_landing2bronze", {}, instance)  # nothing new landed

    assert again.success
    messages = log_messages(instance, again)
    assert "shard 0/1: 1 succeeded, 0 failed, 2 skipped" in messages
    skipped = sorted(m.split(" in ")[0] for m in messages if m.startswith("skipped "))
    assert skipped == [
        "skipped   orders_eu_to_bronze (reason: no new source rows)",
        "skipped   orders_us_to_bronze (reason: no new source rows)",
    ]
