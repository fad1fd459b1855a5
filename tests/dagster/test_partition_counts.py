"""What a partition run records is true: its rows against the Delta log, its code version, its checks.

The references are independent of the code under test: the table's own history
(``DeltaTable.history()`` ``operationMetrics``) for row counts, the built asset spec for the code
version, and the instance's event log for what a run logged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from deltalake import DeltaTable

from datacoolie_dagster.location.checks import LOAD_CONSISTENT, UNIQUE_KEYS
from tests.dagster.conftest import PARTITIONS, dataflow, definitions, key, land_lineage, materialize

ORDERS = "silver/sales/orders"
JANUARY_TO_MARCH = {"dagster/asset_partition_range_start": "2024-01", "dagster/asset_partition_range_end": "2024-03"}
BATCH_1 = """order_id,amount,order_ts
1,10.50,2024-01-05 10:00:00
2,4.00,2024-01-20 08:30:00
3,8.00,2024-02-05 10:00:00
4,7.25,2024-03-05 10:00:00
5,1.00,2024-03-09 10:00:00
"""
BATCH_2 = """order_id,amount,order_ts
2,4.50,2024-01-21 08:30:00
4,7.75,2024-03-06 10:00:00
6,2.00,2024-03-10 10:00:00
"""
"""Orders 2 and 4 changed (same month), order 6 is new; April stays empty."""
LOAD_TYPES = {
    "merge_upsert": {"load_type": "merge_upsert", "merge_keys": ["order_id"]},
    "merge_overwrite": {"load_type": "merge_overwrite", "merge_keys": ["order_id"]},
    "append": {"load_type": "append"},
    "overwrite": {"load_type": "overwrite"},
    "scd2": {"load_type": "scd2", "merge_keys": ["order_id"], "configure": {"scd2_effective_column": "order_ts"}},
}
NOISE = "did not yield or return expected outputs"


def land_orders(lake: Path, batch: int, text: str) -> None:
    folder = lake / "lake" / "landing" / "sales" / "orders"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"batch_{batch:03d}.csv").write_text(text, encoding="utf-8")


def orders_as(destination: dict[str, Any]) -> Any:
    def edit(document: dict[str, Any]) -> None:
        orders = dataflow(document, "orders_monthly")["destination"]
        orders.pop("merge_keys", None)
        orders.update(destination)

    return edit


def history_rows(path: Path, first: int, last: int) -> dict[str, int]:
    """Rows inserted / updated by the commits ``first..last`` (inclusive), from the Delta log."""
    rows = {"inserted": 0, "updated": 0}
    for entry in DeltaTable(str(path)).history():
        if first <= entry["version"] <= last:
            metrics: dict[str, Any] = entry.get("operationMetrics") or {}
            rows["inserted"] += int(metrics.get("num_target_rows_inserted", metrics.get("num_added_rows", 0)))
            rows["updated"] += int(metrics.get("num_target_rows_updated", 0))
    return rows


def partition_events(result: dg.ExecuteInProcessResult) -> list[dg.AssetMaterialization]:
    return sorted(
        (e.materialization for e in result.get_asset_materialization_events()), key=lambda m: m.partition or ""
    )


def value(materialization: dg.AssetMaterialization, name: str) -> Any:
    return materialization.metadata[name].value


def check_evaluations(result: dg.ExecuteInProcessResult) -> dict[tuple[str, str], Any]:
    return {(e.asset_key.to_user_string(), e.check_name): e for e in result.get_asset_check_evaluations()}


def run_log(instance: dg.DagsterInstance, result: dg.ExecuteInProcessResult) -> str:
    return "\n".join(entry.user_message for entry in instance.all_logs(result.run_id))


@pytest.mark.slow
@pytest.mark.parametrize("destination", LOAD_TYPES.values(), ids=LOAD_TYPES.keys())
def test_each_partition_reports_the_rows_its_commits_wrote(
    lake: Path, instance: dg.DagsterInstance, destination: dict[str, Any]
) -> None:
    defs = definitions(lake, PARTITIONS, edit=orders_as(destination))
    table = lake / "lake" / "silver" / "sales" / "orders"
    for batch, text in enumerate([BATCH_1, BATCH_2], start=1):  # load 1 — initial; load 2 — updates, a new order
        land_orders(lake, batch, text)
        before = DeltaTable(str(table)).version() if table.exists() else -1
        result = materialize(defs, instance, [ORDERS], tags=JANUARY_TO_MARCH)
        assert result.success
        events = partition_events(result)
        assert [m.partition for m in events] == ["2024-01", "2024-02", "2024-03"]
        first = before + 1
        for event in events:  # each partition's commits follow the previous partition's
            last = value(event, "datacoolie/delta_version")
            logged = history_rows(table, first, last)
            assert (value(event, "datacoolie/rows_inserted"), value(event, "datacoolie/rows_updated")) == (
                logged["inserted"],
                logged["updated"],
            ), f"load {batch}, partition {event.partition}"
            first = last + 1
        assert last == DeltaTable(str(table)).version()
        logged = history_rows(table, before + 1, last)
        written = logged["inserted"] if destination["load_type"] == "scd2" else logged["inserted"] + logged["updated"]
        consistent = check_evaluations(result)[(ORDERS, LOAD_CONSISTENT)]
        assert consistent.passed
        assert consistent.metadata["rows_written"].value == written > 0


def test_partition_materializations_carry_the_asset_code_version(lake: Path, instance: dg.DagsterInstance) -> None:
    defs = definitions(lake, PARTITIONS)
    land_orders(lake, 1, BATCH_1)
    assert materialize(defs, instance, [ORDERS], tags=JANUARY_TO_MARCH).success
    version = defs.resolve_asset_graph().get(key(ORDERS)).code_version
    assert version
    events = [r.asset_materialization for r in instance.fetch_materializations(key(ORDERS), limit=10).records]
    stored = sorted((m.partition, (m.tags or {}).get("dagster/code_version")) for m in events if m is not None)
    assert stored == [("2024-01", version), ("2024-02", version), ("2024-03", version)]


def test_an_empty_partition_still_evaluates_its_checks_without_noise(lake: Path, instance: dg.DagsterInstance) -> None:
    defs = definitions(lake, PARTITIONS)
    land_orders(lake, 1, BATCH_1)

    # run 1 — April has no orders and the table does not exist yet
    april = materialize(defs, instance, [ORDERS], partition_key="2024-04")
    assert april.success
    assert NOISE not in run_log(instance, april)
    assert [m.partition for m in partition_events(april)] == ["2024-04"]
    checks = check_evaluations(april)
    assert checks[(ORDERS, LOAD_CONSISTENT)].passed
    assert checks[(ORDERS, LOAD_CONSISTENT)].metadata["rows_written"].value == 0
    assert checks[(ORDERS, UNIQUE_KEYS)].passed
    assert checks[(ORDERS, UNIQUE_KEYS)].metadata["rows"].value == 0

    # run 2 — after March was written, April is still empty: the check judges the table as it stands
    assert materialize(defs, instance, [ORDERS], partition_key="2024-03").success
    again = materialize(defs, instance, [ORDERS], partition_key="2024-04")
    assert NOISE not in run_log(instance, again)
    assert check_evaluations(again)[(ORDERS, UNIQUE_KEYS)].metadata["rows"].value == 2


def test_an_unpartitioned_run_without_new_rows_still_evaluates_its_checks_without_noise(
    lake: Path, instance: dg.DagsterInstance
) -> None:
    defs = definitions(lake)
    land_lineage(lake)
    selection = ["bronze/sales/orders", "silver/sales/orders"]
    assert materialize(defs, instance, selection).success

    idle = materialize(defs, instance, selection)  # nothing new landed

    assert idle.success
    assert NOISE not in run_log(instance, idle)
    # each table is materialized as it stands, saying nothing was written
    idle_events = [e.materialization for e in idle.get_asset_materialization_events()]
    assert sorted(e.asset_key.to_user_string() for e in idle_events) == selection
    assert {e.metadata["datacoolie/outcome"].value for e in idle_events} == {"nothing written: no new source rows"}
    checks = check_evaluations(idle)
    assert set(checks) == {
        ("bronze/sales/orders", LOAD_CONSISTENT),
        ("silver/sales/orders", LOAD_CONSISTENT),
        ("silver/sales/orders", UNIQUE_KEYS),
    }
    assert all(c.passed for c in checks.values())
    assert checks[("silver/sales/orders", UNIQUE_KEYS)].metadata["rows"].value == 3
