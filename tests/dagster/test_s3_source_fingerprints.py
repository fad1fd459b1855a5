"""Source sensors on object storage: an S3 folder and an S3 Delta table are fingerprinted with the
source connection's options (secrets from the environment), nothing bound by a run beforehand."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import write_deltalake

from datacoolie_core import FileProvider
from datacoolie_core.platform.storage import clear_storage_bindings
from datacoolie_dagster.automation.sensing.observations import fingerprint_source
from datacoolie_dagster.location.tables import source_refs
from tests.core.object_storage.lake import S3Lake, orders
from tests.support.s3 import S3Server

pytestmark = [pytest.mark.slow, pytest.mark.s3]


def test_s3_sources_are_fingerprinted_with_their_connections_options(s3: S3Server, tmp_path: Path) -> None:
    lake = S3Lake(s3, tmp_path)
    lake.write_metadata(
        [{"name": "files", "source": {"connection_name": "landing", "schema_name": "sales", "table": "orders"},
          "destination": {"connection_name": "lake", "schema_name": "bronze", "table": "orders"}},
         {"name": "table", "source": {"connection_name": "lake", "schema_name": "bronze", "table": "orders"},
          "destination": {"connection_name": "lake", "schema_name": "silver", "table": "orders"}}]
    )  # fmt: skip
    lake.land("sales/orders", "a", orders([1], [10]))
    lake.land("sales/orders", "b", orders([2], [20]))
    table_url = f"{lake.lake}/bronze/orders"
    write_deltalake(table_url, orders([1], [10]).to_arrow(), storage_options=s3.storage_options)
    write_deltalake(table_url, orders([2], [20]).to_arrow(), mode="append", storage_options=s3.storage_options)
    clear_storage_bindings()
    dataflows = {d.name: d for d in FileProvider(lake.metadata).get_dataflows()}
    files = fingerprint_source(dataflows["files"], source_refs(dataflows["files"]))
    assert files["files"] == 2
    table = fingerprint_source(dataflows["table"], source_refs(dataflows["table"]))
    assert list(table["delta_versions"].values()) == [1]
