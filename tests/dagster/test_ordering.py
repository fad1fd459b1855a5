"""One lineage order: ``ordered_levels`` (graphlib), as tables, stage jobs and rebuild use it, agreeing with Dagster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from datacoolie_core.errors import MetadataError
from datacoolie_dagster.commands.rebuild import RebuildError, plan_rebuild
from datacoolie_dagster.example import METADATA_PATH as EXAMPLE
from datacoolie_dagster.location.factory import build_definitions
from datacoolie_dagster.location.jobs import all_stages_steps
from datacoolie_dagster.location.ordering import LineageCycleError, ordered_levels
from datacoolie_dagster.location.tables import lineage_levels
from tests.dagster.conftest import LINEAGE, PARTITIONS, table_assets, write_metadata


@pytest.mark.parametrize(
    ("graph", "levels"),
    [
        ({"a": [], "b": ["a"], "c": ["b"]}, [["a"], ["b"], ["c"]]),
        ({"d": ["b", "c"], "b": ["a"], "c": ["a"], "a": []}, [["a"], ["b", "c"], ["d"]]),
        ({"c": ["a", "b"], "b": ["a"], "a": []}, [["a"], ["b"], ["c"]]),  # longest path, not shortest
        ({"y": [], "x": []}, [["y", "x"]]),  # a level keeps the graph's order
        ({"a": ["outside"], "b": ["b", "a"]}, [["a"], ["b"]]),  # reads outside the graph and self-reads
        ({}, []),
    ],
    ids=["chain", "diamond", "skip-edge", "independent", "outside-and-self", "empty"],
)
def test_ordered_levels(graph: dict[str, list[str]], levels: list[list[str]]) -> None:
    assert ordered_levels(graph) == levels


def test_a_cycle_is_an_error_naming_it() -> None:
    cycle = r"lineage cycle: (a -> b -> c -> a|b -> c -> a -> b|c -> a -> b -> c) \(each is read by the next\)"
    with pytest.raises(LineageCycleError, match=cycle) as e:
        ordered_levels({"a": ["c"], "b": ["a"], "c": ["b"], "d": []})
    assert set(e.value.cycle) == {"a", "b", "c"}


def _cycle(document: dict[str, Any]) -> None:
    """bronze customers read silver customers: bronze -> silver -> bronze."""
    for dataflow in document["dataflows"]:
        if dataflow["name"] == "customers_to_bronze":
            dataflow["source"] = {"connection_name": "silver", "schema_name": "crm", "table": "customers"}


def test_a_lineage_cycle_fails_the_load_naming_the_tables(tmp_path: Path) -> None:
    metadata = write_metadata(tmp_path, LINEAGE, _cycle)
    # refused by the metadata validation itself (as validate and every CLI run refuse it)
    cycle = (
        r"dataflows 'customers_to_bronze' \(writes .*bronze/crm/customers\), "
        r"'customers_to_silver' \(writes .*silver/crm/customers\) read each other's tables in a cycle"
    )
    with pytest.raises(MetadataError, match=cycle):
        build_definitions(metadata, include_sensors=False)


def _levels_by_dagster(defs: dg.Definitions) -> list[set[str]]:
    """Dagster's asset graph (its own toposort), cut into levels with the same function."""
    graph = defs.resolve_asset_graph()
    keys = [k for k in graph.toposorted_asset_keys if graph.get(k).is_materializable]
    parents = {k.to_user_string(): {p.to_user_string() for p in graph.get(k).parent_keys} for k in keys}
    return [set(level) for level in ordered_levels(parents)]


@pytest.mark.parametrize("fixture", [LINEAGE, PARTITIONS, EXAMPLE], ids=["lineage", "partitions", "example"])
def test_the_orders_agree(tmp_path: Path, fixture: Path) -> None:
    write_metadata(tmp_path, fixture)
    defs = build_definitions(tmp_path / "metadata.json", include_sensors=False, run_retries=0)
    assets = table_assets(tmp_path)
    ours = [{a.spec.key.to_user_string() for a in level} for level in lineage_levels(assets, lambda a: a.table)]
    assert ours == _levels_by_dagster(defs)
    # Dagster's toposort puts every table after the tables it reads, level by level as ours
    level_of = {key: n for n, level in enumerate(ours) for key in level}
    toposorted = [k.to_user_string() for k in defs.resolve_asset_graph().toposorted_asset_keys]
    order = [k for k in toposorted if k in level_of]
    assert [level_of[k] for k in order] == sorted(level_of[k] for k in order)
    # rebuild from each first-level table: every asset after the plan's assets it reads, as in ours
    graph = defs.resolve_asset_graph()
    for root in sorted(ours[0]):
        key = dg.AssetKey.from_user_string(root)
        try:
            plan = plan_rebuild(graph, key, None)
        except RebuildError:  # partitioned, or partitioned downstream: its own partitions, another test
            continue
        planned = [[k.to_user_string() for run in level for k in run.asset_keys] for level in plan]
        assert planned[0] == [root]
        step_of = {asset: n for n, level in enumerate(planned) for asset in level}
        for asset, n in step_of.items():
            assert all(step_of[p] < n for p in _parents(graph, asset) if p in step_of)
            assert all(level_of[p] < level_of[asset] for p in _parents(graph, asset) if p in step_of)
    # the all-stages job runs the stages in an order that respects the table levels
    stage_of = {a.spec.key.to_user_string(): a.table.first.stage for a in assets}
    steps = [s.stage for s in all_stages_steps(list(dict.fromkeys(stage_of.values())), assets)]
    for table, stage in stage_of.items():
        for upstream in _parents(graph, table):
            if upstream in stage_of and stage_of[upstream] != stage:
                assert steps.index(stage_of[upstream]) < steps.index(stage)


def _parents(graph: Any, key: str) -> set[str]:
    return {p.to_user_string() for p in graph.get(dg.AssetKey.from_user_string(key)).parent_keys}


def _stage_cycle(document: dict[str, Any]) -> None:
    """Stage landing2bronze's customers read silver orders (a stage cycle, the tables stay acyclic)."""
    for dataflow in document["dataflows"]:
        if dataflow["name"] == "customers_to_bronze":
            dataflow["source"] = {"connection_name": "silver", "schema_name": "sales", "table": "orders"}


def test_stages_reading_each_other_run_as_one_step(tmp_path: Path) -> None:
    write_metadata(tmp_path, LINEAGE, _stage_cycle)
    assets = table_assets(tmp_path)
    steps = all_stages_steps(["landing2bronze", "bronze2silver", "silver2gold"], assets)
    assert [(s.name, s.stage) for s in steps] == [
        ("landing2bronze_bronze2silver", "landing2bronze,bronze2silver"),
        ("silver2gold", "silver2gold"),
    ]
    build_definitions(tmp_path / "metadata.json", include_sensors=False).resolve_job_def("datacoolie_all_stages")
