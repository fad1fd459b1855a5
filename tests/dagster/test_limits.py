"""Run limits: ``max_runs`` per stage from the factory and the metadata, the pools the ops of a limited
stage declare, and the sensor that stores the limits in the instance. (The queue holding runs back
is exercised with a real daemon in ``test_limits_daemon.py``.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from datacoolie_core import DataFlow, FileProvider, MetadataError
from datacoolie_dagster.automation.limits import (
    LIMITS_SENSOR,
    apply_pool_limits,
    build_limits_sensor,
    pool_for,
    stage_limits,
)
from tests.dagster.conftest import LINEAGE, definitions, land_lineage, materialize, materialized, write_metadata

BRONZE = "datacoolie/landing2bronze"
SILVER = "datacoolie/bronze2silver"


def _edit(max_runs: dict[str, Any]) -> Any:
    def edit(document: dict[str, Any]) -> None:
        for flow in document["dataflows"]:
            if flow["name"] in max_runs:
                flow.setdefault("configure", {}).setdefault("dagster", {})["max_runs"] = max_runs[flow["name"]]

    return edit


def _dataflows(root: Path, max_runs: dict[str, Any]) -> list[DataFlow]:
    provider = FileProvider(write_metadata(root, LINEAGE, _edit(max_runs)))
    provider.initialize()
    return list(provider.get_dataflows())


@pytest.mark.parametrize(
    ("declared", "factory", "expected"),
    [
        ({}, None, {}),
        ({"orders_eu_to_bronze": 3, "orders_us_to_bronze": 2}, None, {"landing2bronze": 2}),
        ({}, 4, {"landing2bronze": 4, "bronze2silver": 4, "silver2gold": 4}),
        ({"orders_to_silver": 1}, 4, {"landing2bronze": 4, "bronze2silver": 1, "silver2gold": 4}),
        ({"orders_to_silver": 1}, {"bronze2silver": 3, "silver2gold": 2}, {"bronze2silver": 3, "silver2gold": 2}),
    ],
    ids=["none", "smallest-of-the-stage", "factory-default", "metadata-beats-default", "factory-mapping-wins"],
)
def test_a_stage_limit_comes_from_the_factory_or_the_metadata(
    tmp_path: Path, declared: dict[str, int], factory: Any, expected: dict[str, int]
) -> None:
    assert stage_limits(_dataflows(tmp_path, declared), factory) == expected


@pytest.mark.parametrize("bad", [0, -1, "2", True], ids=["zero", "negative", "string", "bool"])
def test_a_bad_max_runs_names_every_dataflow(tmp_path: Path, bad: object) -> None:
    with pytest.raises(MetadataError) as raised:  # at load: the file and each dataflow's path
        _dataflows(tmp_path, {"orders_to_silver": bad, "customers_to_silver": bad})
    text = str(raised.value)
    for index, name in ((3, "orders_to_silver"), (4, "customers_to_silver")):
        path = f"dataflows[{index}].configure.dagster.max_runs (dataflow '{name}')"
        assert f"metadata.json: {path}: must be a positive integer, got {bad!r}" in text


def test_a_factory_limit_for_an_unknown_stage_suggests_the_nearest(tmp_path: Path) -> None:
    with pytest.raises(MetadataError, match="no stage 'bronze2silve'; did you mean 'bronze2silver'"):
        stage_limits(_dataflows(tmp_path, {}), {"bronze2silve": 1})
    with pytest.raises(MetadataError, match="must be a positive integer, got 0"):
        stage_limits(_dataflows(tmp_path, {}), 0)


def test_only_the_writing_ops_of_a_limited_stage_declare_its_pool(tmp_path: Path) -> None:
    defs = definitions(tmp_path, edit=_edit({"orders_eu_to_bronze": 2}), max_runs={"bronze2silver": 1})
    asset_pools = {
        k.to_user_string(): a.op.pool
        for a in defs.assets or []
        if isinstance(a, dg.AssetsDefinition) and a.is_executable
        for k in a.keys
    }
    assert asset_pools == {
        "bronze/sales/orders": BRONZE,
        "bronze/crm/customers": BRONZE,
        "silver/sales/orders": SILVER,
        "silver/crm/customers": SILVER,
        "gold/reporting/revenue_by_city": None,  # silver2gold has no limit: no pool, runs side by side
    }
    jobs = {j.name: j for j in defs.resolve_all_job_defs()}
    pools = {name: {n.definition.pool for n in jobs[name].graph.nodes} - {None} for name in jobs}
    assert pools["datacoolie_landing2bronze"] == {BRONZE}
    assert pools["datacoolie_bronze2silver"] == {SILVER}
    assert pools["datacoolie_silver2gold"] == set()
    assert pools["datacoolie_all_stages"] == {BRONZE, SILVER}  # a run of every stage waits for both
    # the stage job keeps its step names, whatever op it runs
    assert {n.name for n in jobs["datacoolie_bronze2silver"].graph.nodes} == {
        "datacoolie_shards",
        "datacoolie_run_shard",
    }


def test_limited_stages_still_materialize_in_lineage_order(lake: Path, instance: dg.DagsterInstance) -> None:
    defs = definitions(lake, max_runs=1)  # every stage its own pooled op; a run spans three ops
    land_lineage(lake)
    result = materialize(defs, instance)
    assert result.success
    assert [k for k, _ in materialized(result)] == [
        "bronze/crm/customers",
        "bronze/sales/orders",
        "gold/reporting/revenue_by_city",
        "silver/crm/customers",
        "silver/sales/orders",
    ]


def test_the_limits_sensor_stores_the_limits_and_sets_back_a_changed_one() -> None:
    sensor = build_limits_sensor({BRONZE: 2, SILVER: 1})
    with dg.instance_for_test() as instance:
        first = sensor(dg.build_sensor_context(instance=instance))
        slots = {p: instance.event_log_storage.get_concurrency_info(p).slot_count for p in (BRONZE, SILVER)}
        assert slots == {BRONZE: 2, SILVER: 1}
        instance.event_log_storage.set_concurrency_slots(SILVER, 5)  # changed in the UI
        assert apply_pool_limits(instance, {BRONZE: 2, SILVER: 1}) == [SILVER]
        assert apply_pool_limits(instance, {BRONZE: 2, SILVER: 1}) == []  # in sync: nothing written
    assert sensor.name == LIMITS_SENSOR
    assert isinstance(first, dg.SkipReason)
    assert first.skip_message == f"{SILVER}=1, {BRONZE}=2 (in sync)"


def test_no_limit_no_pool_and_no_limits_sensor(tmp_path: Path) -> None:
    defs = definitions(tmp_path)
    assert LIMITS_SENSOR not in {s.name for s in defs.sensors or []}
    assert definitions(tmp_path, max_runs=2).resolve_sensor_def(LIMITS_SENSOR) is not None
    assert pool_for("sales") == "datacoolie/sales"
