"""The source sensor (new files, Delta versions, database rows) and downstream automation.

Sensors are evaluated against a real ephemeral instance over real files, Delta tables and a SQLite
database under ``tmp_path``; the automation test materializes the upstream table for real. The last
test runs a real ``dagster-daemon`` (crashed and restarted) on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest
from deltalake import write_deltalake

from datacoolie_dagster.automation.sensing.builder import unpack_cursor
from datacoolie_dagster.automation.sensing.sensors import (
    AUTOMATED_TAG,
    AUTOMATION_SENSOR_NAME,
    SOURCE_SENSOR_NAME,
    TRIGGER_TAG,
    SensorCursorError,
    automation_for,
    build_automation_sensor,
    build_automation_sensors,
    build_source_sensors,
    fingerprint_digest,
    sensed_tables,
    with_automation,
)
from datacoolie_dagster.location.assets import TableAsset, build_multi_assets
from datacoolie_dagster.location.resources import DataCoolieResource
from tests.dagster.conftest import InstanceSettings, land, table_assets
from tests.dagster.daemon_support import FINISHED, prepare, running, wait_until
from tests.dagster.daemon_support import SENSED_CODE_LOCATION as CODE_LOCATION
from tests.dagster.daemon_support import SENSED_WORKSPACE as WORKSPACE
from tests.support.mariadb import fresh_database

PARTITIONS = {"partitions": {"start": "2024-01-01", "chunk_interval": {"months": 1}, "chunk_column": "updated_at"}}
ORDERS = pl.DataFrame({"order_id": [1, 2], "amount": [10.0, 20.0], "updated_at": [datetime(2024, 1, 5)] * 2})
EVENTS = pl.DataFrame({"event_id": [1], "kind": ["click"]})


def _flow(name: str, source: dict[str, Any], destination: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": name, "stage": "load", "source": source, "destination": destination, **extra}


METADATA: dict[str, Any] = {
    "connections": [
        {
            "name": "landing",
            "connection_type": "file",
            "format": "parquet",
            "configure": {"base_path": "./lake/landing"},
        },
        {"name": "raw", "connection_type": "lakehouse", "format": "delta", "configure": {"base_path": "./lake/raw"}},
        {"name": "crm", "format": "sql", "configure": {"database_type": "sqlite", "database": "./crm.db"}},
        {
            "name": "bronze",
            "connection_type": "lakehouse",
            "format": "delta",
            "configure": {"base_path": "./lake/bronze"},
        },
        {
            "name": "silver",
            "connection_type": "lakehouse",
            "format": "delta",
            "configure": {"base_path": "./lake/silver"},
        },
    ],
    "dataflows": [
        _flow(
            "orders_to_bronze",
            {
                "connection_name": "landing",
                "schema_name": "sales",
                "table": "orders",
                "watermark_columns": ["updated_at"],
            },
            {"connection_name": "bronze", "schema_name": "sales", "table": "orders", "load_type": "append"},
        ),
        _flow(
            "events_to_bronze",
            {"connection_name": "raw", "table": "events"},
            {"connection_name": "bronze", "table": "events", "load_type": "overwrite"},
        ),
        _flow(
            "customers_to_bronze",
            {"connection_name": "crm", "table": "customers", "watermark_columns": ["updated_at"]},
            {"connection_name": "bronze", "table": "customers", "load_type": "append"},
        ),
        _flow(
            "audit_to_bronze",
            {"connection_name": "landing", "schema_name": "ops", "table": "audit"},
            {"connection_name": "bronze", "table": "audit", "load_type": "append"},
            configure={"dagster": {"sensor": False}},
        ),
        _flow(
            "orders_monthly",
            {
                "connection_name": "landing",
                "schema_name": "sales",
                "table": "orders",
                "watermark_columns": ["updated_at"],
            },
            {"connection_name": "bronze", "table": "orders_monthly", "load_type": "append"},
            configure={"dagster": PARTITIONS},
        ),
        _flow(
            "orders_to_silver",
            {"connection_name": "bronze", "schema_name": "sales", "table": "orders"},
            {"connection_name": "silver", "table": "orders", "load_type": "overwrite"},
        ),
        _flow(
            "orders_by_month",
            {
                "connection_name": "bronze",
                "schema_name": "sales",
                "table": "orders",
                "watermark_columns": ["updated_at"],
            },
            {"connection_name": "silver", "table": "orders_by_month", "load_type": "append"},
            configure={"dagster": PARTITIONS},
        ),
    ],
}
ORDERS_KEY, EVENTS_KEY, CUSTOMERS_KEY = "bronze/sales/orders", "bronze/events", "bronze/customers"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps(METADATA), encoding="utf-8")
    return tmp_path


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as test_instance:
        yield test_instance


def code_location(root: Path) -> tuple[dg.Definitions, dg.SensorDefinition]:
    """What ``build_definitions`` will give once integrated: automated specs, the two sensors."""
    assets = [TableAsset(a.table, with_automation(a.spec, a.table), a.partitioning) for a in table_assets(root)]
    resource = DataCoolieResource(metadata_path=str(root / "metadata.json"), state_base_path=str(root / "state"))
    (sensor,) = build_source_sensors(assets)
    defs = dg.Definitions(
        assets=build_multi_assets(assets),
        sensors=[sensor, build_automation_sensor()],
        resources={"datacoolie": resource},
    )
    return defs, sensor


SEEN_EMPTY = "seen empty"
"""``tick``'s default: a cursor that saw every sensed table while its sources held nothing."""


def tick(root: Path, instance: dg.DagsterInstance, cursor: str | None = SEEN_EMPTY) -> Any:
    """One evaluation of the source sensor, as the daemon runs it (``None``: switched on just now)."""
    defs, sensor = code_location(root)
    if cursor == SEEN_EMPTY:
        cursor = json.dumps({"format": 1, "tables": {t.name: {} for t in sensed_tables(table_assets(root))}})
    context = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs)
    return sensor.evaluate_tick(context)


def requested(data: Any) -> list[tuple[str, list[str]]]:
    """``(run_key, sorted asset keys)`` of each run request."""
    return [(r.run_key, sorted(k.to_user_string() for k in r.asset_selection)) for r in data.run_requests]


def land_all(root: Path) -> None:
    """Data in the three sensed sources (and the opted-out one)."""
    land(root, "sales/orders", ORDERS)
    land(root, "ops/audit", ORDERS)
    write_deltalake(str(root / "lake" / "raw" / "events"), EVENTS.to_arrow())
    with sqlite3.connect(root / "crm.db") as conn:
        conn.execute("CREATE TABLE customers (customer_id INTEGER, updated_at TIMESTAMP)")
    insert_customer(root, 1, "2024-01-01 00:00:00")


def insert_customer(root: Path, customer_id: int, updated_at: str) -> None:
    with closing(sqlite3.connect(root / "crm.db")) as conn, conn:  # the inner `with` commits
        conn.execute("INSERT INTO customers VALUES (?, ?)", (customer_id, updated_at))


def test_switched_on_it_takes_the_present_as_baseline_and_requests_only_what_lands_after(
    root: Path, instance: Any
) -> None:
    land_all(root)
    first = tick(root, instance, None)
    assert requested(first) == []
    assert first.skip_message == "no new source data for the 3 sensed table(s)"
    assert sorted(unpack_cursor(first.cursor)["tables"]) == [CUSTOMERS_KEY, EVENTS_KEY, ORDERS_KEY]
    assert requested(tick(root, instance, first.cursor)) == []

    land(root, "sales/orders", ORDERS, batch=2)
    assert [keys for _, keys in requested(tick(root, instance, first.cursor))] == [[ORDERS_KEY]]
    assert requested(tick(root, instance, None)) == []  # a lost cursor: the present again, no history replay


def test_a_tick_requests_every_sensed_table_with_new_data_in_one_tagged_run(root: Path, instance: Any) -> None:
    land_all(root)
    data = tick(root, instance)

    ((run_key, keys),) = requested(data)
    # the opted-out audit table, the partitioned table and the downstream tables are never sensed
    assert keys == [CUSTOMERS_KEY, EVENTS_KEY, ORDERS_KEY]
    assert [part.split("@")[0] for part in run_key.split(",")] == [CUSTOMERS_KEY, EVENTS_KEY, ORDERS_KEY]
    assert data.run_requests[0].tags.items() >= {TRIGGER_TAG: "sensor", AUTOMATED_TAG: "true"}.items()
    assert sorted(unpack_cursor(data.cursor)["tables"]) == [CUSTOMERS_KEY, EVENTS_KEY, ORDERS_KEY]


def test_no_change_skips_and_the_same_change_seen_twice_has_one_run_key(root: Path, instance: Any) -> None:
    land_all(root)
    first, again = tick(root, instance), tick(root, instance)  # e.g. a crash before the cursor was saved
    assert requested(first) == requested(again)

    after = tick(root, instance, first.cursor)
    assert requested(after) == []
    assert after.skip_message == "no new source data for the 3 sensed table(s)"
    assert after.cursor == first.cursor


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda root: land(root, "sales/orders", ORDERS, batch=2), ORDERS_KEY),
        (lambda root: write_deltalake(str(root / "lake/raw/events"), EVENTS.to_arrow(), mode="append"), EVENTS_KEY),
        (lambda root: insert_customer(root, 2, "2024-02-01 00:00:00"), CUSTOMERS_KEY),
    ],
    ids=["new-file", "new-delta-version", "new-sqlite-row"],
)
def test_a_new_batch_requests_exactly_its_table(root: Path, instance: Any, change: Any, expected: str) -> None:
    land_all(root)
    cursor = tick(root, instance).cursor
    change(root)
    data = tick(root, instance, cursor)
    assert [keys for _, keys in requested(data)] == [[expected]]
    assert requested(tick(root, instance, data.cursor)) == []  # the cursor holds the new fingerprint


def test_a_new_mariadb_row_requests_its_table_with_the_fingerprint_in_the_cursor(
    root: Path, instance: Any, mariadb_url: str
) -> None:
    """A MySQL/MariaDB source is fingerprinted like SQLite and PostgreSQL: one COUNT/MAX probe."""
    with fresh_database(mariadb_url) as (conn, configure):
        document = json.loads((root / "metadata.json").read_text(encoding="utf-8"))
        document["connections"][2] = {"name": "crm", "format": "sql", "configure": configure}
        (root / "metadata.json").write_text(json.dumps(document), encoding="utf-8")
        land_all(root)  # the files and the Delta table; the SQLite file is not read any more
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE customers (customer_id INT, updated_at DATETIME(6))")
            cur.execute("INSERT INTO customers VALUES (1, '2024-01-01 00:00:00.25')")
        first = tick(root, instance)
        assert CUSTOMERS_KEY in requested(first)[0][1]
        assert unpack_cursor(first.cursor)["tables"][CUSTOMERS_KEY] == fingerprint_digest(
            {"customers_to_bronze": {"rows": 1, "max": {"updated_at": "2024-01-01T00:00:00.250000"}}}
        )
        assert requested(tick(root, instance, first.cursor)) == []

        conn.cursor().execute("INSERT INTO customers VALUES (2, '2024-02-01 00:00:00')")
        second = tick(root, instance, first.cursor)
        assert [keys for _, keys in requested(second)] == [[CUSTOMERS_KEY]]
        assert configure["password"] not in second.cursor


def test_unreadable_source_is_named_and_keeps_its_cursor_entry(root: Path, instance: Any) -> None:
    land(root, "sales/orders", ORDERS)  # no Delta events table, no database yet
    data = tick(root, instance)
    assert [keys for _, keys in requested(data)] == [[ORDERS_KEY]]
    tables = unpack_cursor(data.cursor)["tables"]
    assert tables[CUSTOMERS_KEY] == tables[EVENTS_KEY] == fingerprint_digest({})  # kept as first seen: empty
    assert tables[ORDERS_KEY] != fingerprint_digest({})

    nothing_new = tick(root, instance, data.cursor)
    assert nothing_new.skip_message is not None
    assert "table 'bronze/events'" in nothing_new.skip_message
    assert "no Delta table" in nothing_new.skip_message
    assert "SQLite database file './crm.db' does not exist" in nothing_new.skip_message

    # once readable, the source is requested
    write_deltalake(str(root / "lake" / "raw" / "events"), EVENTS.to_arrow())
    assert EVENTS_KEY in requested(tick(root, instance, data.cursor))[0][1]


def test_empty_source_records_its_fingerprint_without_a_run(root: Path, instance: Any) -> None:
    land_all(root)
    os.remove(root / "lake" / "landing" / "sales" / "orders" / "batch_001.parquet")
    data = tick(root, instance)
    assert [keys for _, keys in requested(data)] == [[CUSTOMERS_KEY, EVENTS_KEY]]
    assert unpack_cursor(data.cursor)["tables"][ORDERS_KEY] == fingerprint_digest(
        {"orders_to_bronze": {"files": 0, "modified": None}}
    )


def test_the_cursor_is_packed_and_a_cursor_written_before_the_digests_is_a_quiet_tick(
    root: Path, instance: Any
) -> None:
    from datacoolie_dagster.automation.sensing.observations import fingerprint_source

    land_all(root)
    present = {
        t.name: {str(d.name or d.dataflow_id): fingerprint_source(d, refs) for d, refs in t.sources}
        for t in sensed_tables(table_assets(root))
    }
    legacy = json.dumps({"format": 1, "tables": present})  # the fingerprints themselves, as plain JSON
    data = tick(root, instance, legacy)
    assert requested(data) == []  # an upgrade is not a change of every table
    assert data.cursor.startswith("z:")
    assert unpack_cursor(data.cursor) == {
        "format": 2,
        "tables": {name: fingerprint_digest(entry) for name, entry in present.items()},
    }


@pytest.mark.parametrize(
    ("cursor", "reason"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"format": 3, "tables": {}}', 'expected an object with "format": 2'),
        ('{"format": 2, "tables": {"bronze/events": {}}}', '"tables" must map table names to fingerprint digests'),
        ("z:bm90IHpsaWI=", "not a packed cursor"),
        ('{"format": 1, "tables": {"bronze/events": 3}}', '"tables" must map'),
    ],
    ids=["not-json", "not-an-object", "other-format", "bad-digest", "bad-packing", "bad-entry"],
)
def test_unreadable_cursor_is_an_error_never_a_restart(root: Path, instance: Any, cursor: str, reason: str) -> None:
    land_all(root)
    with pytest.raises(SensorCursorError, match=f"sensor '{SOURCE_SENSOR_NAME}': unreadable cursor .*{reason}"):
        tick(root, instance, cursor)


def test_bad_opt_out_value_names_the_dataflow(root: Path) -> None:
    document = json.loads((root / "metadata.json").read_text())
    document["dataflows"][3]["configure"]["dagster"]["sensor"] = "maybe"
    (root / "metadata.json").write_text(json.dumps(document))
    with pytest.raises(Exception, match=r"configure\.dagster\.sensor \(dataflow 'audit_to_bronze'\)"):
        sensed_tables(table_assets(root))


def test_past_150_tables_the_automation_is_split_over_two_sensors(root: Path) -> None:
    """What one evaluation allocates sets how often the daemon's full garbage collection runs over
    the whole asset graph: 151 tables with a condition get two sensors, each table in exactly one."""
    follower = next(a for a in table_assets(root) if automation_for(a) is not None)
    specs = [dg.AssetSpec(["silver", f"t{i}"], automation_condition=dg.AutomationCondition.eager()) for i in range(151)]
    sensors = build_automation_sensors([TableAsset(follower.table, spec, None) for spec in specs])
    assert [s.name for s in sensors] == [AUTOMATION_SENSOR_NAME, f"{AUTOMATION_SENSOR_NAME}_2"]

    @dg.multi_asset(specs=specs, can_subset=True)
    def tables():  # type: ignore[no-untyped-def]  # its outputs are never produced: only the graph is read
        ...

    graph = dg.Definitions(assets=[tables]).resolve_asset_graph()
    shares = [s.asset_selection.resolve(graph) for s in sensors]
    assert all(0 < len(share) < len(specs) for share in shares)
    assert sorted(key for share in shares for key in share) == sorted(spec.key for spec in specs)


def test_automation_only_on_unpartitioned_tables_with_datacoolie_upstreams(root: Path) -> None:
    conditions = {a.spec.key.to_user_string(): automation_for(a) for a in table_assets(root)}
    assert {key for key, condition in conditions.items() if condition is not None} == {"silver/orders"}
    assert conditions["silver/orders"] == dg.AutomationCondition.eager()

    defs, _ = code_location(root)
    graph = defs.resolve_asset_graph()
    automated = {k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).automation_condition}
    assert automated == {"silver/orders"}


def test_downstream_follows_after_the_sensed_run_materializes(root: Path, instance: Any) -> None:
    land_all(root)
    defs, _ = code_location(root)
    # the automation sensor's first evaluation only records state; nothing is materialized yet
    before = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    assert before.total_requested == 0

    request = tick(root, instance).run_requests[0]
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(
        instance=instance, asset_selection=list(request.asset_selection), tags=request.tags, raise_on_error=False
    )
    assert result.success

    after = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=before.cursor)
    assert after.total_requested == 1
    assert after.get_num_requested(dg.AssetKey(["silver", "orders"])) == 1


# --- a real daemon --------------------------------------------------------------------------------


def _sensor_ticks(instance: dg.DagsterInstance) -> list[Any]:
    states = [s for s in instance.all_instigator_state() if s.name == SOURCE_SENSOR_NAME]
    return [t for s in states for t in instance.get_ticks(s.instigator_origin_id, s.selector_id)]


@pytest.mark.daemon
def test_daemon_runs_a_landed_file_once_and_not_again_after_a_restart(
    tmp_path: Path, instance_settings: InstanceSettings
) -> None:
    daemon = prepare(tmp_path, instance_settings.config, instance_settings.env, workspace=WORKSPACE)
    document = {"connections": METADATA["connections"][:1] + METADATA["connections"][3:4],
                "dataflows": METADATA["dataflows"][:1]}  # fmt: skip
    (tmp_path / "metadata.json").write_text(json.dumps(document), encoding="utf-8")
    (tmp_path / "defs.py").write_text(CODE_LOCATION, encoding="utf-8")
    (tmp_path / "lake" / "landing" / "sales" / "orders").mkdir(parents=True)
    log = tmp_path / "daemon.log"

    # crash=True: SIGKILL, not a shutdown; the cursor must hold anyway
    with running(daemon, crash=True), daemon.instance() as instance:
        baseline = lambda: any(t.status.value == "SKIPPED" for t in _sensor_ticks(instance))  # noqa: E731
        wait_until(baseline, 45, "the baseline tick", log)
        land(tmp_path, "sales/orders", ORDERS)
        wait_until(lambda: any(r.status in FINISHED for r in instance.get_runs()), 45, "a finished run", log)
    with daemon.instance() as instance:
        ticks = len(_sensor_ticks(instance))

    with running(daemon, crash=True), daemon.instance() as instance:  # two more evaluations, nothing new landed
        wait_until(lambda: len(_sensor_ticks(instance)) >= ticks + 2, 30, "two sensor ticks after the restart", log)
    with daemon.instance() as instance:
        runs = instance.get_runs()

    outcome = [(r.status, r.tags.get(TRIGGER_TAG)) for r in runs]
    assert outcome == [(dg.DagsterRunStatus.SUCCESS, "sensor")], log.read_text()[-3000:]
    assert [k.to_user_string() for k in runs[0].asset_selection or []] == [ORDERS_KEY]
    assert runs[0].job_name == "__ASSET_JOB"  # Dagster's implicit asset job: no job of our own to load
    with daemon.instance() as instance:  # the change is also in the catalog, on the source asset
        observed = instance.get_latest_data_version_record(dg.AssetKey(["landing", "sales", "orders"]))
    assert observed is not None
    assert observed.asset_observation is not None
    assert pl.read_delta(str(tmp_path / "lake" / "bronze" / "sales" / "orders")).height == 2


def test_a_database_whose_location_is_a_secret_is_probed_with_the_secret(
    root: Path, instance: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = json.loads((root / "metadata.json").read_text(encoding="utf-8"))
    (crm,) = [c for c in document["connections"] if c["name"] == "crm"]
    crm["configure"]["database"] = "DC_TEST_CRM_DATABASE"  # the name of the secret, not the file
    crm["secrets_ref"] = {"": ["database"]}
    (root / "metadata.json").write_text(json.dumps(document), encoding="utf-8")
    monkeypatch.setenv("DC_TEST_CRM_DATABASE", "./crm.db")
    land_all(root)

    data = tick(root, instance)

    assert CUSTOMERS_KEY in requested(data)[0][1]
    assert unpack_cursor(data.cursor)["tables"][CUSTOMERS_KEY] is not None
