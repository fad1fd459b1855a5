"""An Iceberg SQL catalog on a real PostgreSQL server: written, read back independently, read incrementally."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import polars as pl
import psycopg2
import pytest
from polars.testing import assert_frame_equal
from pyiceberg.catalog import load_catalog

from datacoolie_core.destinations import IcebergWriter
from tests.core.destinations.builders import batch, marker, stored
from tests.core.destinations.test_iceberg_writer import iceberg_destination
from tests.core.sources.helpers import make_source, read_ok

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


@pytest.fixture(scope="module")
def catalog_uri(postgres_url: str) -> str:
    """A fresh database on a real server, as a SQLAlchemy URI for pyiceberg's SQL catalog."""
    name = f"iceberg_{uuid.uuid4().hex[:10]}"
    admin = psycopg2.connect(postgres_url)
    admin.autocommit = True
    admin.cursor().execute(f'CREATE DATABASE "{name}"')
    admin.close()
    parts = urlsplit(postgres_url)
    return urlunsplit(("postgresql+psycopg2", parts.netloc, f"/{name}", "", ""))


def test_a_postgresql_catalog(tmp_path: Path, catalog_uri: str) -> None:
    connection = {"catalog_properties": {"type": "sql", "uri": catalog_uri}}
    dest = iceberg_destination(tmp_path, load_type="merge_upsert", merge_keys=["id"], connection=connection)
    writer = IcebergWriter()
    # load 1 — creates the table (the catalog's rows in PostgreSQL, its files under base_path)
    writer.write(batch([(1, "a", 10), (2, "b", 20)], load=1), dest, marker=marker(1))
    # load 2 — an update and a new key
    writer.write(batch([(2, "B", 21), (3, "c", 30)], load=2), dest, marker=marker(2))
    independent = load_catalog("lake", type="sql", uri=catalog_uri)
    table = independent.load_table(("silver", "orders"))
    back = pl.from_arrow(table.scan().to_arrow())
    assert isinstance(back, pl.DataFrame)
    assert_frame_equal(back.sort("id"), stored([(1, "a", 10, 1, 1), (2, "B", 21, 1, 2), (3, "c", 30, 2, 2)]))
    assert writer.log_state(dest, "datacoolie:orders").sequence == 2
    # and read incrementally by the Iceberg reader, through the same catalog
    source = make_source(
        {"name": "lake", "format": "iceberg", "configure": {"base_path": str(tmp_path / "lake")} | connection},
        schema_name="silver",
        table="orders",
        watermark_columns=["__updated_at"],
    )
    result = read_ok(source, {"__updated_at": datetime(2024, 1, 11, tzinfo=UTC)})
    assert sorted(result.data["id"].to_list()) == [2, 3]
