"""Execution copies: query files read and secrets resolved on a deep copy, once (seed "Query files and preparation")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from datacoolie_core.models import Connection, DataFlow
from datacoolie_core.orchestration.preparation import QueryFileError, QueryRoots, prepare_dataflow
from datacoolie_core.platform import LocalPlatform
from datacoolie_core.redaction import mask
from datacoolie_core.secrets import SecretError

WAREHOUSE = {
    "name": "warehouse",
    "connection_type": "database",
    "configure": {"database_type": "postgresql", "host": "db", "username": "etl", "password": "WAREHOUSE_PASSWORD"},
    "secrets_ref": {"env:APP_": ["password"]},
}
LAKE = {
    "name": "lake",
    "format": "delta",
    "configure": {"base_path": "/lake", "token": "LAKE_TOKEN"},
    "secrets_ref": {"": ["token"]},
}


def dataflow(query: str = "orders/incremental.sql", **source: Any) -> DataFlow:
    connections = {c["name"]: Connection.model_validate(c) for c in (WAREHOUSE, LAKE)}
    return DataFlow.model_validate(
        {
            "name": "orders",
            "source": {"connection_name": "warehouse", "query": query, "watermark_columns": ["updated_at"], **source},
            "destination": {"connection_name": "lake", "table": "orders"},
        },
        context={"connections": connections},
    )


@pytest.fixture
def roots(tmp_path: Path) -> QueryRoots:
    sql = tmp_path / "sql" / "orders" / "incremental.sql"
    sql.parent.mkdir(parents=True)
    sql.write_text("SELECT * FROM sales.orders", encoding="utf-8")
    return QueryRoots(sql_base_paths=(tmp_path / "sql",))


@pytest.fixture
def secrets_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APP_WAREHOUSE_PASSWORD", "pw-value-1")
    monkeypatch.setenv("LAKE_TOKEN", "token-value-1")


@pytest.mark.usefixtures("secrets_set")
def test_the_copy_gets_the_sql_and_the_secrets_the_original_keeps_the_references(roots: QueryRoots) -> None:
    authored = dataflow()

    prepared = prepare_dataflow(authored, roots=roots, secrets=LocalPlatform())

    assert prepared.source.query == "SELECT * FROM sales.orders"
    assert prepared.source.connection.configure.password == "pw-value-1"
    assert prepared.destination.connection.configure.token == "token-value-1"
    assert authored.source.query == "orders/incremental.sql"
    assert authored.source.connection.configure.password == "WAREHOUSE_PASSWORD"
    assert authored.destination.connection.configure.token == "LAKE_TOKEN"


@pytest.mark.usefixtures("secrets_set")
def test_the_copy_is_independent_and_keeps_its_resolved_connections(roots: QueryRoots) -> None:
    authored = dataflow()

    prepared = prepare_dataflow(authored, roots=roots, secrets=LocalPlatform())
    prepared.source.watermark_columns.append("created_at")
    prepared.destination.merge_keys.append("order_id")

    assert authored.source.watermark_columns == ["updated_at"]
    assert authored.destination.merge_keys == []
    assert prepared.source.connection is not authored.source.connection
    assert prepared.destination.path == authored.destination.path == "/lake/orders"


def test_a_dry_run_reads_query_files_but_touches_no_secret(monkeypatch: pytest.MonkeyPatch, roots: QueryRoots) -> None:
    monkeypatch.delenv("APP_WAREHOUSE_PASSWORD", raising=False)

    prepared = prepare_dataflow(dataflow(), roots=roots, secrets=None)

    assert prepared.source.query == "SELECT * FROM sales.orders"
    assert prepared.source.connection.configure.password == "WAREHOUSE_PASSWORD"


def test_a_missing_secret_names_the_dataflow_and_leaks_no_value(
    monkeypatch: pytest.MonkeyPatch, roots: QueryRoots
) -> None:
    monkeypatch.delenv("APP_WAREHOUSE_PASSWORD", raising=False)
    monkeypatch.setenv("LAKE_TOKEN", "token-value-2")

    with pytest.raises(SecretError, match=r"dataflow 'orders', connection 'warehouse', configure\.password") as caught:
        prepare_dataflow(dataflow(), roots=roots, secrets=LocalPlatform())
    assert "token-value-2" not in str(caught.value) + repr(caught.value)


def test_a_bad_query_reference_names_the_dataflow(roots: QueryRoots) -> None:
    with pytest.raises(QueryFileError, match=r"source.query \(dataflow 'orders'\).*'\.\.' segments"):
        prepare_dataflow(dataflow("../escape.sql"), roots=roots, secrets=None)


def test_maintenance_preparation_resolves_only_the_destination(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("APP_WAREHOUSE_PASSWORD", raising=False)  # the source's secret is not needed
    monkeypatch.setenv("LAKE_TOKEN", "token-value-3")

    prepared = prepare_dataflow(
        dataflow("missing/file.sql"), roots=QueryRoots(), secrets=LocalPlatform(), scope="maintenance"
    )

    assert prepared.destination.connection.configure.token == "token-value-3"
    assert prepared.source.query == "missing/file.sql"


def lake_copy(connections: dict[str, Connection]) -> DataFlow:
    """A dataflow copying ``bronze`` to ``silver``, both on the ``lake`` connection."""
    return DataFlow.model_validate(
        {
            "name": "copy",
            "source": {"connection_name": "lake", "table": "bronze"},
            "destination": {"connection_name": "lake", "table": "silver"},
        },
        context={"connections": connections},
    )


def test_a_connection_shared_by_source_and_destination_stays_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKE_TOKEN", "token-value-4")
    connections = {"lake": Connection.model_validate(LAKE)}
    authored = lake_copy(connections)

    prepared = prepare_dataflow(authored, roots=QueryRoots(), secrets=LocalPlatform())

    assert prepared.source.connection is prepared.destination.connection
    assert prepared.source.connection.configure.token == "token-value-4"


def test_a_connection_without_secret_references_is_still_a_private_copy_with_its_inline_secrets_masked() -> None:
    inline = {"name": "lake", "format": "delta", "configure": {"base_path": "/lake", "token": "inline-token-5"}}
    connections = {"lake": Connection.model_validate(inline)}
    authored = lake_copy(connections)

    prepared = prepare_dataflow(authored, roots=QueryRoots(), secrets=LocalPlatform())
    prepared.source.connection.configure.base_path = "/elsewhere"

    assert prepared.source.connection is not authored.source.connection
    assert prepared.source.connection is prepared.destination.connection
    assert authored.source.connection.configure.base_path == "/lake"
    assert mask("the token is inline-token-5") == "the token is ***"
