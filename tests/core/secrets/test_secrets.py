"""Connection secrets: environment lookup, resolution on a copy, routing, redaction (DataCoolie X-01 … X-04)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from datacoolie_core.errors import TerminalError
from datacoolie_core.models import Connection
from datacoolie_core.platform import LocalPlatform
from datacoolie_core.secrets import (
    EnvSecretProvider,
    SecretError,
    SecretValue,
    resolve_connection_secrets,
    secret_values,
)


def warehouse(secrets_ref: dict[str, list[str]] | None = None, **configure: Any) -> Connection:
    return Connection.model_validate(
        {
            "name": "warehouse",
            "connection_type": "database",
            "configure": {"database_type": "postgresql", "host": "db", "username": "etl", **configure},
            "secrets_ref": secrets_ref,
        }
    )


class RecordingStore:
    """A native secret store that answers from a dict and records what it was asked."""

    def __init__(self, values: dict[tuple[str, str], str]) -> None:
        self.values = values
        self.asked: list[tuple[str, str]] = []

    def fetch_secret(self, source: str, key: str) -> str:
        self.asked.append((source, key))
        try:
            return self.values[(source, key)]
        except KeyError:
            raise SecretError(f"no secret '{key}' in store '{source}'") from None


@pytest.mark.parametrize(
    ("source", "key", "variable"),
    [
        ("env:APP_", "DB_PASSWORD", "APP_DB_PASSWORD"),
        ("env:", "DB_PASSWORD", "DB_PASSWORD"),
        ("", "DB_PASSWORD", "DB_PASSWORD"),
        ("TEAM_", "DB_PASSWORD", "TEAM_DB_PASSWORD"),
    ],
    ids=["env-prefix", "env-no-prefix", "empty-source", "native-prefix"],
)
def test_env_provider_reads_prefix_plus_key(
    monkeypatch: pytest.MonkeyPatch, source: str, key: str, variable: str
) -> None:
    monkeypatch.setenv(variable, "s3cr3t")
    assert EnvSecretProvider().fetch_secret(source, key) == "s3cr3t"
    assert LocalPlatform().fetch_secret(source, key) == "s3cr3t"


def test_env_provider_names_the_missing_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("APP_MISSING", raising=False)
    with pytest.raises(SecretError, match="environment variable 'APP_MISSING' is not set") as caught:
        EnvSecretProvider().fetch_secret("env:APP_", "MISSING")
    assert isinstance(caught.value, TerminalError)


def test_resolution_returns_a_resolved_deep_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APP_WAREHOUSE_PASSWORD", "pw-value-1")
    monkeypatch.setenv("APP_WAREHOUSE_URL_SECRET", "postgresql://u:pw@db/x")
    connection = warehouse(
        {"env:APP_": ["password", "url_secret"]}, password="WAREHOUSE_PASSWORD", url_secret="WAREHOUSE_URL_SECRET"
    )

    resolved = resolve_connection_secrets(connection, LocalPlatform())

    assert resolved is not connection
    assert resolved.configure is not connection.configure
    assert resolved.configure.password == "pw-value-1"
    assert resolved.configure.extras["url_secret"] == "postgresql://u:pw@db/x"  # an extra configure key
    assert connection.configure.password == "WAREHOUSE_PASSWORD"  # the authored metadata keeps the name
    assert connection.configure.extras["url_secret"] == "WAREHOUSE_URL_SECRET"


def test_resolution_is_idempotent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAREHOUSE_PASSWORD", "pw-value-1")
    once = resolve_connection_secrets(warehouse({"": ["password"]}, password="WAREHOUSE_PASSWORD"), LocalPlatform())
    monkeypatch.delenv("WAREHOUSE_PASSWORD")  # a second lookup would now fail

    twice = resolve_connection_secrets(once, LocalPlatform())

    assert twice.configure.password == "pw-value-1"


def test_resolved_values_never_show_in_reprs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXTRA_SECRET", "pw-value-2")
    resolved = resolve_connection_secrets(warehouse({"": ["extra"]}, extra="EXTRA_SECRET"), LocalPlatform())

    assert isinstance(resolved.configure.extras["extra"], SecretValue)
    assert "pw-value-2" not in repr(resolved)
    assert repr(SecretValue("pw-value-2")) == "'***'"
    assert f"{SecretValue('pw-value-2')}" == "pw-value-2"  # consumers still get the real string


def test_catalog_and_database_follow_their_resolved_configure_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKE_CATALOG", "prod_catalog")
    connection = Connection.model_validate(
        {"name": "lake", "format": "delta", "configure": {"catalog": "LAKE_CATALOG"}, "secrets_ref": {"": ["catalog"]}}
    )
    resolved = resolve_connection_secrets(connection, LocalPlatform())
    assert (resolved.catalog, connection.catalog) == ("prod_catalog", "LAKE_CATALOG")


def test_registered_prefix_routes_to_its_resolver_others_to_the_native_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APP_WAREHOUSE_PASSWORD", "from-env")
    store = RecordingStore({("vault:kv/etl", "WAREHOUSE_TOKEN"): "from-store"})
    connection = warehouse(
        {"env:APP_": ["password"], "vault:kv/etl": ["token"]}, password="WAREHOUSE_PASSWORD", token="WAREHOUSE_TOKEN"
    )

    resolved = resolve_connection_secrets(connection, store)

    assert (resolved.configure.password, resolved.configure.token) == ("from-env", "from-store")
    assert store.asked == [("vault:kv/etl", "WAREHOUSE_TOKEN")]  # env: never reached the native store


def test_missing_secret_names_connection_and_field_never_a_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APP_WAREHOUSE_PASSWORD", "pw-value-3")
    monkeypatch.delenv("APP_WAREHOUSE_TOKEN", raising=False)
    connection = warehouse({"env:APP_": ["password", "token"]}, password="WAREHOUSE_PASSWORD", token="WAREHOUSE_TOKEN")

    with pytest.raises(SecretError) as caught:
        resolve_connection_secrets(connection, LocalPlatform())

    message = str(caught.value)
    assert "connection 'warehouse'" in message
    assert "configure.token" in message
    assert "APP_WAREHOUSE_TOKEN" in message
    assert "secrets_ref" in message
    assert "pw-value-3" not in message + repr(caught.value)
    assert (caught.value.connection, caught.value.field) == ("warehouse", "token")


def test_a_failing_store_does_not_echo_its_message() -> None:
    class LeakyStore:
        def fetch_secret(self, source: str, key: str) -> str:
            raise RuntimeError("backend said: value was pw-value-4")

    with pytest.raises(SecretError, match=r"secret store failed \(RuntimeError\)") as caught:
        resolve_connection_secrets(warehouse({"kv": ["password"]}, password="P"), LeakyStore())
    assert "pw-value-4" not in str(caught.value)


def test_secret_error_pickles() -> None:
    error = SecretError("gone", connection="warehouse", field="password", source="", dataflow="orders")
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.dataflow) == (SecretError, str(error), "orders")


def test_secret_values_are_the_resolved_and_inline_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAREHOUSE_PASSWORD", "pw-value-5")
    connection = warehouse({"": ["password"]}, password="WAREHOUSE_PASSWORD", token="inline-token")

    assert secret_values(connection) == {"inline-token"}  # the unresolved password is only a name
    assert secret_values(resolve_connection_secrets(connection, LocalPlatform())) == {"pw-value-5", "inline-token"}
