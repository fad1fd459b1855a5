"""Storage options: from a connection (credentials from secrets), bound per root, safe S3 commits.

No server here: the options reaching delta-rs and Polars for ``abfss://`` and ``gs://`` (which have
no local server test) are proven by an option only the Rust object store parses (a bad ``timeout``):
its own parse error comes back through our readers and writers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import polars as pl
import pytest

from datacoolie_core.destinations import delta
from datacoolie_core.errors import DestinationError, SourceError
from datacoolie_core.models.connection import Connection
from datacoolie_core.platform.storage import (
    StorageConfigError,
    bind_default_storage_options,
    bind_storage,
    bind_storage_options,
    clear_storage_bindings,
    connection_storage_options,
    delta_storage_options,
    storage_options_for,
)
from datacoolie_core.redaction import clear_secrets, mask
from datacoolie_core.secrets import EnvSecretProvider, resolve_connection_secrets
from datacoolie_core.sources import delta as delta_source
from datacoolie_core.sources.file import scan_file

EVERY_CREDENTIAL = {
    "aws_access_key_id": "AKIA-ID",
    "aws_secret_access_key": "aws-secret-value",
    "aws_region": "eu-west-1",
    "azure_storage_account_name": "acct",
    "azure_storage_account_key": "azure-key-value",
    "google_service_account_key": "{}",
}
ROOTS = {
    "s3": "s3://bucket/lake",
    "abfss": "abfss://container@acct.dfs.core.windows.net/lake",
    "gs": "gs://bucket/lake",
}
EXPECTED_KEYS = {
    "s3": {"aws_endpoint_url", "aws_access_key_id", "aws_secret_access_key", "aws_region"},
    "abfss": {"aws_endpoint_url", "azure_storage_account_name", "azure_storage_account_key"},
    "gs": {"aws_endpoint_url", "google_service_account_key"},
}


@pytest.fixture(autouse=True)
def _fresh_bindings() -> Iterator[None]:
    clear_storage_bindings()
    yield
    clear_storage_bindings()
    clear_secrets()


def lake(base_path: str, **configure: Any) -> Connection:
    return Connection(name="lake", format="delta", configure={"base_path": base_path, **configure})


@pytest.mark.parametrize("scheme", list(ROOTS), ids=list(ROOTS))
def test_a_connection_gives_its_store_its_options_and_only_its_providers_credentials(scheme: str) -> None:
    configure = {"storage_options": {"aws_endpoint_url": "http://127.0.0.1:9"}, **EVERY_CREDENTIAL}
    options = connection_storage_options(lake(ROOTS[scheme], **configure).configure)
    assert set(options) == EXPECTED_KEYS[scheme]
    assert all(isinstance(v, str) for v in options.values())


def test_a_local_connection_has_no_storage_options() -> None:
    connection = lake("/tmp/lake", storage_options={"aws_region": "x"}, aws_secret_access_key="never-sent")
    assert connection_storage_options(connection.configure) == {}
    bind_storage(connection)
    assert storage_options_for("/tmp/lake/silver/orders") is None


def test_options_are_found_by_the_longest_bound_root_and_never_by_a_sibling_prefix() -> None:
    bind_storage_options("s3://bucket/lake", {"aws_region": "outer"})
    bind_storage_options("s3://bucket/lake/silver", {"aws_region": "inner"})
    assert storage_options_for("s3://bucket/lake/bronze/t") == {"aws_region": "outer"}
    assert storage_options_for("s3://bucket/lake/silver/t") == {"aws_region": "inner"}
    assert storage_options_for("s3://bucket/lakehouse/t") == {}  # not under s3://bucket/lake
    assert storage_options_for("s3://other/lake/t") == {}


def test_the_engines_options_apply_under_each_connections_own() -> None:
    bind_default_storage_options({"aws_region": "engine", "aws_endpoint_url": "http://127.0.0.1:9"})
    bind_storage_options("s3://bucket/lake", {"aws_region": "lake"})
    assert storage_options_for("s3://bucket/lake/t") == {"aws_region": "lake", "aws_endpoint_url": "http://127.0.0.1:9"}
    assert storage_options_for("s3://other/t") == {"aws_region": "engine", "aws_endpoint_url": "http://127.0.0.1:9"}
    assert storage_options_for("/tmp/lake/t") is None


def test_s3_commits_use_the_conditional_put_unless_the_connection_sets_it() -> None:
    bind_storage_options("s3://bucket/lake", {"aws_region": "r"})
    bind_storage_options("gs://bucket/lake", {})
    assert delta_storage_options("s3://bucket/lake/t") == {"aws_region": "r", "conditional_put": "etag"}
    assert delta_storage_options("gs://bucket/lake/t") == {}
    assert delta_storage_options("/tmp/lake/t") is None
    bind_storage_options("s3://bucket/own", {"aws_conditional_put": "dynamo:commits"})
    assert delta_storage_options("s3://bucket/own/t") == {"aws_conditional_put": "dynamo:commits"}


UNSAFE = {
    "unsafe-rename": ({"AWS_S3_ALLOW_UNSAFE_RENAME": "true"}, "AWS_S3_ALLOW_UNSAFE_RENAME lets two writers overwrite"),
    "dynamodb-lock": ({"AWS_S3_LOCKING_PROVIDER": "dynamodb"}, "AWS_S3_LOCKING_PROVIDER .* is not supported"),
    "put-disabled": ({"conditional_put": "disabled"}, "disables the check that keeps two S3 writers"),
}


@pytest.mark.parametrize(("options", "message"), list(UNSAFE.values()), ids=list(UNSAFE))
def test_options_that_make_s3_commits_unsafe_are_refused(options: dict[str, str], message: str) -> None:
    with pytest.raises(StorageConfigError, match=message):
        bind_storage(lake("s3://bucket/lake", storage_options=options))
    assert storage_options_for("s3://bucket/lake/t") == {}  # nothing was bound


def test_the_unsafe_rename_environment_variable_is_refused_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_S3_ALLOW_UNSAFE_RENAME", "true")
    with pytest.raises(StorageConfigError, match="connection 'lake': AWS_S3_ALLOW_UNSAFE_RENAME"):
        bind_storage(lake("s3://bucket/lake"))


def test_credentials_named_by_secrets_ref_are_resolved_into_the_options_and_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAKE_SECRET", "resolved-secret-8c1f")
    connection = Connection(
        name="lake",
        format="delta",
        configure={"base_path": "s3://bucket/lake", "aws_secret_access_key": "LAKE_SECRET",
                   "storage_options": {"aws_session_token": "inline-token-77aa"}},
        secrets_ref={"env:": ["aws_secret_access_key"]},
    )  # fmt: skip
    bind_storage(resolve_connection_secrets(connection, EnvSecretProvider()))
    options = storage_options_for("s3://bucket/lake/silver/orders")
    assert options == {"aws_session_token": "inline-token-77aa", "aws_secret_access_key": "resolved-secret-8c1f"}
    assert mask("key=resolved-secret-8c1f token=inline-token-77aa") == "key=*** token=***"
    assert connection.configure.aws_secret_access_key == "LAKE_SECRET"  # the authored metadata keeps the name


BAD_TIMEOUT = {"timeout": "not-a-duration"}
PARSED_BY_OBJECT_STORE = 'failed to parse "not-a-duration" as Duration|Unable to decode service account file'
"""The store's own parse error of a bound option (GCS decodes the bound credential key first)."""


@pytest.mark.parametrize("scheme", ["abfss", "gs", "s3"])
def test_the_bound_options_reach_delta_rs_and_polars_for_every_scheme(scheme: str) -> None:
    root = ROOTS[scheme]
    credentials = {"abfss": {"azure_storage_account_name": "acct", "azure_storage_account_key": "a2V5"},
                   "gs": {"google_service_account_key": "{}"}, "s3": {"aws_region": "us-east-1"}}[scheme]  # fmt: skip
    bind_storage(lake(root, storage_options=BAD_TIMEOUT, **credentials))
    # the destination's log, the Delta source, and Polars' cloud reader all parse the bound option
    with pytest.raises(DestinationError, match=PARSED_BY_OBJECT_STORE):
        delta.log_state(f"{root}/silver/orders", "app")
    with pytest.raises(SourceError, match=PARSED_BY_OBJECT_STORE):
        delta_source.open_table(f"{root}/silver/orders", "source 'orders'")
    frame = scan_file(f"{root}/landing/a.parquet", "parquet", {}, hive=False, label="source 'a'")
    assert isinstance(frame, pl.LazyFrame)
    with pytest.raises(OSError, match=PARSED_BY_OBJECT_STORE):  # the reader's collect translates it
        frame.collect()
