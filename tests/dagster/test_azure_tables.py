"""DataCoolie tables and sources on ``abfss://`` (ADLS Gen2 URLs), against Azurite.

Azurite emulates the Blob API, which is what delta-rs, Polars and obstore speak for an ``abfss://``
URL (the ``dfs`` host names the account; the requests go to ``azure_endpoint``). The connections
name the account's key through ``secrets_ref``: a parquet landing folder loaded into a Delta table
twice (the watermark holds between runs), and the source sensors' fingerprints of the folder and
of the Delta table, each read with the connection's own options and nothing bound beforehand.
"""

from __future__ import annotations

import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest

from datacoolie_core import FileProvider
from datacoolie_core.platform.storage import clear_storage_bindings
from datacoolie_dagster import build_definitions
from datacoolie_dagster.automation.sensing.observations import fingerprint_source
from datacoolie_dagster.location.tables import source_refs
from tests.dagster.conftest import key, materialize
from tests.support.azurite import ACCOUNT, ACCOUNT_KEY, KEY_VAR, NAME_VAR, AzuriteServer, abfss

pytestmark = [pytest.mark.slow, pytest.mark.azurite]
BRONZE = key("bronze/sales/orders")


@pytest.fixture(scope="module")
def azurite(azurite_server: AzuriteServer) -> AzuriteServer:
    """The Azurite server of the test process (``tests/conftest.py``); each test makes its own container."""
    return azurite_server


@pytest.fixture
def container(azurite: AzuriteServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """A container of its own; the account's secrets in the environment, as ``secrets_ref`` names them."""
    monkeypatch.setenv(NAME_VAR, ACCOUNT)
    monkeypatch.setenv(KEY_VAR, ACCOUNT_KEY)
    return azurite.container()


def connection(name: str, fmt: str, base_path: str, server: AzuriteServer) -> dict[str, Any]:
    return {
        "name": name,
        "format": fmt,
        "configure": {
            "base_path": base_path,
            "storage_options": {"azure_endpoint": server.endpoint, "azure_allow_http": "true"},
            "azure_storage_account_name": NAME_VAR,
            "azure_storage_account_key": KEY_VAR,
        },
        "secrets_ref": {"env:": ["azure_storage_account_name", "azure_storage_account_key"]},
    }


def write_metadata(root: Path, container: str, server: AzuriteServer) -> Path:
    document = {
        "connections": [
            connection("landing", "parquet", abfss(container, "landing"), server),
            connection("bronze", "delta", abfss(container, "lake/bronze"), server),
        ],
        "dataflows": [
            {"name": "orders_to_bronze",
             "source": {"connection_name": "landing", "schema_name": "sales", "table": "orders",
                        "watermark_columns": ["updated_at"]},
             "destination": {"connection_name": "bronze", "schema_name": "sales", "table": "orders",
                             "load_type": "append"}},
            {"name": "bronze_table",
             "source": {"connection_name": "bronze", "schema_name": "sales", "table": "orders"},
             "destination": {"connection_name": "bronze", "schema_name": "sales", "table": "orders_copy"}},
        ],
    }  # fmt: skip
    path = root / "metadata.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def land(server: AzuriteServer, container: str, batch: str, ids: list[int]) -> None:
    frame = pl.DataFrame({"order_id": ids, "amount": [float(i) for i in ids],
                          "updated_at": [datetime(2024, 1, i) for i in ids]})  # fmt: skip
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    server.put(abfss(container, f"landing/sales/orders/{batch}.parquet"), buffer.getvalue())


def test_an_abfss_lake_loads_once_per_row_and_its_sources_are_fingerprinted(
    azurite: AzuriteServer, container: str, tmp_path: Path
) -> None:
    metadata = write_metadata(tmp_path, container, azurite)
    defs = build_definitions(metadata, state_base_path=tmp_path / "state", include_sensors=False)
    table = abfss(container, "lake/bronze/sales/orders")
    land(azurite, container, "batch_001", [1, 2, 3])
    with dg.DagsterInstance.ephemeral() as instance:
        first = materialize(defs, instance, [BRONZE.to_user_string()])
        land(azurite, container, "batch_002", [4, 5])
        second = materialize(defs, instance, [BRONZE.to_user_string()])
    assert first.success
    assert second.success
    rows = pl.read_delta(table, storage_options=azurite.storage_options)
    assert sorted(rows["order_id"].to_list()) == [1, 2, 3, 4, 5]  # the second run appended only batch 2

    clear_storage_bindings()  # a sensor reads with the connection's own options, as a fresh process would
    dataflows = {d.name: d for d in FileProvider(metadata).get_dataflows()}
    files = fingerprint_source(dataflows["orders_to_bronze"], source_refs(dataflows["orders_to_bronze"]))
    assert files["files"] == 2
    delta = fingerprint_source(dataflows["bronze_table"], source_refs(dataflows["bronze_table"]))
    assert list(delta["delta_versions"].values()) == [1]
