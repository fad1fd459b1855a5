"""DatabaseProvider (P-11) on real SQLite files and a real PostgreSQL: rows, workspaces, soft deletes, watermarks."""

from __future__ import annotations

import json
import socket
import threading
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg2
import pytest
import sqlalchemy as sa

from datacoolie_core.errors import MetadataError, WatermarkError
from datacoolie_core.metadata.database_provider import DatabaseProvider
from datacoolie_core.watermark.manager import WatermarkManager

WS = "sales"


def fresh_postgres_database(server: str) -> str:
    name = f"meta_{uuid.uuid4().hex[:12]}"
    admin = psycopg2.connect(server)
    try:
        admin.autocommit = True
        admin.cursor().execute(f'CREATE DATABASE "{name}"')
    finally:
        admin.close()
    return server.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=[pytest.mark.postgres, pytest.mark.slow])])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database with the four tables, as a URL without the workspace."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'metadata.db'}"
        sa.create_engine(url).connect().close()  # the file exists
    else:
        url = fresh_postgres_database(request.getfixturevalue("postgres_server"))
    DatabaseProvider(url, state_base_path=tmp_path / "state", workspace_id="any").create_tables()
    return url


def engine_of(url: str) -> sa.Engine:
    return sa.create_engine(url.replace("postgresql://", "postgresql+psycopg2://", 1))


def insert(url: str, table: str, **row: Any) -> None:
    """A row written with plain SQL (not through the provider's table objects)."""
    columns = ", ".join(row)
    values = ", ".join(f":{c}" for c in row)
    engine = engine_of(url)
    with engine.begin() as conn:
        conn.execute(sa.text(f"INSERT INTO {table} ({columns}) VALUES ({values})"), row)
    engine.dispose()


def seed(url: str) -> None:
    insert(url, "dc_framework_connections", connection_id="c-land", workspace_id=WS, name="landing", format="csv",
           configure=json.dumps({"base_path": "./lake/landing", "read_options": {"sep": ";"}}), is_active=True)  # fmt: skip
    insert(url, "dc_framework_connections", connection_id="c-lake", workspace_id=WS, name="lake", format="delta",
           configure='{"base_path": "./lake/silver"}', is_active=True)  # fmt: skip
    insert(url, "dc_framework_connections", connection_id="c-other", workspace_id="hr", name="hr_files",
           format="csv", is_active=True)  # fmt: skip
    insert(url, "dc_framework_dataflows", dataflow_id="d-orders", workspace_id=WS, name="orders", stage="bronze",
           is_active=True, source_connection_id="c-land", source_table="orders",
           source_watermark_columns="updated_at, id", destination_connection_id="c-lake",
           destination_table="orders", destination_load_type="merge_upsert", destination_merge_keys='["id"]',
           transform='{"select_columns": ["id", "updated_at"]}')  # fmt: skip
    insert(url, "dc_framework_dataflows", dataflow_id="d-old", workspace_id=WS, name="old", stage="bronze",
           is_active=True, source_connection_id="c-land", source_table="old", destination_connection_id="c-lake",
           destination_table="old", deleted_at=datetime(2026, 1, 1))  # fmt: skip
    insert(url, "dc_framework_dataflows", dataflow_id="d-hr", workspace_id="hr", name="people", stage="bronze",
           is_active=True, source_connection_id="c-other", source_table="people",
           destination_connection_id="c-other", destination_table="people")  # fmt: skip
    insert(url, "dc_framework_schema_hints", schema_hint_id="h1", workspace_id=WS, connection_id="c-land",
           table_name="orders", column_name="updated_at", data_type="timestamp", is_active=True)  # fmt: skip


def provider(url: str, tmp_path: Path, workspace: str = WS) -> DatabaseProvider:
    return DatabaseProvider(f"{url}?workspace_id={workspace}", state_base_path=tmp_path / "state")


def test_reads_the_workspace_rows_and_leaves_deleted_ones_out(database: str, tmp_path: Path) -> None:
    seed(database)
    with provider(database, tmp_path) as meta:
        (orders,) = meta.get_dataflows(stage="bronze")
        assert orders.name == "orders"
        assert orders.workspace_id == WS
        assert orders.source.connection.name == "landing"
        assert orders.source.connection.read_options == {"sep": ";"}
        assert orders.source.watermark_columns == ["updated_at", "id"]
        assert (orders.destination.load_type, orders.destination.merge_keys) == ("merge_upsert", ["id"])
        assert orders.transform.select_columns == ["id", "updated_at"]
        assert [c.name for c in meta.get_connections()] == ["lake", "landing"]  # not hr's
        assert meta.get_dataflow_by_id("d-old") is None  # soft-deleted
        assert [h.column_name for h in meta.get_schema_hints("c-land", "orders")] == ["updated_at"]
    with provider(database, tmp_path, "hr") as hr:
        assert [d.name for d in hr.get_dataflows()] == ["people"]


def test_bad_rows_are_located_by_table_id_and_column(database: str, tmp_path: Path) -> None:
    seed(database)
    insert(database, "dc_framework_dataflows", dataflow_id="d-bad", workspace_id=WS, name="bad", is_active=True,
           source_connection_id="c-land", source_table="bad", destination_connection_id="c-gone",
           destination_table="bad", destination_load_type="merge_upsrt", transform='{"select_columns": [')  # fmt: skip
    with pytest.raises(MetadataError) as raised:
        provider(database, tmp_path).initialize()
    paths = {i.path: i.message for i in raised.value.issues}
    assert "invalid JSON" in paths["dc_framework_dataflows (dataflow_id 'd-bad'), column transform"]
    assert (
        "connection 'c-gone' is not defined"
        in paths["dc_framework_dataflows (dataflow_id 'd-bad'), column destination_connection_id"]
    )
    assert (
        "did you mean 'merge_upsert'?"
        in paths["dc_framework_dataflows (dataflow_id 'd-bad'), column destination_load_type"]
    )


def test_watermarks_are_saved_in_one_transaction_and_never_move_backward(database: str, tmp_path: Path) -> None:
    seed(database)
    meta = provider(database, tmp_path)
    manager = WatermarkManager(meta)
    assert manager.get_watermark("d-orders") is None
    manager.save_watermark("d-orders", {"updated_at": datetime(2026, 3, 2)}, job_id="j1", dataflow_run_id="r1")
    manager.save_watermark("d-orders", {"updated_at": datetime(2026, 3, 1)}, job_id="j2", dataflow_run_id="r2")
    assert manager.get_watermark("d-orders") == {"updated_at": datetime(2026, 3, 2)}  # not backward
    manager.save_watermark("d-orders", {"updated_at": datetime(2026, 3, 5)}, job_id="j3", dataflow_run_id="r3")
    engine = engine_of(database)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT current_value, previous_value, job_id, dataflow_run_id "
                                    "FROM dc_framework_watermarks")).all()  # fmt: skip
    engine.dispose()
    ((current, previous, job, run),) = rows
    assert json.loads(current) == {"updated_at": {"__datetime__": "2026-03-05T00:00:00"}}
    assert json.loads(previous) == {"updated_at": {"__datetime__": "2026-03-02T00:00:00"}}
    assert (job, run) == ("j3", "r3")


def test_a_failure_inside_the_lock_rolls_the_save_back(database: str, tmp_path: Path) -> None:
    seed(database)
    meta = provider(database, tmp_path)
    meta.update_watermark("d-orders", '{"id": 1}')

    def save_then_crash() -> None:
        with meta.watermark_lock("d-orders"):
            meta.update_watermark("d-orders", '{"id": 2}')
            assert meta.get_watermark("d-orders") == '{"id": 2}'  # the lock's own transaction sees it
            raise RuntimeError("crash before commit")

    with pytest.raises(RuntimeError, match="crash"):
        save_then_crash()
    assert meta.get_watermark("d-orders") == '{"id": 1}'


def test_concurrent_saves_keep_the_maximum(database: str, tmp_path: Path) -> None:
    seed(database)
    values = list(range(1, 25))
    errors: list[BaseException] = []

    def save(value: int) -> None:
        try:  # each thread its own provider: its own connections, as separate processes would have
            WatermarkManager(provider(database, tmp_path)).save_watermark("d-orders", {"id": value})
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=save, args=(v,)) for v in reversed(values)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    assert WatermarkManager(provider(database, tmp_path)).get_watermark("d-orders") == {"id": max(values)}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens there


def test_an_unreachable_database_is_an_error_never_no_watermark(tmp_path: Path) -> None:
    url = f"postgresql://meta:s3cret-pw@127.0.0.1:{closed_port()}/meta?workspace_id={WS}"
    meta = DatabaseProvider(url, state_base_path=tmp_path / "state")
    with pytest.raises(
        WatermarkError, match=r"failed \(an outage is not 'no watermark'; nothing was saved\)"
    ) as raised:
        WatermarkManager(meta).get_watermark("d-orders")
    with pytest.raises(WatermarkError, match="an outage is not 'no watermark'"):
        WatermarkManager(meta).save_watermark("d-orders", {"id": 3})
    with pytest.raises(MetadataError, match="cannot read the metadata database") as metadata_error:
        meta.initialize()
    for text in (str(raised.value), str(metadata_error.value)):
        assert "s3cret-pw" not in text
        assert "meta:***@127.0.0.1" in text


def test_a_url_without_workspace_or_tables_is_refused_with_the_fix(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with pytest.raises(MetadataError, match=r"does not exist"):
        DatabaseProvider(url + "?workspace_id=x", state_base_path=tmp_path)
    sa.create_engine(url).connect().close()
    with pytest.raises(MetadataError, match=r"needs a workspace: add \?workspace_id=<workspace> to the URL"):
        DatabaseProvider(url, state_base_path=tmp_path)
    with pytest.raises(MetadataError, match=r"no such table.*create them with DatabaseProvider.create_tables\(\)"):
        DatabaseProvider(url + "?workspace_id=x", state_base_path=tmp_path).initialize()


@pytest.mark.postgres
@pytest.mark.slow
def test_a_database_going_away_between_read_and_save_fails_the_save_and_writes_nothing(
    postgres_server: str, tmp_path: Path
) -> None:
    url = fresh_postgres_database(postgres_server)
    DatabaseProvider(url, state_base_path=tmp_path, workspace_id=WS).create_tables()
    seed(url)
    meta = provider(url, tmp_path)
    manager = WatermarkManager(meta)
    manager.save_watermark("d-orders", {"id": 1})
    name = url.rsplit("/", 1)[1]
    admin = psycopg2.connect(postgres_server)
    admin.autocommit = True
    try:  # the database refuses connections and its open sessions are cut: an outage as clients see it
        admin.cursor().execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        admin.cursor().execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
        with pytest.raises(WatermarkError, match="an outage is not 'no watermark'"):
            manager.save_watermark("d-orders", {"id": 2})
        with pytest.raises(WatermarkError, match="an outage is not 'no watermark'"):
            manager.get_watermark("d-orders")
    finally:
        admin.cursor().execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        admin.close()
    assert manager.get_watermark("d-orders") == {"id": 1}  # nothing was written


@pytest.mark.postgres
@pytest.mark.slow
def test_the_password_can_stay_out_of_the_url(
    postgres_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libpq's PGPASSWORD: the URL (shown in the Dagster UI as resource config) holds no secret."""
    url = fresh_postgres_database(postgres_server)
    DatabaseProvider(url, state_base_path=tmp_path, workspace_id=WS).create_tables()
    seed(url)
    parsed = sa.engine.make_url(url)
    monkeypatch.setenv("PGPASSWORD", parsed.password or "")
    bare = sa.engine.URL.create(parsed.drivername, parsed.username, None, parsed.host, parsed.port, parsed.database)
    without = bare.render_as_string(hide_password=False)
    assert ":" not in without.split("//", 1)[1].split("@", 1)[0]  # user only
    assert [d.name for d in provider(without, tmp_path).get_dataflows()] == ["orders"]
