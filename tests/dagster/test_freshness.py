"""Freshness: policies from ``configure.dagster.freshness`` and stage defaults, and the ``watermark_lag`` check.

The references: the specs Dagster builds (the policy objects), the check evaluations a real run
stores in the instance, and (daemon tier) the freshness states Dagster's own daemon records.
"""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest
from dagster.components.testing import create_defs_folder_sandbox

from datacoolie_core import MetadataError
from datacoolie_dagster import DataCoolieComponent
from datacoolie_dagster.example import METADATA_PATH as EXAMPLE
from datacoolie_dagster.location.checks import WATERMARK_LAG
from tests.dagster.cli_support import REPOSITORY
from tests.dagster.conftest import (
    CUSTOMERS,
    ORDERS_EU,
    ORDERS_US,
    Edit,
    dataflow,
    definitions,
    key,
    land,
    land_lineage,
    materialize,
)
from tests.dagster.daemon_support import prepare, running, wait_until

BRONZE_ORDERS = "bronze/sales/orders"


def specs(defs: dg.Definitions) -> dict[str, dg.AssetSpec]:
    """Every spec: our tables (in multi-assets) and the external sources (plain specs)."""
    found = [s for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition) for s in a.specs]
    found += [a for a in defs.assets or [] if isinstance(a, dg.AssetSpec)]
    return {s.key.to_user_string(): s for s in found}


def freshness(**by_dataflow: dict[str, Any]) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        for name, section in by_dataflow.items():
            dataflow(document, name).setdefault("configure", {})["dagster"] = {"freshness": section}

    return edit


def test_a_table_declares_a_window_or_a_deadline_and_stages_give_defaults(lake: Path) -> None:
    edit = freshness(
        orders_to_silver={"fail_window": "1d", "warn_window": "12h"},
        customers_to_silver={"cron": "0 9 * * *", "lower_bound": "1h", "timezone": "Europe/Paris"},
    )
    stage_defaults = {"landing2bronze": {"fail_window": "6h"}, "*": {"fail_window": "2d"}}
    policies = {k: s.freshness_policy for k, s in specs(definitions(lake, edit=edit, freshness=stage_defaults)).items()}

    assert policies["silver/sales/orders"] == dg.FreshnessPolicy.time_window(
        fail_window=timedelta(days=1), warn_window=timedelta(hours=12)
    )
    assert policies["silver/crm/customers"] == dg.FreshnessPolicy.cron(
        deadline_cron="0 9 * * *", lower_bound_delta=timedelta(hours=1), timezone="Europe/Paris"
    )
    assert policies[BRONZE_ORDERS] == dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=6))  # its stage's
    assert policies["bronze/crm/customers"] == dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=6))
    assert policies["gold/reporting/revenue_by_city"] == dg.FreshnessPolicy.time_window(fail_window=timedelta(days=2))
    assert policies["landing/sales/orders_eu"] is None  # external sources are not ours to judge


def test_without_settings_no_policy_and_no_lag_check(lake: Path) -> None:
    defs = definitions(lake)
    assert {s.freshness_policy for s in specs(defs).values()} == {None}
    check_names = {k.name for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition) for k in a.check_keys}
    assert WATERMARK_LAG not in check_names


def test_a_stage_default_lag_skips_tables_without_a_watermark(lake: Path) -> None:
    defs = definitions(lake, freshness={"landing2bronze": {"max_watermark_lag": "2h"}})
    checked = {
        k.asset_key.to_user_string()
        for a in defs.assets or []
        if isinstance(a, dg.AssetsDefinition)
        for k in a.check_keys
        if k.name == WATERMARK_LAG
    }
    assert checked == {BRONZE_ORDERS}  # bronze customers has no watermark_columns
    assert specs(defs)[BRONZE_ORDERS].metadata["datacoolie/max_watermark_lag"] == 7200


@pytest.mark.parametrize(
    ("edit", "kwargs", "message"),
    [
        (
            freshness(orders_to_silver={"fail_windw": "1d"}),
            {},
            "configure.dagster.freshness.fail_windw (dataflow 'orders_to_silver'): unknown key 'fail_windw'; "
            "did you mean 'fail_window'?",
        ),
        (
            freshness(orders_to_silver={"fail_window": "1 day"}),
            {},
            "'1 day' is not a duration like '30m', '2h', '1d' or '1h30m' (units: s, m, h, d, w)",
        ),
        (freshness(orders_to_silver={"fail_window": "1h", "warn_window": "2h"}), {}, "warn_window needs a fail_window"),
        (
            freshness(customers_to_silver={"cron": "0 * * * *", "lower_bound": "2h"}),
            {},
            "lower_bound_delta must be less than or equal to the smallest cron interval",
        ),
        (
            freshness(customers_to_bronze={"max_watermark_lag": "2h"}),
            {},
            "configure.dagster.freshness.max_watermark_lag (table 'path:./lake/bronze/crm/customers'): "
            "the table has no watermark_columns",
        ),
        (
            freshness(orders_eu_to_bronze={"fail_window": "1h"}, orders_us_to_bronze={"fail_window": "2h"}),
            {},
            "these dataflows write one table and so share one freshness",
        ),
        (None, {"freshness": {"bronze2silvr": {"fail_window": "1h"}}}, "no stage 'bronze2silvr'; did you mean 'bronze2silver'?"),
        (None, {"freshness": {"*": {"warn_windw": "1h"}}}, "freshness.*.warn_windw (build_definitions): Extra inputs"),
    ],
    ids=["typo", "duration", "warn-after-fail", "cron-bound", "lag-without-watermark", "fan-in-disagrees",
         "unknown-stage", "default-typo"],
)  # fmt: skip
def test_bad_freshness_is_a_metadata_error(lake: Path, edit: Edit | None, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(MetadataError, match=re.escape(message)):
        definitions(lake, edit=edit, **kwargs)


def lag_evaluation(result: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
    (evaluation,) = [
        e
        for e in result.get_asset_check_evaluations()
        if e.asset_key == key(BRONZE_ORDERS) and e.check_name == WATERMARK_LAG
    ]
    return evaluation


def test_the_lag_check_fails_on_old_data_after_a_recent_run_and_passes_on_new_data(
    lake: Path, instance: dg.DagsterInstance
) -> None:
    lag = {"max_watermark_lag": "2h"}
    defs = definitions(lake, edit=freshness(orders_eu_to_bronze=lag, orders_us_to_bronze=lag))

    # load 1 — orders updated in January/February 2024: the run is now, the data is not
    land_lineage(lake)
    first = materialize(defs, instance, [BRONZE_ORDERS])
    assert first.success  # not blocking: old data is reported, the run and downstream go on
    old = lag_evaluation(first)
    assert old.passed is False
    assert old.metadata["newest_watermark"].value.endswith(".updated_at")
    newest = max(ORDERS_EU["updated_at"].max(), ORDERS_US["updated_at"].max())  # type: ignore[type-var]
    age = datetime.now(UTC) - newest.replace(tzinfo=UTC)  # type: ignore[union-attr]
    assert old.description is not None
    assert re.fullmatch(
        rf"The newest watermark \(.+\.updated_at\) is {age.days}d .* old, older than 2h\.", old.description
    )

    # load 2 — an EU order updated ten minutes ago: the EU dataflow's watermark is new again
    recent = datetime.now(UTC).replace(tzinfo=None) - timedelta(minutes=10)
    fresh = pl.DataFrame({"order_id": [9], "customer_id": [1], "amount": [1.0], "updated_at": [recent]})
    land(lake, "sales/orders_eu", fresh, batch=2)
    second = materialize(defs, instance, [BRONZE_ORDERS])
    new = lag_evaluation(second)
    assert new.passed is True
    assert new.metadata["lag"].value in ("10m", "11m")
    assert new.metadata["max_watermark_lag"].value == "2h"

    # the instance keeps both verdicts, the latest one passing (what the UI shows on the check)
    history = instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(key(BRONZE_ORDERS), WATERMARK_LAG), limit=5
    )
    assert [r.evaluation.passed for r in history if r.evaluation] == [True, False]


def test_the_lag_check_fails_when_no_watermark_is_stored(lake: Path, instance: dg.DagsterInstance) -> None:
    lag = {"max_watermark_lag": "2h"}
    defs = definitions(lake, edit=freshness(orders_eu_to_bronze=lag, orders_us_to_bronze=lag))
    land(lake, "crm/customers", CUSTOMERS)  # no orders landed: the run reads nothing, stores no watermark
    (lake / "lake" / "landing" / "sales" / "orders_eu").mkdir(parents=True)
    (lake / "lake" / "landing" / "sales" / "orders_us").mkdir(parents=True)
    result = materialize(defs, instance, [BRONZE_ORDERS])
    evaluation = lag_evaluation(result)
    assert evaluation.passed is False
    assert evaluation.description == "no watermark is stored yet: the age of the data is unknown."


FRESHNESS_LOCATION = """
from datacoolie_dagster import build_definitions

defs = build_definitions(
    "metadata.json", state_base_path="state", include_sensors=False, run_retries=0, freshness={"*": {"fail_window": "1m"}}
)
"""
FRESHNESS_WORKSPACE = (
    "load_from:\n  - python_file: {relative_path: defs.py, location_name: fresh, working_directory: .}\n"
)


@pytest.mark.daemon
def test_the_daemon_evaluates_the_policy_fresh_then_stale(lake: Path) -> None:
    """Dagster's freshness daemon judges our policy: PASS after a load, FAIL once the window passed."""
    daemon = prepare(
        lake, REPOSITORY / "dagster.yaml", {"FRESHNESS_DAEMON_INTERVAL_SECONDS": "2"}, workspace=FRESHNESS_WORKSPACE
    )
    (lake / "defs.py").write_text(FRESHNESS_LOCATION, encoding="utf-8")
    defs = definitions(lake, include_sensors=False, run_retries=0, freshness={"*": {"fail_window": "1m"}})
    land_lineage(lake)
    orders, customers = key(BRONZE_ORDERS), key("bronze/crm/customers")

    def states(instance: dg.DagsterInstance) -> dict[dg.AssetKey, str]:
        records = instance.get_freshness_state_records([orders, customers])
        return {k: r.freshness_state.value for k, r in records.items()}

    with daemon.instance() as instance:
        assert materialize(defs, instance, [BRONZE_ORDERS]).success
        loaded = instance.get_latest_materialization_event(orders)
        assert loaded is not None
        with running(daemon):
            log = lake / "daemon.log"
            wait_until(lambda: states(instance) == {orders: "PASS", customers: "UNKNOWN"}, 120, "PASS/UNKNOWN", log)
            # the 1-minute window runs out: the same table, not loaded again, turns stale
            wait_until(lambda: states(instance).get(orders) == "FAIL", 180, "FAIL after the window", log)
        failed_at = instance.get_freshness_state_records([orders])[orders].updated_at.timestamp()
        assert failed_at - loaded.timestamp >= 60


COMPONENT_YAML = """type: datacoolie_dagster.DataCoolieComponent
attributes:
  metadata_path: metadata/pipeline.json
  include_sensors: false
  freshness:
    landing2bronze: {fail_window: 6h, max_watermark_lag: 2h}
    "*": {fail_window: 2d}
"""


def test_a_component_gives_stage_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    with create_defs_folder_sandbox() as sandbox:
        folder = sandbox.scaffold_component(component_cls=DataCoolieComponent, defs_path="datacoolie")
        (folder / "defs.yaml").write_text(COMPONENT_YAML, encoding="utf-8")
        (sandbox.project_root / "metadata").mkdir()
        shutil.copy(EXAMPLE, sandbox.project_root / "metadata" / "pipeline.json")
        monkeypatch.chdir(sandbox.project_root)
        with sandbox.build_all_defs() as defs:
            graph = defs.resolve_asset_graph()
            policies = {k.to_user_string(): graph.get(k).freshness_policy for k in graph.get_all_asset_keys()}
            checks = {k.asset_key.to_user_string() for k in graph.asset_check_keys if k.name == WATERMARK_LAG}
    assert policies["bronze/sales/orders"] == dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=6))
    assert policies["silver/crm/customers"] == dg.FreshnessPolicy.time_window(fail_window=timedelta(days=2))
    # the example's own configure.dagster.freshness replaces the stage default
    own = dg.FreshnessPolicy.time_window(fail_window=timedelta(days=2), warn_window=timedelta(days=1))
    assert policies["silver/sales/orders"] == own
    assert checks == {"bronze/sales/orders"}  # bronze customers has no watermark column
