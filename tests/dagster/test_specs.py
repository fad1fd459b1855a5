"""Built ``Definitions`` from golden metadata, nothing executed: keys, groups, lineage deps, metadata,
code versions, translator overrides, partitions, backfill policies, jobs and check specs."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from datacoolie_core import MetadataError
from datacoolie_dagster import DataCoolieTranslator, DataCoolieTranslatorData
from datacoolie_dagster.location.checks import UNIQUE_KEYS
from datacoolie_dagster.location.partitions import PartitionsConfig, TablePartitioning, build_partitions_def
from datacoolie_dagster.location.tables import DestinationTable
from tests.dagster.conftest import PARTITIONS, Edit, dataflow, definitions, key

TABLES = {
    "bronze/sales/orders",
    "bronze/crm/customers",
    "silver/sales/orders",
    "silver/crm/customers",
    "gold/reporting/revenue_by_city",
}
SOURCES = {"landing/sales/orders_eu", "landing/sales/orders_us", "landing/crm/customers"}


def specs(defs: dg.Definitions) -> dict[str, dg.AssetSpec]:
    return {s.key.to_user_string(): s for s in defs.resolve_all_asset_specs()}


def deps(defs: dg.Definitions) -> dict[str, set[str]]:
    graph = defs.resolve_asset_graph()
    return {
        k.to_user_string(): {p.to_user_string() for p in graph.get(k).parent_keys} for k in graph.get_all_asset_keys()
    }


def multi_assets(defs: dg.Definitions) -> list[dg.AssetsDefinition]:
    return [a for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition) and a.is_materializable]


def test_keys_groups_and_lineage_deps(lake: Path) -> None:
    defs = definitions(lake)
    graph = defs.resolve_asset_graph()
    materializable = {k.to_user_string() for k in graph.materializable_asset_keys}
    external = {k.to_user_string() for k in graph.get_all_asset_keys()} - materializable
    assert (materializable, external) == (TABLES, SOURCES)
    assert deps(defs) == {
        # fan-in: both extracts feed the one bronze table
        "bronze/sales/orders": {"landing/sales/orders_eu", "landing/sales/orders_us"},
        "bronze/crm/customers": {"landing/crm/customers"},
        # path lineage: silver reads the destination path of a bronze dataflow
        "silver/sales/orders": {"bronze/sales/orders"},
        "silver/crm/customers": {"bronze/crm/customers"},
        # SQL lineage: the Delta query joins two silver tables
        "gold/reporting/revenue_by_city": {"silver/sales/orders", "silver/crm/customers"},
        **{source: set() for source in SOURCES},
    }
    groups = {k: s.group_name for k, s in specs(defs).items()}
    assert groups == {
        "bronze/sales/orders": "landing2bronze",
        "bronze/crm/customers": "landing2bronze",
        "silver/sales/orders": "bronze2silver",
        "silver/crm/customers": "bronze2silver",
        "gold/reporting/revenue_by_city": "silver2gold",
        **dict.fromkeys(SOURCES, "datacoolie_sources"),
    }


def test_fan_in_is_one_asset_with_every_dataflow(lake: Path) -> None:
    spec = specs(definitions(lake))["bronze/sales/orders"]
    assert sorted(spec.metadata["datacoolie/dataflow_names"]) == ["orders_eu_to_bronze", "orders_us_to_bronze"]
    assert len(set(spec.metadata["datacoolie/dataflow_ids"])) == 2
    assert spec.metadata["datacoolie/watermark_columns"] == ["updated_at"]


def test_spec_metadata_and_kinds(lake: Path) -> None:
    spec = specs(definitions(lake))["silver/sales/orders"]
    # (the column metadata is pinned in test_column_lineage.py)
    metadata = {k: v for k, v in spec.metadata.items() if k != "datacoolie/dataflow_ids" and "/column_" not in k}
    assert metadata == {
        "dagster/uri": str(lake / "lake" / "silver" / "sales" / "orders"),
        "dagster/table_name": "sales.orders",
        "datacoolie/dataflow_names": ["orders_to_silver"],
        "datacoolie/load_type": "merge_upsert",
        "datacoolie/merge_keys": ["order_id", "order_month"],  # extended with the partition column
        "datacoolie/watermark_columns": ["updated_at"],
        "datacoolie/destination_key": "path:./lake/silver/sales/orders",
        "datacoolie/stage": "bronze2silver",
        # what downstream reads need (datacoolie_dagster.location.io_manager)
        "dagster/io_manager_key": "datacoolie_io_manager",
        "datacoolie/format": "delta",
        "datacoolie/connection": "silver",
    }
    assert spec.kinds == {"polars", "delta"}
    assert spec.skippable
    source = specs(definitions(lake))["landing/sales/orders_eu"]
    assert source.metadata["dagster/uri"] == str(lake / "lake" / "landing" / "sales" / "orders_eu")
    assert source.kinds == {"parquet"}


class OwnMetadata(DataCoolieTranslator):
    """Replaces the metadata, dropping what the IO manager reads the table with."""

    def get_metadata(self, table: DestinationTable) -> dict[str, Any]:
        return {"team": "sales"}


def test_a_translator_dropping_the_read_metadata_still_gets_it(lake: Path) -> None:
    spec = specs(definitions(lake, translator=OwnMetadata()))["silver/sales/orders"]
    assert {k: v for k, v in spec.metadata.items() if "/column_" not in k} == {
        "team": "sales",
        "datacoolie/format": "delta",
        "datacoolie/connection": "silver",
        "dagster/io_manager_key": "datacoolie_io_manager",
    }


def _edit_dataflow(name: str, **changes: Any) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        dataflow(document, name).update(changes)

    return edit


@pytest.mark.parametrize(
    ("edit", "changed"),
    [
        (None, set()),
        (_edit_dataflow("orders_to_silver", transform={"deduplicate_columns": ["order_id"]}), {"silver/sales/orders"}),
        (_edit_dataflow("orders_us_to_bronze", description="US extracts, v2"), {"bronze/sales/orders"}),
        (
            _edit_dataflow("revenue_by_city", source={"connection_name": "silver", "query": "SELECT 1 AS one"}),
            {"gold/reporting/revenue_by_city"},
        ),
    ],
    ids=["unchanged", "transform-edit", "fan-in-member-edit", "query-edit"],
)
def test_code_version_follows_the_dataflow_metadata(lake: Path, edit: Edit | None, changed: set[str]) -> None:
    before = {k: s.code_version for k, s in specs(definitions(lake)).items() if k in TABLES}
    after = {k: s.code_version for k, s in specs(definitions(lake, edit=edit)).items() if k in TABLES}
    assert all(before.values())
    assert {k for k in TABLES if before[k] != after[k]} == changed


class PrefixedKeys(DataCoolieTranslator):
    def get_asset_key(self, table: DestinationTable) -> dg.AssetKey:
        return super().get_asset_key(table).with_prefix("warehouse")


class RenamedInSpec(DataCoolieTranslator):
    """Overrides only the one override point, ``get_asset_spec``."""

    def get_asset_spec(self, data: DataCoolieTranslatorData) -> dg.AssetSpec:
        spec = super().get_asset_spec(data)
        return spec.replace_attributes(key=dg.AssetKey(["dc", *spec.key.path]))


@pytest.mark.parametrize(
    ("translator", "rename"),
    [
        (PrefixedKeys(), lambda k: f"warehouse/{k}"),
        (RenamedInSpec(), lambda k: f"dc/{k}"),
    ],
    ids=["get_asset_key", "get_asset_spec"],
)
def test_translator_override_changes_keys_and_deps_together(lake: Path, translator: Any, rename: Any) -> None:
    expected = {
        (rename(k) if k in TABLES else k): {rename(p) if p in TABLES else p for p in parents}
        for k, parents in deps(definitions(lake)).items()
    }
    assert deps(definitions(lake, translator=translator)) == expected


def test_unqualified_query_tables_resolve_under_the_source_schema(lake: Path) -> None:
    """As the Delta reader does: ``orders`` in a query of a source with schema ``sales`` is sales.orders."""

    def edit(document: dict[str, Any]) -> None:
        dataflow(document, "revenue_by_city")["source"] = {
            "connection_name": "silver",
            "schema_name": "sales",
            "query": "WITH o AS (SELECT * FROM orders) SELECT c.city, COUNT(*) AS n FROM o JOIN crm.customers c "
            "ON o.customer_id = c.customer_id GROUP BY c.city",
        }

    assert deps(definitions(lake, edit=edit))["gold/reporting/revenue_by_city"] == {
        "silver/sales/orders",
        "silver/crm/customers",
    }


def test_free_text_stage_names_build(lake: Path) -> None:
    def edit(document: dict[str, Any]) -> None:
        for flow in document["dataflows"]:
            # free text, but no '/': a stage is part of the watermark folder (docs/confinement.md)
            flow["stage"] = "landing 2:bronze (eu)" if flow["stage"] == "landing2bronze" else flow["stage"]

    defs = definitions(lake, edit=edit)
    assert specs(defs)["bronze/sales/orders"].group_name == "landing_2_bronze__eu_"
    assert specs(defs)["bronze/sales/orders"].metadata["datacoolie/stage"] == "landing 2:bronze (eu)"
    assert defs.resolve_job_def("datacoolie_landing_2_bronze__eu_") is not None


# --- partitions --------------------------------------------------------------------------------

PARTITION_KEYS = {
    "silver/sales/orders": ["2024-01", "2024-02", "2024-03", "2024-04"],
    "silver/sales/orders_quarterly": ["2024-01", "2024-04", "2024-07", "2024-10"],
    "silver/sales/orders_daily": ["2024-01-30", "2024-01-31", "2024-02-01"],
    "silver/sales/orders_six_hourly": ["2024-01-01T00:00", "2024-01-01T06:00", "2024-01-01T12:00", "2024-01-01T18:00"],
    "silver/sales/orders_weekly": ["2024-01-01", "2024-01-08", "2024-01-15", "2024-01-22"],
    "silver/sales/orders_by_id": ["0-100", "100-200", "200-300", "300-400", "400-450"],
}


@pytest.mark.parametrize(
    ("table", "kind"),
    [
        ("silver/sales/orders", dg.TimeWindowPartitionsDefinition),
        ("silver/sales/orders_quarterly", dg.TimeWindowPartitionsDefinition),
        ("silver/sales/orders_daily", dg.TimeWindowPartitionsDefinition),
        ("silver/sales/orders_six_hourly", dg.TimeWindowPartitionsDefinition),
        ("silver/sales/orders_weekly", dg.TimeWindowPartitionsDefinition),
        ("silver/sales/orders_by_id", dg.StaticPartitionsDefinition),
    ],
    ids=["months-1", "months-3-quarters", "days-1", "hours-6", "weeks-1", "step-100"],
)
def test_partition_keys(lake: Path, table: str, kind: type) -> None:
    partitions_def = definitions(lake, PARTITIONS).resolve_asset_graph().get(key(table)).partitions_def
    assert partitions_def is not None
    assert isinstance(partitions_def, kind)
    assert partitions_def.get_partition_keys() == PARTITION_KEYS[table]


def _partitioning(start: Any, end: Any, interval: dict[str, int]) -> TablePartitioning:
    config = PartitionsConfig(start=start, end=end, chunk_interval=interval)
    return TablePartitioning(config, build_partitions_def(config), None)


@pytest.mark.parametrize(
    ("partitioning", "partition_key", "window"),
    [
        (
            _partitioning("2024-01-01", "2025-01-01", {"months": 1}),
            "2024-02",
            (datetime(2024, 2, 1, tzinfo=UTC), datetime(2024, 3, 1, tzinfo=UTC)),
        ),
        (
            _partitioning("2024-01-01", "2025-01-01", {"months": 3}),
            "2024-04",
            (datetime(2024, 4, 1, tzinfo=UTC), datetime(2024, 7, 1, tzinfo=UTC)),
        ),
        (
            _partitioning("2024-01-01T00:00", "2024-01-02T00:00", {"hours": 6}),
            "2024-01-01T18:00",
            (datetime(2024, 1, 1, 18, tzinfo=UTC), datetime(2024, 1, 2, tzinfo=UTC)),
        ),
        (_partitioning(0, 450, {"step": 100}), "400-450", (400, 450)),
        (_partitioning(-200, 100, {"step": 100}), "-200--100", (-200, -100)),
    ],
    ids=["month", "quarter", "six-hours", "last-step", "negative-step"],
)
def test_partition_key_to_replay_window(partitioning: TablePartitioning, partition_key: str, window: tuple) -> None:
    assert partitioning.window(partition_key) == window


def _partitions(name: str, partitions: dict[str, Any]) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        dataflow(document, name)["configure"] = {"dagster": {"partitions": partitions}}

    return edit


def _fan_in_disagreement(document: dict[str, Any]) -> None:
    _partitions("orders_eu_to_bronze", {"start": "2024-01-01", "chunk_interval": {"months": 1}})(document)
    _partitions("orders_us_to_bronze", {"start": "2024-01-01", "chunk_interval": {"days": 1}})(document)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (_partitions("orders_to_silver", {"start": "2024-01-01", "chunk_interval": {"days": 2}}), "orders_to_silver"),
        (_fan_in_disagreement, "orders_eu_to_bronze.*orders_us_to_bronze"),
        (_partitions("orders_to_silver", {"start": 0, "chunk_interval": {"step": 100}}), "orders_to_silver"),
        (_partitions("orders_to_silver", {"start": "2024-01-01", "chunk_interval": {"fortnights": 1}}), "fortnights"),
        (_partitions("orders_to_silver", {"start": "someday", "chunk_interval": {"months": 1}}), "orders_to_silver"),
        (_partitions("orders_to_silver", {"start": "2024-01-01", "chunk_intervals": {}}), "orders_to_silver"),
    ],
    ids=["days-2", "fan-in-disagreement", "step-without-int-end", "unknown-unit", "bad-start", "typo-key"],
)
def test_invalid_partition_config_is_a_metadata_error_naming_the_dataflow(lake: Path, edit: Edit, match: str) -> None:
    with pytest.raises(MetadataError, match=match):
        definitions(lake, edit=edit)


def test_backfill_policies_and_one_multi_asset_per_partitioning(lake: Path) -> None:
    groups = {
        frozenset(k.to_user_string() for k in a.keys): (a.partitions_def is not None, a.backfill_policy)
        for a in multi_assets(definitions(lake, PARTITIONS))
    }
    single = dg.BackfillPolicy.single_run()
    assert groups == {
        # same partitions and policy: one multi_asset
        frozenset({"silver/sales/orders", "silver/sales/returns"}): (True, single),
        # same partitions, another policy: its own multi_asset
        frozenset({"silver/sales/orders_batched"}): (True, dg.BackfillPolicy.multi_run(3)),
        frozenset({"silver/sales/orders_quarterly"}): (True, single),
        frozenset({"silver/sales/orders_daily"}): (True, single),
        frozenset({"silver/sales/orders_six_hourly"}): (True, single),
        frozenset({"silver/sales/orders_weekly"}): (True, single),
        frozenset({"silver/sales/orders_by_id"}): (True, single),
    }
    unpartitioned = multi_assets(definitions(lake))
    assert [({k.to_user_string() for k in a.keys}, a.partitions_def) for a in unpartitioned] == [(TABLES, None)]
    assert all(a.can_subset for a in unpartitioned)


# --- jobs and checks ----------------------------------------------------------------------------


def test_jobs_per_stage_all_stages_in_lineage_order_and_maintenance(lake: Path) -> None:
    defs = definitions(lake)
    names = {job.name for job in defs.resolve_all_job_defs() if not job.name.startswith("__")}
    assert names == {
        "datacoolie_landing2bronze",
        "datacoolie_bronze2silver",
        "datacoolie_silver2gold",
        "datacoolie_all_stages",
        "datacoolie_maintenance",
    }  # no asset job of our own: sensors and retries use Dagster's implicit one
    stage_job = defs.resolve_job_def("datacoolie_bronze2silver")
    assert set(stage_job.graph.node_names()) == {"datacoolie_shards", "datacoolie_run_shard"}
    all_stages = defs.resolve_job_def("datacoolie_all_stages")
    structure = all_stages.graph.dependency_structure
    upstream = {
        node: {o.node_name for outs in structure.input_to_upstream_outputs_for_node(node).values() for o in outs}
        for node in all_stages.graph.node_names()
        if node.startswith("datacoolie_shards")
    }
    assert upstream == {  # each stage waits for every shard of the stage it reads
        "datacoolie_shards_landing2bronze": set(),
        "datacoolie_shards_bronze2silver": {"datacoolie_run_shard_landing2bronze"},
        "datacoolie_shards_silver2gold": {"datacoolie_run_shard_bronze2silver"},
    }


def test_unique_merge_keys_check_only_on_merge_loads_and_blocking(lake: Path) -> None:
    (assets,) = multi_assets(definitions(lake))
    unique = {c.asset_key.to_user_string(): c.blocking for c in assets.check_specs if c.name == UNIQUE_KEYS}
    assert unique == {"silver/sales/orders": True}
    assert {c.asset_key.to_user_string() for c in assets.check_specs} == TABLES
