"""The source sensor's fingerprint of an Iceberg source: the table's current snapshot id, read from
the catalog. A commit by another writer (here pyiceberg itself) changes it; an Iceberg query is not
sensed."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from datacoolie_core import FileProvider
from datacoolie_core.errors import SourceError
from datacoolie_dagster.automation.sensing.observations import fingerprint_source
from datacoolie_dagster.automation.sensing.sensable import has_data, is_sensable
from datacoolie_dagster.location.tables import source_refs
from tests.support.iceberg import catalog_configure, seed_catalog, seed_table


def _dataflows(tmp_path: Path, source: dict[str, object]) -> dict[str, object]:
    document = {
        "connections": [
            {"name": "src", "connection_type": "lakehouse", "format": "iceberg", "configure": catalog_configure(tmp_path)},
            {"name": "lake", "format": "delta", "configure": {"base_path": str(tmp_path / "delta")}},
        ],
        "dataflows": [
            {"name": "orders", "source": {"connection_name": "src", **source},
             "destination": {"connection_name": "lake", "table": "orders", "load_type": "append"}}
        ],
    }  # fmt: skip
    (tmp_path / "metadata.json").write_text(json.dumps(document))
    return {d.name: d for d in FileProvider(tmp_path / "metadata.json").get_dataflows()}


def test_an_iceberg_table_is_fingerprinted_by_its_current_snapshot(tmp_path: Path) -> None:
    table = seed_table(tmp_path, ("sales", "orders"), pl.DataFrame({"id": [1, 2]}))
    orders = _dataflows(tmp_path, {"schema_name": "sales", "table": "orders"})["orders"]
    refs = source_refs(orders)
    assert is_sensable(orders, refs)

    first = fingerprint_source(orders, refs)
    assert first == {"iceberg_snapshots": {"sales.orders": table.current_snapshot().snapshot_id}}
    assert has_data(first)
    assert fingerprint_source(orders, refs) == first  # nothing committed: the same

    table.refresh().append(pl.DataFrame({"id": [3]}).to_arrow())
    second = fingerprint_source(orders, refs)
    assert second != first
    assert second["iceberg_snapshots"]["sales.orders"] == table.refresh().current_snapshot().snapshot_id


def test_an_empty_table_has_no_data_and_a_missing_one_is_a_source_error(tmp_path: Path) -> None:
    catalog = seed_catalog(tmp_path)
    catalog.create_namespace_if_not_exists(("sales",))
    catalog.create_table(("sales", "orders"), schema=pl.DataFrame({"id": [1]}).to_arrow().schema)
    dataflows = _dataflows(tmp_path, {"schema_name": "sales", "table": "orders"})
    empty = fingerprint_source(dataflows["orders"], source_refs(dataflows["orders"]))
    assert empty == {"iceberg_snapshots": {"sales.orders": None}}
    assert not has_data(empty)

    missing = _dataflows(tmp_path, {"schema_name": "sales", "table": "order"})["orders"]
    with pytest.raises(SourceError, match=r"no Iceberg table 'sales.order'.*did you mean 'sales.orders'"):
        fingerprint_source(missing, source_refs(missing))


def test_an_iceberg_query_is_not_sensed(tmp_path: Path) -> None:
    seed_table(tmp_path, ("sales", "orders"), pl.DataFrame({"id": [1]}))
    query = _dataflows(tmp_path, {"schema_name": "sales", "query": "SELECT id FROM orders"})["orders"]
    assert not is_sensable(query, source_refs(query))
