"""One moto S3 server for the object-storage tests; every test makes its own bucket."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.s3 import ACCESS_KEY_ID, SECRET_ACCESS_KEY, S3Server, start_moto

KEY_ID_VAR, SECRET_VAR = "DC_TEST_S3_KEY_ID", "DC_TEST_S3_SECRET"
"""The environment variables the connections' ``secrets_ref`` name (``env:`` source)."""


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    with start_moto() as server:
        yield server


@pytest.fixture
def s3(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """The server, with the connections' secrets in the environment (subprocesses inherit them)."""
    monkeypatch.setenv(KEY_ID_VAR, ACCESS_KEY_ID)
    monkeypatch.setenv(SECRET_VAR, SECRET_ACCESS_KEY)
    return s3_server
