"""Probing a source without reading its data: the fingerprint changes when, and only when, new
data arrives (real files, a real Delta table, a real SQLite database)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from deltalake import write_deltalake

from datacoolie_core import Connection, DataFlow
from datacoolie_core.api import source_fingerprint
from datacoolie_core.errors import SourceError
from datacoolie_core.sources.probe import jsonable, open_delta

ROWS = pl.DataFrame({"id": [1, 2], "updated_at": ["2024-01-01", "2024-01-02"]})


def make_dataflow(connection: dict[str, Any], **source: Any) -> DataFlow:
    conn = Connection.model_validate({"name": "src", **connection})
    lake = Connection.model_validate({"name": "lake", "format": "delta", "configure": {"base_path": "/tmp/unused"}})
    return DataFlow.model_validate(
        {"name": "flow", "source": {"connection_name": "src", **source},
         "destination": {"connection_name": "lake", "table": "out"}},
        context={"connections": {"src": conn, "lake": lake}},
    )  # fmt: skip


def test_a_new_file_changes_a_file_sources_fingerprint(tmp_path: Path) -> None:
    folder = tmp_path / "orders"
    folder.mkdir()
    ROWS.write_parquet(folder / "batch_001.parquet")
    flow = make_dataflow({"format": "parquet", "configure": {"base_path": str(tmp_path)}}, table="orders")
    first = source_fingerprint(flow)
    assert first["files"] == 1
    assert source_fingerprint(flow) == first  # nothing new, the same fingerprint
    ROWS.write_parquet(folder / "batch_002.parquet")
    assert source_fingerprint(flow)["files"] == 2


def test_a_delta_commit_changes_a_delta_sources_fingerprint(tmp_path: Path) -> None:
    table = tmp_path / "events"
    write_deltalake(str(table), ROWS.to_arrow())
    flow = make_dataflow({"format": "delta", "configure": {"base_path": str(tmp_path)}}, table="events")
    paths = {"events": [str(tmp_path / "missing"), str(table)]}  # the first path holding a table counts
    assert source_fingerprint(flow, paths) == {"delta_versions": {"events": 0}}
    write_deltalake(str(table), ROWS.to_arrow(), mode="append")
    assert source_fingerprint(flow, paths) == {"delta_versions": {"events": 1}}


def test_a_new_row_changes_a_database_sources_fingerprint(tmp_path: Path) -> None:
    database = tmp_path / "crm.db"
    with closing(sqlite3.connect(database)) as conn, conn:
        conn.execute("CREATE TABLE customers (id INTEGER, updated_at TEXT)")
        conn.execute("INSERT INTO customers VALUES (1, '2024-01-01')")
    flow = make_dataflow(
        {"format": "sql", "configure": {"database_type": "sqlite", "database": str(database)}},
        table="customers",
        watermark_columns=["updated_at"],
    )
    assert source_fingerprint(flow) == {"rows": 1, "max": {"updated_at": "2024-01-01"}}
    with closing(sqlite3.connect(database)) as conn, conn:
        conn.execute("INSERT INTO customers VALUES (2, '2024-02-01')")
    assert source_fingerprint(flow) == {"rows": 2, "max": {"updated_at": "2024-02-01"}}


def test_no_delta_table_is_a_source_error_naming_the_paths(tmp_path: Path) -> None:
    with pytest.raises(
        SourceError, match=r"flow: no Delta table at '.*nothing' \(resolved against .*\); create the table"
    ):
        open_delta([str(tmp_path / "nothing")], "flow")


def test_a_missing_folder_is_a_source_error(tmp_path: Path) -> None:
    flow = make_dataflow({"format": "parquet", "configure": {"base_path": str(tmp_path)}}, table="absent")
    with pytest.raises(SourceError, match="absent"):
        source_fingerprint(flow)


@pytest.mark.parametrize(
    ("value", "kept"),
    [(None, None), (3, 3), ("x", "x"), (date(2024, 1, 2), "2024-01-02"),
     (Decimal("1.50"), "1.50")],
    ids=["none", "int", "text", "date", "decimal"],
)  # fmt: skip
def test_jsonable(value: Any, kept: Any) -> None:
    assert jsonable(value) == kept
