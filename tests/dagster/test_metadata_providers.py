"""The code location built from metadata in a database (SQLite) or behind an API: assets, a real
materialization, watermarks in the provider's store, and a snapshot digest of the parsed document."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
import sqlalchemy as sa

from datacoolie_core.metadata.database_provider import DatabaseProvider
from datacoolie_core.redaction import clear_secrets
from datacoolie_dagster import build_definitions
from datacoolie_dagster.automation.sensing.watermark_feed import FileWatermarkFeed
from datacoolie_dagster.location.snapshot import read_snapshot
from tests.dagster.conftest import LINEAGE, key, land_lineage, materialize, materialized, write_metadata
from tests.support.api_server import API_KEY, State, serve
from tests.support.metadata_db import write_metadata_database

WS = "sales"
BRONZE_ORDERS = "bronze/sales/orders"


def metadata_database(root: Path) -> str:
    """The lineage fixture as rows of a SQLite metadata database; its URL names the workspace."""
    url = f"sqlite:///{root / 'metadata.db'}"
    sa.create_engine(url).connect().close()
    DatabaseProvider(url, state_base_path=root / "state", workspace_id=WS).create_tables()
    write_metadata_database(json.loads(LINEAGE.read_text()), url, WS)
    return f"{url}?workspace_id={WS}"


def asset_keys(defs: dg.Definitions) -> set[dg.AssetKey]:
    return set(defs.resolve_asset_graph().get_all_asset_keys())


def bronze_orders(root: Path) -> list[int]:
    return sorted(pl.read_delta(str(root / "lake" / "bronze" / "sales" / "orders"))["order_id"].to_list())


@pytest.fixture
def api(lake: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, State]]:
    document = json.loads(LINEAGE.read_text())
    monkeypatch.setenv("DATACOOLIE_METADATA_API_KEY", API_KEY)
    with serve(State()) as (base, state):
        state.metadata = {"connections": document["connections"], "dataflows": document["dataflows"],
                          "schema-hints": document.get("schema_hints", [])}  # fmt: skip
        yield f"{base}/workspaces/{WS}", state
    clear_secrets()


def test_a_database_code_location_has_the_file_s_assets_and_materializes_one(
    lake: Path, instance: dg.DagsterInstance
) -> None:
    url = metadata_database(lake)
    defs = build_definitions(url, state_base_path=lake / "state")
    (lake / "file").mkdir()
    from_file = build_definitions(write_metadata(lake / "file", LINEAGE), state_base_path=lake / "file-state")
    assert asset_keys(defs) == asset_keys(from_file)

    land_lineage(lake)
    result = materialize(defs, instance, [BRONZE_ORDERS])
    assert result.success
    assert materialized(result) == [(BRONZE_ORDERS, None)]
    assert instance.get_latest_materialization_event(key(BRONZE_ORDERS)) is not None
    assert bronze_orders(lake) == [1, 2, 3]
    engine = sa.create_engine(url.split("?")[0])
    with engine.connect() as conn:
        stored = dict(conn.execute(sa.text("SELECT dataflow_id, current_value FROM dc_framework_watermarks")).all())
    engine.dispose()
    assert len(stored) == 2  # the EU and US extracts feeding bronze orders, saved in the database
    assert all("updated_at" in json.loads(v) for v in stored.values())
    feed = FileWatermarkFeed(url, state_base_path=lake / "state")  # what the watermark sensor reads
    for dataflow_id, text in stored.items():
        reading = feed.read(dataflow_id)
        assert reading is not None
        assert reading.text == text
        assert reading.writer_run_id is not None  # the settled commit record names the dataflow run


def test_the_snapshot_digest_of_a_database_follows_its_rows(lake: Path) -> None:
    url = metadata_database(lake)
    first = read_snapshot(url, state_base_path=lake / "state")
    assert read_snapshot(url, state_base_path=lake / "state").digest == first.digest  # same rows, same digest
    assert first.path.startswith("sqlite:///")
    assert "workspace_id" not in first.path
    engine = sa.create_engine(url.split("?")[0])
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE dc_framework_dataflows SET execution_order = 7 "
                             "WHERE name = 'orders_eu_to_bronze'"))  # fmt: skip
    engine.dispose()
    assert read_snapshot(url, state_base_path=lake / "state").digest != first.digest


def test_an_api_code_location_materializes_with_watermarks_in_the_api(
    lake: Path, instance: dg.DagsterInstance, api: tuple[str, State]
) -> None:
    url, state = api
    defs = build_definitions(url, state_base_path=lake / "state")
    assert key(BRONZE_ORDERS) in asset_keys(defs)
    land_lineage(lake)
    result = materialize(defs, instance, [BRONZE_ORDERS])
    assert result.success
    assert bronze_orders(lake) == [1, 2, 3]
    assert len(state.watermarks) == 2
    assert all("updated_at" in json.loads(w["current_value"]) for w in state.watermarks.values())
    first = read_snapshot(url, state_base_path=lake / "state").digest
    state.metadata["dataflows"][0]["description"] = "changed in the API"
    assert read_snapshot(url, state_base_path=lake / "state").digest != first


def test_a_url_without_a_state_path_is_refused_at_load(lake: Path) -> None:
    with pytest.raises(Exception, match=r"needs a state path \(--state-path / state_base_path\)"):
        build_definitions(metadata_database(lake))


def test_the_component_takes_a_database_url_as_metadata_path(lake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster.components.testing import create_defs_folder_sandbox

    from datacoolie_dagster import DataCoolieComponent

    url = metadata_database(lake)
    with create_defs_folder_sandbox() as sandbox:
        folder = sandbox.scaffold_component(component_cls=DataCoolieComponent, defs_path="datacoolie")
        (folder / "defs.yaml").write_text(
            "type: datacoolie_dagster.DataCoolieComponent\n"
            f'attributes:\n  metadata_path: "{url}"\n  state_base_path: data/state\n  include_sensors: false\n',
            encoding="utf-8",
        )
        monkeypatch.chdir(sandbox.project_root)
        with sandbox.build_all_defs() as defs:
            resource = defs.resources["datacoolie"]
            keys = asset_keys(defs)
    assert resource.metadata_path == url  # kept as given, not joined to the project root
    assert resource.state_base_path == str(sandbox.project_root / "data/state")
    assert key(BRONZE_ORDERS) in keys


def test_datacoolie_run_with_a_database_records_in_a_dagster_instance(
    lake: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from datacoolie_core.cli import main

    url = metadata_database(lake)
    home = lake / "dagster_home"
    home.mkdir()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.get_runs(limit=1)  # the storages exist before the run's process uses them
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    land_lineage(lake)
    argv = ["run", "--metadata", url, "--state-path", str(lake / "state"), "--stage", "landing2bronze",
            "--observer", f"dagster={home}"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    assert "dagster: recorded 2 materialization(s) of 2 table(s)" in capsys.readouterr().err
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.fetch_materializations(key(BRONZE_ORDERS), limit=10).records


@pytest.mark.slow
def test_a_run_fails_when_a_database_row_changed_since_load_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Step processes re-read the database (the multiprocess executor): an edited row is caught."""
    from tests.dagster import snapshot_location
    from tests.dagster.conftest import REPOSITORY

    monkeypatch.chdir(REPOSITORY)  # step processes import the location from here
    document = json.loads(LINEAGE.read_text())
    for connection in document["connections"]:
        connection["configure"]["base_path"] = str(tmp_path / connection["configure"]["base_path"])
    database = tmp_path / "metadata.db"
    sa.create_engine(f"sqlite:///{database}").connect().close()
    DatabaseProvider(f"sqlite:///{database}", state_base_path=tmp_path, workspace_id=WS).create_tables()
    write_metadata_database(document, f"sqlite:///{database}", WS)
    land_lineage(tmp_path)
    monkeypatch.setenv("DATACOOLIE_TEST_METADATA", f"sqlite:///{database}?workspace_id={WS}")
    monkeypatch.setenv("DATACOOLIE_TEST_STATE", str(tmp_path / "state"))
    snapshot_location.defs.cache_clear()
    try:
        snapshot_location.stage_job()  # the code location loads
        engine = sa.create_engine(f"sqlite:///{database}")
        with engine.begin() as conn:  # edited before the run: each step process reads the new rows
            conn.execute(sa.text("UPDATE dc_framework_dataflows SET destination_table = 'orders_v2' "
                                 "WHERE destination_table = 'orders' AND stage = 'landing2bronze'"))  # fmt: skip
        engine.dispose()
        with dg.instance_for_test() as instance:
            result = dg.execute_job(dg.reconstructable(snapshot_location.stage_job), instance=instance)
            assert not result.success
            failures = [
                e.dagster_event.step_failure_data.error.message
                for e in instance.all_logs(result.run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
                if e.dagster_event and e.dagster_event.step_failure_data and e.dagster_event.step_failure_data.error
            ]
            assert instance.all_logs(result.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION) == []
    finally:
        snapshot_location.defs.cache_clear()
    (message,) = failures
    assert f"metadata sqlite:///{database} changed since the code location loaded it" in message
    assert "reload the code location" in message
    assert not list((tmp_path / "lake").rglob("_delta_log"))
