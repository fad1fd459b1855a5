"""The partition sensor: the partitions new files, Delta versions and database rows touch.

Evaluated against a real instance over real files, Delta tables and a SQLite (and PostgreSQL)
database under ``tmp_path``; one test materializes the requested partitions for real.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import dagster as dg
import polars as pl
import psycopg2
import pytest
from deltalake import DeltaTable, write_deltalake

from datacoolie_dagster import build_definitions
from datacoolie_dagster.automation.sensing.builder import unpack_cursor
from datacoolie_dagster.automation.sensing.partition_sensors import (
    PARTITION_SENSOR_NAME,
    RANGE_END_TAG,
    RANGE_START_TAG,
    build_partition_sensors,
    partition_keys,
    partitioned_tables,
)
from datacoolie_dagster.automation.sensing.sensors import AUTOMATED_TAG, TRIGGER_TAG, SensorCursorError
from datacoolie_dagster.location.assets import TableAsset, build_multi_assets
from datacoolie_dagster.location.partitions import PartitionsConfig, TablePartitioning, build_partitions_def
from datacoolie_dagster.location.resources import DataCoolieResource
from tests.dagster.cli_support import BIN
from tests.dagster.conftest import InstanceSettings, land, table_assets
from tests.dagster.daemon_support import FINISHED, Daemon, prepare, running, wait_until
from tests.dagster.daemon_support import SENSED_CODE_LOCATION as CODE_LOCATION
from tests.dagster.daemon_support import SENSED_WORKSPACE as WORKSPACE
from tests.support.mariadb import fresh_database

MONTHS = {"start": "2024-01-01", "chunk_interval": {"months": 1}, "chunk_column": "created_at"}
DAYS = {"start": "2024-01-01", "chunk_interval": {"days": 1}, "chunk_column": "ts"}
FILES_KEY, EVENTS_KEY, CUSTOMERS_KEY = "bronze/sales/orders_by_month", "bronze/events_by_day", "bronze/customers"


def _flow(
    name: str, source: dict[str, Any], table: str, dagster: dict[str, Any], key: str | None = None
) -> dict[str, Any]:
    """A dataflow into ``bronze``: merged on ``key`` (a window can run again), else appended."""
    load = {"load_type": "merge_upsert", "merge_keys": [key]} if key else {"load_type": "append"}
    destination = {"connection_name": "bronze", "table": table, **load}
    if "/" in table:
        schema, table = table.split("/")
        destination |= {"schema_name": schema, "table": table}
    return {"name": name, "stage": "load", "source": source, "destination": destination,
            "configure": {"dagster": dagster}}  # fmt: skip


def metadata(max_partitions_per_run: int | None = None) -> dict[str, Any]:
    batch = {"max_partitions_per_run": max_partitions_per_run} if max_partitions_per_run else {}
    lake = {"connection_type": "lakehouse", "format": "delta"}
    return {
        "connections": [
            {"name": "landing", "connection_type": "file", "format": "parquet",
             "configure": {"base_path": "./lake/landing"}},
            {"name": "raw", **lake, "configure": {"base_path": "./lake/raw"}},
            {"name": "crm", "format": "sql", "configure": {"database_type": "sqlite", "database": "./crm.db"}},
            {"name": "bronze", **lake, "configure": {"base_path": "./lake/bronze"}},
            {"name": "silver", **lake, "configure": {"base_path": "./lake/silver"}},
        ],
        "dataflows": [
            _flow("orders_by_month",
                  {"connection_name": "landing", "schema_name": "sales", "table": "orders",
                   "watermark_columns": ["updated_at"]},
                  "sales/orders_by_month", {"partitions": MONTHS, **batch}, key="order_id"),
            _flow("events_by_day", {"connection_name": "raw", "table": "events", "watermark_columns": ["ts"]},
                  "events_by_day", {"partitions": DAYS}, key="event_id"),
            _flow("customers_by_month",
                  {"connection_name": "crm", "table": "customers", "watermark_columns": ["updated_at"]},
                  "customers", {"partitions": MONTHS}, key="customer_id"),
            _flow("audit_by_month", {"connection_name": "landing", "table": "audit", "watermark_columns": ["ts"]},
                  "audit", {"partitions": {**MONTHS, "chunk_column": "ts"}, "sensor": False}, key="ts"),
            _flow("orders_unpartitioned", {"connection_name": "landing", "schema_name": "sales", "table": "orders"},
                  "orders_all", {}),
        ],
    }  # fmt: skip


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write_metadata(tmp_path)
    return tmp_path


def write_metadata(root: Path, **options: Any) -> None:
    (root / "metadata.json").write_text(json.dumps(metadata(**options)), encoding="utf-8")


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as test_instance:
        yield test_instance


def code_location(root: Path) -> tuple[dg.Definitions, dg.SensorDefinition]:
    assets = table_assets(root)
    resource = DataCoolieResource(metadata_path=str(root / "metadata.json"), state_base_path=str(root / "state"))
    (sensor,) = build_partition_sensors(assets, asset_job="__ASSET_JOB")
    defs = dg.Definitions(assets=build_multi_assets(assets), sensors=[sensor], resources={"datacoolie": resource})
    return defs, sensor


SEEN_EMPTY = "seen empty"
"""``tick``'s default: a cursor that saw every source while it held nothing (all data there is new)."""


def seen_empty(root: Path) -> str:
    """The cursor of a sensor that saw every source of ``root``'s metadata empty."""
    tables = partitioned_tables(table_assets(root))
    return json.dumps({"format": 1, "tables": {t.name: {s.name: {} for s in t.sources} for t in tables}})


def tick(root: Path, instance: dg.DagsterInstance, cursor: str | None = SEEN_EMPTY) -> Any:
    """One evaluation of the partition sensor, as the daemon runs it (``None``: switched on just now)."""
    defs, sensor = code_location(root)
    cursor = seen_empty(root) if cursor == SEEN_EMPTY else cursor
    return sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs))


def runs(data: Any, table: str | None = None) -> list[tuple[str, ...]]:
    """The partitions of each requested run (of ``table``): ``(key,)`` or ``(first, last)`` of a range."""
    found = []
    for request in data.run_requests:
        if table is not None and request.asset_selection != [dg.AssetKey.from_user_string(table)]:
            continue
        tags = request.tags
        found.append(
            (tags[RANGE_START_TAG], tags[RANGE_END_TAG]) if RANGE_START_TAG in tags else (request.partition_key,)
        )
    return found


def orders(*created: datetime, updated: datetime | None = None, first_id: int = 0) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "order_id": list(range(first_id, first_id + len(created))),
            "created_at": list(created),
            "updated_at": [updated or datetime(2024, 8, 1)] * len(created),
        }
    )


def events(*ts: datetime) -> pl.DataFrame:
    return pl.DataFrame({"event_id": list(range(len(ts))), "ts": list(ts)})


def create_customers(root: Path) -> None:
    with closing(sqlite3.connect(root / "crm.db")) as conn, conn:
        conn.execute("CREATE TABLE customers (customer_id INTEGER, created_at TIMESTAMP, updated_at TIMESTAMP)")


def insert_customer(root: Path, customer_id: int, created_at: str, updated_at: str) -> None:
    with closing(sqlite3.connect(root / "crm.db")) as conn, conn:  # the inner `with` commits
        conn.execute("INSERT INTO customers VALUES (?, ?, ?)", (customer_id, created_at, updated_at))


def land_all(root: Path) -> None:
    land(root, "sales/orders", orders(datetime(2024, 6, 3)))
    write_deltalake(str(root / "lake" / "raw" / "events"), events(datetime(2024, 1, 2, 10)).to_arrow())
    create_customers(root)
    insert_customer(root, 1, "2024-01-05 00:00:00", "2024-01-05 00:00:00")


# --- which tables -------------------------------------------------------------------------------


def test_sensed_tables_are_the_partitioned_ones_with_a_window_column_not_opted_out(root: Path) -> None:
    sensed = partitioned_tables(table_assets(root))
    assert sorted(t.name for t in sensed) == [CUSTOMERS_KEY, EVENTS_KEY, FILES_KEY]
    assert {t.name: [s.column for s in t.sources] for t in sensed}[FILES_KEY] == ["created_at"]


def test_api_and_iceberg_sources_are_left_to_the_source_sensor(root: Path) -> None:
    """Their changes carry no window values to map to partitions (the source sensor fingerprints them)."""
    document = metadata()
    document["connections"] += [
        {"name": "shop", "connection_type": "api", "configure": {"base_url": "https://shop.example.com/api"}},
        {"name": "ice", "connection_type": "lakehouse", "format": "iceberg",
         "configure": {"base_path": "./ice", "catalog_properties": {"type": "sql", "uri": "sqlite:///./ice.db"}}},
    ]  # fmt: skip
    document["dataflows"] += [
        _flow("api_by_month", {"connection_name": "shop", "configure": {"endpoint": "orders"},
                               "watermark_columns": ["created_at"]}, "api_orders", {"partitions": MONTHS}, key="id"),
        _flow("ice_by_month", {"connection_name": "ice", "schema_name": "sales", "table": "orders",
                               "watermark_columns": ["created_at"]}, "ice_orders", {"partitions": MONTHS}, key="id"),
    ]  # fmt: skip
    (root / "metadata.json").write_text(json.dumps(document), encoding="utf-8")
    assert sorted(t.name for t in partitioned_tables(table_assets(root))) == [CUSTOMERS_KEY, EVENTS_KEY, FILES_KEY]


@pytest.mark.parametrize("load_type", ["append", "overwrite"])
def test_a_table_a_window_replay_would_damage_is_not_sensed(root: Path, load_type: str) -> None:
    """A second append of a window adds its rows again; an overwrite keeps only the window."""
    document = metadata()
    for flow in document["dataflows"]:
        flow["destination"] = {k: v for k, v in flow["destination"].items() if k != "merge_keys"}
        flow["destination"]["load_type"] = load_type
    (root / "metadata.json").write_text(json.dumps(document), encoding="utf-8")
    assert partitioned_tables(table_assets(root)) == []


def test_the_code_location_registers_the_sensor(root: Path) -> None:
    defs = build_definitions(root / "metadata.json", include_jobs=False)
    sensor = defs.resolve_sensor_def(PARTITION_SENSOR_NAME)
    assert sensor.job_name == "__ASSET_JOB"


def test_a_datacoolie_source_is_left_to_the_watermark_sensor(root: Path, instance: Any) -> None:
    document = metadata()
    document["dataflows"].append(
        _flow(
            "silver_by_month",
            {
                "connection_name": "bronze",
                "schema_name": "sales",
                "table": "orders_by_month",
                "watermark_columns": ["updated_at"],
            },
            "silver_orders",
            {"partitions": MONTHS},
            key="order_id",
        )
    )
    document["dataflows"][-1]["destination"]["connection_name"] = "silver"
    (root / "metadata.json").write_text(json.dumps(document), encoding="utf-8")
    write_deltalake(
        str(root / "lake" / "bronze" / "sales" / "orders_by_month"), orders(datetime(2024, 5, 2)).to_arrow()
    )
    assert runs(tick(root, instance), "silver/silver_orders") == []  # one owner per reader: not this sensor
    assets = table_assets(root)
    assert "silver/silver_orders" not in [t.name for t in partitioned_tables(assets)]
    (reader,) = partitioned_tables(assets, upstreams=True)  # the watermark sensor reads bronze's change for it
    assert (reader.name, [s.name for s in reader.sources]) == ("silver/silver_orders", ["silver_by_month"])

    followed = [
        TableAsset(a.table, a.spec.replace_attributes(automation_condition=dg.AutomationCondition.eager()), a.partitioning)
        if a.spec.key.to_user_string() == "silver/silver_orders" else a
        for a in assets
    ]  # fmt: skip
    assert partitioned_tables(followed, upstreams=True) == []  # the automation follows it then


def test_runs_of_a_stage_with_max_runs_queue_on_its_pool(root: Path) -> None:
    defs = build_definitions(root / "metadata.json", include_jobs=False, max_runs=1)
    assets_def = defs.resolve_assets_def(dg.AssetKey.from_user_string(FILES_KEY))
    assert {op.pool for op in assets_def.node_def.iterate_op_defs()} == {"datacoolie/load"}
    assert assets_def.backfill_policy == dg.BackfillPolicy.single_run()


# --- files --------------------------------------------------------------------------------------


def test_new_files_request_their_windows_late_ones_included_and_old_files_are_not_read(
    root: Path, instance: Any
) -> None:
    land_all(root)
    first = tick(root, instance)
    assert runs(first, FILES_KEY) == [("2024-06",)]

    # batch 1 is now unreadable (same mtime): reading it again would fail the table
    batch_1 = root / "lake" / "landing" / "sales" / "orders" / "batch_001.parquet"
    stat = batch_1.stat()
    batch_1.write_bytes(b"not parquet")
    os.utime(batch_1, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    land(root, "sales/orders", orders(datetime(2024, 7, 9), datetime(2024, 7, 30)), batch=2)
    land(root, "sales/orders", orders(datetime(2024, 2, 14)), batch=3)  # late: an old window
    second = tick(root, instance, first.cursor)

    assert runs(second, FILES_KEY) == [("2024-02",), ("2024-07",)]  # two windows, not 02..07
    assert second.skip_message is None
    request = second.run_requests[0]
    assert request.job_name == "__ASSET_JOB"
    assert request.tags.items() >= {TRIGGER_TAG: "partition_sensor", AUTOMATED_TAG: "true"}.items()
    assert tick(root, instance, second.cursor).run_requests == []


def test_switched_on_it_takes_the_present_as_baseline_and_requests_only_what_lands_after(
    root: Path, instance: Any
) -> None:
    land_all(root)  # data in every source: loaded already, or the stage job's business
    first = tick(root, instance, None)
    assert first.run_requests == []
    assert first.skip_message == "no new source data in any partition of the 3 sensed table(s)"
    tables = unpack_cursor(first.cursor)["tables"]
    assert tables[CUSTOMERS_KEY] == {"customers_by_month": {"max": {"updated_at": "2024-01-05 00:00:00"}}}
    assert tables[EVENTS_KEY] == {"events_by_day": {"delta_versions": {os.path.normpath("./lake/raw/events"): 0}}}
    assert tables[FILES_KEY]["orders_by_month"]["files"] == 1
    assert tick(root, instance, first.cursor).run_requests == []

    land(root, "sales/orders", orders(datetime(2024, 2, 14)), batch=2)
    insert_customer(root, 2, "2024-03-01 00:00:00", "2024-03-02 00:00:00")
    after = tick(root, instance, first.cursor)
    assert sorted(runs(after)) == [("2024-02",), ("2024-03",)]


def test_a_lost_cursor_takes_the_present_as_baseline_again(root: Path, instance: Any) -> None:
    land_all(root)
    loaded = tick(root, instance)
    assert len(loaded.run_requests) == 3
    land(root, "sales/orders", orders(datetime(2024, 7, 1)), batch=2)  # lands while the cursor is lost
    assert tick(root, instance, None).run_requests == []  # `dagster sensor cursor --delete`: no history replay


def test_the_same_change_seen_twice_has_the_same_run_keys(root: Path, instance: Any) -> None:
    land_all(root)
    first, again = tick(root, instance), tick(root, instance)  # a crash before the cursor was saved
    assert [r.run_key for r in first.run_requests] == [r.run_key for r in again.run_requests]
    keys = sorted(r.run_key for r in first.run_requests)
    assert keys[0].startswith(f"{CUSTOMERS_KEY}:2024-01@")
    assert len(set(keys)) == 3


@pytest.mark.parametrize(
    ("max_partitions_per_run", "expected"),
    [(None, [("2024-03", "2024-05"), ("2024-07",)]),
     (2, [("2024-03", "2024-04"), ("2024-05",), ("2024-07",)])],
    ids=["single-run-policy", "two-per-run"],
)  # fmt: skip
def test_contiguous_partitions_share_a_run_up_to_max_partitions_per_run(
    root: Path, instance: Any, max_partitions_per_run: int | None, expected: list[tuple[str, ...]]
) -> None:
    write_metadata(root, max_partitions_per_run=max_partitions_per_run)
    months = [datetime(2024, m, 10) for m in (3, 4, 5, 7)]
    land(root, "sales/orders", orders(*months))
    assert runs(tick(root, instance), FILES_KEY) == expected


def test_requested_ranges_materialize_exactly_their_partitions(root: Path, instance: Any) -> None:
    write_metadata(root, max_partitions_per_run=2)
    land(root, "sales/orders", orders(datetime(2024, 3, 10), datetime(2024, 4, 10), datetime(2024, 7, 1)))
    defs, _ = code_location(root)
    job = defs.resolve_implicit_global_asset_job_def()
    for request in [
        r for r in tick(root, instance).run_requests if r.asset_selection == [dg.AssetKey.from_user_string(FILES_KEY)]
    ]:
        result = job.execute_in_process(
            instance=instance, asset_selection=list(request.asset_selection), tags=request.tags,
            partition_key=request.partition_key,
        )  # fmt: skip
        assert result.success
    status = instance.get_materialized_partitions(dg.AssetKey.from_user_string(FILES_KEY))
    assert sorted(status) == ["2024-03", "2024-04", "2024-07"]
    written = pl.read_delta(str(root / "lake" / "bronze" / "sales" / "orders_by_month"))
    assert sorted(written["created_at"].dt.month().to_list()) == [3, 4, 7]


def test_values_outside_the_partitions_are_not_requested(root: Path, instance: Any) -> None:
    land(root, "sales/orders", orders(datetime(2023, 12, 31), datetime(2024, 1, 2)))
    assert runs(tick(root, instance), FILES_KEY) == [("2024-01",)]


# --- Delta --------------------------------------------------------------------------------------


@pytest.mark.parametrize("change_data_feed", [False, True], ids=["log-diff", "cdf"])
def test_a_new_delta_version_requests_the_days_it_added(root: Path, instance: Any, change_data_feed: bool) -> None:
    path = str(root / "lake" / "raw" / "events")
    configuration = {"delta.enableChangeDataFeed": "true"} if change_data_feed else None
    write_deltalake(path, events(datetime(2024, 1, 2), datetime(2024, 1, 3)).to_arrow(), configuration=configuration)
    first = tick(root, instance)
    assert runs(first, EVENTS_KEY) == [("2024-01-02", "2024-01-03")]

    # version 1: one late day and a file spanning two days
    write_deltalake(path, events(datetime(2024, 1, 1, 23)).to_arrow(), mode="append")
    write_deltalake(path, events(datetime(2024, 1, 5), datetime(2024, 1, 7)).to_arrow(), mode="append")
    second = tick(root, instance, first.cursor)
    assert runs(second, EVENTS_KEY) == [("2024-01-01",), ("2024-01-05",), ("2024-01-07",)]
    assert unpack_cursor(second.cursor)["tables"][EVENTS_KEY]["events_by_day"] == {
        "delta_versions": {"lake/raw/events": 2}
    }


def test_an_overwrite_requests_every_day_it_wrote(root: Path, instance: Any) -> None:
    path = str(root / "lake" / "raw" / "events")
    write_deltalake(path, events(datetime(2024, 1, 2)).to_arrow())
    first = tick(root, instance)
    write_deltalake(path, events(datetime(2024, 1, 2), datetime(2024, 1, 9)).to_arrow(), mode="overwrite")
    assert DeltaTable(path).version() == 1
    assert runs(tick(root, instance, first.cursor), EVENTS_KEY) == [("2024-01-02",), ("2024-01-09",)]


# --- databases ----------------------------------------------------------------------------------


def test_rows_past_the_watermark_request_their_windows_late_rows_included(root: Path, instance: Any) -> None:
    create_customers(root)
    insert_customer(root, 1, "2024-03-05 10:00:00", "2024-03-05 10:00:00")
    first = tick(root, instance)
    assert runs(first, CUSTOMERS_KEY) == [("2024-03",)]

    insert_customer(root, 2, "2024-07-01 00:00:00", "2024-07-01 00:00:00")
    insert_customer(root, 3, "2024-02-10 00:00:00", "2024-07-02 00:00:00")  # late: updated now, created in Feb
    insert_customer(root, 4, "2024-05-10 00:00:00", "2024-03-01 00:00:00")  # not past the watermark seen
    second = tick(root, instance, first.cursor)
    assert runs(second, CUSTOMERS_KEY) == [("2024-02",), ("2024-07",)]
    assert unpack_cursor(second.cursor)["tables"][CUSTOMERS_KEY] == {
        "customers_by_month": {"max": {"updated_at": "2024-07-02 00:00:00"}}
    }
    assert runs(tick(root, instance, second.cursor), CUSTOMERS_KEY) == []


@pytest.fixture
def pg_customers(postgres_server: str) -> Iterator[tuple[Any, dict[str, Any]]]:
    """A fresh schema with an empty ``customers`` table: (autocommit connection, connection configure)."""
    schema = f"s_{uuid.uuid4().hex[:8]}"
    conn = psycopg2.connect(postgres_server)
    conn.autocommit = True
    conn.cursor().execute(
        f'CREATE SCHEMA "{schema}"; CREATE TABLE "{schema}".customers '
        "(customer_id int, created_at timestamptz, updated_at timestamp)"
    )
    url = urlsplit(postgres_server)
    configure = {"database_type": "postgresql", "host": url.hostname, "port": url.port,
                 "database": url.path.lstrip("/"), "username": url.username, "password": url.password}  # fmt: skip
    yield conn, configure | {"schema": schema}
    conn.cursor().execute(f'DROP SCHEMA "{schema}" CASCADE')
    conn.close()


def test_postgres_rows_past_the_watermark_request_their_windows(
    root: Path, instance: Any, pg_customers: tuple[Any, dict[str, Any]]
) -> None:
    conn, configure = pg_customers
    schema = configure.pop("schema")
    document = metadata()
    document["connections"][2] = {"name": "crm", "format": "sql", "configure": configure}
    document["dataflows"][2]["source"]["schema_name"] = schema
    (root / "metadata.json").write_text(json.dumps(document), encoding="utf-8")
    insert = f'INSERT INTO "{schema}".customers VALUES (%s, %s, %s)'
    conn.cursor().execute(insert, (1, datetime(2024, 3, 5, tzinfo=UTC), datetime(2024, 3, 5)))
    first = tick(root, instance)
    assert runs(first, CUSTOMERS_KEY) == [("2024-03",)]

    conn.cursor().execute(insert, (2, datetime(2024, 2, 29, 23, 30, tzinfo=UTC), datetime(2024, 7, 1)))  # late
    conn.cursor().execute(insert, (3, datetime(2024, 7, 31, 23, 0, tzinfo=UTC), datetime(2024, 7, 2)))
    assert runs(tick(root, instance, first.cursor), CUSTOMERS_KEY) == [("2024-02",), ("2024-07",)]


def test_mariadb_rows_past_the_watermark_request_their_windows(root: Path, instance: Any, mariadb_url: str) -> None:
    with fresh_database(mariadb_url) as (conn, configure):
        document = metadata()
        document["connections"][2] = {"name": "crm", "format": "sql", "configure": configure}
        (root / "metadata.json").write_text(json.dumps(document), encoding="utf-8")
        conn.cursor().execute(
            "CREATE TABLE customers (customer_id INT, created_at TIMESTAMP(6) NULL, updated_at DATETIME)"
        )
        insert = "INSERT INTO customers VALUES (%s, %s, %s)"
        conn.cursor().execute(insert, (1, datetime(2024, 3, 5, 10), datetime(2024, 3, 5)))
        first = tick(root, instance)
        assert runs(first, CUSTOMERS_KEY) == [("2024-03",)]
        assert unpack_cursor(first.cursor)["tables"][CUSTOMERS_KEY] == {
            "customers_by_month": {"max": {"updated_at": "2024-03-05T00:00:00"}}
        }

        conn.cursor().execute(insert, (2, datetime(2024, 2, 29, 23, 30), datetime(2024, 7, 1)))  # late
        conn.cursor().execute(insert, (3, datetime(2024, 7, 31, 23, 0), datetime(2024, 7, 2)))
        conn.cursor().execute(insert, (4, datetime(2024, 5, 10), datetime(2024, 3, 1)))  # not past the watermark
        second = tick(root, instance, first.cursor)
        assert runs(second, CUSTOMERS_KEY) == [("2024-02",), ("2024-07",)]
        assert runs(tick(root, instance, second.cursor), CUSTOMERS_KEY) == []


# --- cursor and errors --------------------------------------------------------------------------


def test_an_unreadable_source_is_named_and_keeps_its_cursor_entry(root: Path, instance: Any) -> None:
    land_all(root)
    first = tick(root, instance)
    (root / "crm.db").unlink()
    land(root, "sales/orders", orders(datetime(2024, 9, 1)), batch=2)
    second = tick(root, instance, first.cursor)

    assert runs(second, FILES_KEY) == [("2024-09",)]
    tables = unpack_cursor(second.cursor)["tables"]
    assert tables[CUSTOMERS_KEY] == unpack_cursor(first.cursor)["tables"][CUSTOMERS_KEY]
    (root / "lake" / "landing" / "sales" / "orders").rename(root / "gone")
    third = tick(root, instance, second.cursor)
    assert "table 'bronze/customers'" in third.skip_message
    assert "folder './lake/landing/sales/orders' does not exist" in third.skip_message


def test_a_window_column_the_files_lack_is_named(root: Path, instance: Any) -> None:
    land(root, "sales/orders", pl.DataFrame({"order_id": [1], "updated_at": [datetime(2024, 1, 1)]}))
    data = tick(root, instance)
    assert "cannot read the window column 'created_at'" in data.skip_message
    assert "batch_001.parquet" in data.skip_message


@pytest.mark.parametrize(
    ("cursor", "reason"),
    [("{not json", "not JSON"), ('{"format": 99, "tables": {}}', '"format": 1')],
    ids=["not-json", "other-format"],
)
def test_an_unreadable_cursor_is_an_error_never_a_restart(root: Path, instance: Any, cursor: str, reason: str) -> None:
    with pytest.raises(SensorCursorError, match=f"sensor 'datacoolie_partitions': unreadable cursor.*{reason}"):
        tick(root, instance, cursor)


# --- window values -> partition keys -----------------------------------------------------------


def partitioning(**config: Any) -> TablePartitioning:
    parsed = PartitionsConfig.model_validate(config)
    return TablePartitioning(parsed, build_partitions_def(parsed), None)


@pytest.mark.parametrize(
    ("config", "values", "expected"),
    [
        ({"start": "2024-01-01", "chunk_interval": {"months": 1}},
         pl.Series([datetime(2024, 7, 31, 23, 59), datetime(2024, 2, 1), datetime(2024, 2, 29)]),
         ({"2024-02", "2024-07"}, 0)),
        ({"start": "2024-01-01", "chunk_interval": {"months": 3}},
         pl.Series([date(2024, 6, 30), date(2024, 7, 1), date(2023, 12, 31)]), ({"2024-04", "2024-07"}, 1)),
        ({"start": "2024-01-01", "chunk_interval": {"hours": 6}},
         pl.Series(["2024-01-01 05:59:59", "2024-01-01 06:00:00", None]),
         ({"2024-01-01T00:00", "2024-01-01T06:00"}, 1)),
        ({"start": "2024-01-01", "chunk_interval": {"days": 1}, "timezone": "Europe/Paris"},
         pl.Series([datetime(2024, 1, 1, 23, 30)]), ({"2024-01-02"}, 0)),  # 00:30 in Paris
        ({"start": "2024-01-01", "chunk_interval": {"months": 1}},
         pl.Series([datetime(2024, 5, 1, 1, tzinfo=UTC)]).dt.convert_time_zone("America/New_York"),
         ({"2024-05"}, 0)),
        ({"start": 0, "end": 300, "chunk_interval": {"step": 100}}, pl.Series([5, 99, 250, 300, -1]),
         ({"0-100", "200-300"}, 2)),
        ({"start": "2024-01-01", "chunk_interval": {"months": 1}},  # the current month is no partition yet
         pl.Series([datetime.now(UTC), datetime(2024, 1, 1, tzinfo=UTC)]), ({"2024-01"}, 1)),
    ],
    ids=["months-late", "quarters-dates", "six-hours-text", "local-days", "aware", "integer-steps", "unfinished"],
)  # fmt: skip
def test_window_values_map_to_the_partitions_holding_them(
    config: dict[str, Any], values: pl.Series, expected: tuple[set[str], int]
) -> None:
    assert partition_keys(partitioning(**config), "ts", values) == expected


@pytest.mark.parametrize(
    ("change_data_feed", "expected"),
    [(True, [("2024-01-03",)]), (False, [("2024-01-02", "2024-01-03")])],
    ids=["cdf-updated-rows-only", "log-diff-rewritten-file"],
)
def test_an_update_requests_the_updated_rows_days_with_the_feed_the_rewritten_files_without(
    root: Path, instance: Any, change_data_feed: bool, expected: list[tuple[str, ...]]
) -> None:
    path = str(root / "lake" / "raw" / "events")
    configuration = {"delta.enableChangeDataFeed": "true"} if change_data_feed else None
    write_deltalake(path, events(datetime(2024, 1, 2), datetime(2024, 1, 3)).to_arrow(), configuration=configuration)
    first = tick(root, instance)
    DeltaTable(path).update(updates={"event_id": "9"}, predicate="event_id = 1")  # the 2024-01-03 row
    assert runs(tick(root, instance, first.cursor), EVENTS_KEY) == expected


# --- a real daemon --------------------------------------------------------------------------------


def _sensor_state(instance: dg.DagsterInstance) -> tuple[int, str | None]:
    """(ticks so far, cursor) of the partition sensor."""
    states = [s for s in instance.all_instigator_state() if s.name == PARTITION_SENSOR_NAME]
    cursors = [s.instigator_data.cursor for s in states if s.instigator_data is not None]  # type: ignore[union-attr]
    return len(_ticks(instance)), next(iter(cursors), None)


def _ticks(instance: dg.DagsterInstance) -> list[Any]:
    states = [s for s in instance.all_instigator_state() if s.name == PARTITION_SENSOR_NAME]
    return [t for s in states for t in instance.get_ticks(s.instigator_origin_id, s.selector_id)]


def _set_cursor(daemon: Daemon, cursor: str) -> None:
    """``dagster sensor cursor --set``: the cursor as it was before a tick whose save was lost."""
    args = [str(BIN / "dagster"), "sensor", "cursor", PARTITION_SENSOR_NAME, "--set", cursor, "-w", "workspace.yaml"]
    done = subprocess.run(args, cwd=daemon.root, env=dict(daemon.env), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def _partition_runs(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    return [r for r in instance.get_runs() if r.tags.get(TRIGGER_TAG) == "partition_sensor"]


@pytest.mark.daemon
def test_daemon_runs_the_landed_and_the_late_window_once_each_across_crashes(
    tmp_path: Path, instance_settings: InstanceSettings
) -> None:
    daemon = prepare(tmp_path, instance_settings.config, instance_settings.env, workspace=WORKSPACE)
    document = metadata()
    document["dataflows"] = document["dataflows"][:1]
    (tmp_path / "metadata.json").write_text(json.dumps(document), encoding="utf-8")
    (tmp_path / "defs.py").write_text(CODE_LOCATION, encoding="utf-8")
    log = tmp_path / "daemon.log"
    finished = lambda n: lambda: sum(r.status in FINISHED for r in _partition_runs(instance)) >= n  # noqa: E731

    # switched on over an empty landing folder; then batch 1 lands in 2024-07; crash=True: SIGKILL
    (tmp_path / "lake" / "landing" / "sales" / "orders").mkdir(parents=True)
    with running(daemon, crash=True), daemon.instance() as instance:
        wait_until(lambda: _sensor_state(instance)[1] is not None, 60, "the baseline cursor", log)
        land(tmp_path, "sales/orders", orders(datetime(2024, 7, 9), datetime(2024, 7, 30)))
        wait_until(finished(1), 90, "the 2024-07 run", log)
        wait_until(lambda: _sensor_state(instance)[1] is not None, 30, "a saved cursor", log)
        _, before_late = _sensor_state(instance)

    # a late file for 2024-02, seen after a restart
    land(tmp_path, "sales/orders", orders(datetime(2024, 2, 14), first_id=100), batch=2)
    with running(daemon, crash=True), daemon.instance() as instance:
        wait_until(finished(2), 90, "the late 2024-02 run", log)

    # the cursor save of that tick "lost": the same change is evaluated again, with the same run keys
    assert before_late is not None
    _set_cursor(daemon, before_late)
    with daemon.instance() as instance:
        ticks, _ = _sensor_state(instance)
    with running(daemon, crash=True), daemon.instance() as instance:
        wait_until(lambda: _sensor_state(instance)[0] >= ticks + 2, 60, "two ticks after the restart", log)
        runs_seen = _partition_runs(instance)
        materialized = instance.get_materialized_partitions(dg.AssetKey.from_user_string(FILES_KEY))
        events = instance.fetch_materializations(dg.AssetKey.from_user_string(FILES_KEY), limit=100).records

    assert sorted((r.tags.get("dagster/partition"), r.status) for r in runs_seen) == [
        ("2024-02", dg.DagsterRunStatus.SUCCESS),
        ("2024-07", dg.DagsterRunStatus.SUCCESS),
    ], log.read_text()[-3000:]
    assert len({r.tags["dagster/run_key"] for r in runs_seen}) == 2
    late_key = next(r.tags["dagster/run_key"] for r in runs_seen if r.tags.get("dagster/partition") == "2024-02")
    with daemon.instance() as instance:  # evaluated twice (before and after the lost save), run once
        assert sum(late_key in t.run_keys for t in _ticks(instance)) == 2
    assert sorted(materialized) == ["2024-02", "2024-07"]
    assert sorted(e.partition_key for e in events) == ["2024-02", "2024-07"]  # each once
    written = pl.read_delta(str(tmp_path / "lake" / "bronze" / "sales" / "orders_by_month"))
    assert sorted(written["created_at"].dt.month().to_list()) == [2, 7, 7]
