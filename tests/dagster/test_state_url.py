"""State in PostgreSQL from the Dagster side: ``build_definitions(state_url=…)``, the resource and
the component's ``state_url`` (read from the environment, as deployments pass secrets).

Real PostgreSQL (``postgres`` + ``slow``), real Delta tables, real in-process materializations.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import dagster as dg
import polars as pl
import psycopg2
import pytest
from dagster.components.testing import create_defs_folder_sandbox

from datacoolie_dagster import DataCoolieComponent
from tests.dagster.conftest import LINEAGE, land_lineage, materialize, write_metadata


@pytest.fixture
def state_url(postgres_server: str) -> str:
    """A fresh, empty database for the state."""
    name = f"state_{uuid.uuid4().hex[:12]}"
    admin = psycopg2.connect(postgres_server)
    try:
        admin.autocommit = True
        admin.cursor().execute(f'CREATE DATABASE "{name}"')
    finally:
        admin.close()
    parts = urlsplit(postgres_server)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", "", ""))


def stored(url: str) -> list[tuple[str, str]]:
    with psycopg2.connect(url) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT state_key, dataflow_run_id FROM datacoolie_state.watermarks ORDER BY state_key")
        return list(cursor.fetchall())


def test_materializations_keep_their_watermarks_in_postgresql(
    lake: Path, instance: dg.DagsterInstance, state_url: str
) -> None:
    from datacoolie_dagster import build_definitions

    defs = build_definitions(write_metadata(lake, LINEAGE), state_url=state_url, include_sensors=False)
    land_lineage(lake)
    first = materialize(defs, instance, ["bronze/sales/orders"])
    assert first.success
    rows = stored(state_url)
    assert len(rows) == 2  # the fan-in table's two dataflows (EU and US orders)
    assert all(key.startswith("landing2bronze_") for key, _ in rows)  # the file store's folder names are the keys
    assert all(run for _, run in rows)  # the dataflow run that saved each
    assert not list(lake.rglob("watermark_value.json"))  # nothing in files
    table = lake / "lake" / "bronze" / "sales" / "orders"
    assert pl.read_delta(str(table)).height == 3
    # a second materialization reads on from the stored watermarks: nothing new, nothing appended again
    again = materialize(defs, instance, ["bronze/sales/orders"])
    assert again.success
    assert pl.read_delta(str(table)).height == 3
    assert stored(state_url) == rows  # no save moved them


@pytest.fixture
def sandbox() -> Iterator[object]:
    with create_defs_folder_sandbox() as sandbox:
        yield sandbox


def test_the_component_takes_its_state_url_from_the_environment(
    sandbox: object, state_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = sandbox.scaffold_component(component_cls=DataCoolieComponent, defs_path="datacoolie")  # type: ignore[attr-defined]
    root: Path = sandbox.project_root  # type: ignore[attr-defined]
    write_metadata(root, LINEAGE)
    (folder / "defs.yaml").write_text(
        "type: datacoolie_dagster.DataCoolieComponent\n"
        "attributes:\n"
        "  metadata_path: metadata.json\n"
        '  state_url: "{{ env.DATACOOLIE_STATE_URL }}"\n'
        "  include_sensors: false\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("DATACOOLIE_STATE_URL", state_url)
    monkeypatch.chdir(root)
    with sandbox.build_all_defs() as defs, dg.DagsterInstance.ephemeral() as instance:  # type: ignore[attr-defined]
        resource = defs.resources["datacoolie"]
        assert (resource.state_url, resource.state_base_path) == (state_url, None)
        land_lineage(root)
        job = defs.resolve_implicit_global_asset_job_def()
        result = job.execute_in_process(
            instance=instance, asset_selection=[dg.AssetKey.from_user_string("bronze/sales/orders")]
        )
    assert result.success
    assert len(stored(state_url)) == 2
