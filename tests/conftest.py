from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core.redaction import clear_secrets
from tests.support.azurite import AzuriteServer, start_azurite
from tests.support.mariadb import mariadb_url as given_or_started_mariadb
from tests.support.postgres import postgres_url as given_or_started_postgres
from tests.support.redis import redis_url as given_or_started_redis
from tests.support.s3 import ACCESS_KEY_ID, KEY_ID_VAR, SECRET_ACCESS_KEY, SECRET_VAR, S3Server, start_moto
from tests.support.spark import start_spark

FIXTURES = Path(__file__).parent / "fixtures"
METADATA_FIXTURES = FIXTURES / "metadata"

MINIMAL_DOCUMENT: dict[str, Any] = {
    "connections": [
        {"name": "landing", "format": "csv", "configure": {"base_path": "./lake/landing"}},
        {"name": "lake", "format": "delta", "configure": {"base_path": "./lake/silver"}},
    ],
    "dataflows": [
        {
            "name": "orders",
            "stage": "bronze2silver",
            "source": {"connection_name": "landing", "table": "orders", "watermark_columns": ["updated_at"]},
            "destination": {
                "connection_name": "lake",
                "table": "orders",
                "load_type": "merge_upsert",
                "merge_keys": ["order_id"],
            },
        },
        {
            "name": "customers",
            "stage": "bronze2silver",
            "source": {"connection_name": "landing", "table": "customers"},
            "destination": {"connection_name": "lake", "table": "customers"},
        },
    ],
}


@pytest.fixture
def document() -> dict[str, Any]:
    """A fresh copy of a small valid metadata document."""
    return copy.deepcopy(MINIMAL_DOCUMENT)


def write_json(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _forget_secrets() -> Iterator[None]:
    """The secret registry is process-wide (``datacoolie_core.redaction``): no test sees another's secrets."""
    yield
    clear_secrets()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The local-mode SparkSession of this test process (the oracle; tests using it are marked ``spark``)."""
    session = start_spark()
    yield session
    session.stop()


# The real servers (tests/support/servers.py): one of each per test process (each pytest-xdist
# worker has its own), started when a test first needs it; every test makes its own database, bucket
# or container on it. Tests using them are marked with their tier (below).


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server (tests/support/postgres.py)."""
    with given_or_started_postgres() as url:
        yield url


@pytest.fixture(scope="session")
def postgres_server(postgres_url: str) -> str:
    """The PostgreSQL server, under the name the Dagster and state store tests use."""
    return postgres_url


@pytest.fixture(scope="session")
def mariadb_url() -> Iterator[str]:
    """A real MariaDB server (tests/support/mariadb.py)."""
    with given_or_started_mariadb() as url:
        yield url


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A real Redis server (tests/support/redis.py)."""
    with given_or_started_redis() as url:
        yield url


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """A moto S3 server (tests/support/s3.py); every test makes its own bucket."""
    with start_moto() as server:
        yield server


@pytest.fixture
def s3(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """The S3 server, with the connections' secrets in the environment (subprocesses inherit them)."""
    monkeypatch.setenv(KEY_ID_VAR, ACCESS_KEY_ID)
    monkeypatch.setenv(SECRET_VAR, SECRET_ACCESS_KEY)
    return s3_server


@pytest.fixture(scope="session")
def azurite_server() -> Iterator[AzuriteServer]:
    """An Azurite blob server (tests/support/azurite.py); every test makes its own container."""
    with start_azurite() as server:
        yield server


# The slow tier: every test over ~10 s (marked `slow` where it is written) and the tiers that start
# heavy machinery: the Spark oracle (JVM), real PostgreSQL and MariaDB servers (marked here by the
# fixtures they use) and real Dagster daemons (marked `daemon` where they start one). What is left,
# `-m "not slow"`, is the fast tier.
_FIXTURE_TIERS = {"spark": ("spark",), "postgres": ("postgres_url", "postgres_server", "postgres_database")}
_FIXTURE_TIERS |= {"mariadb": ("mariadb_url",), "redis": ("redis_url",), "s3": ("s3_server",)}
_FIXTURE_TIERS |= {"azurite": ("azurite_server",)}
_SLOW = ("spark", "postgres", "daemon", "mariadb")


def pytest_configure(config: pytest.Config) -> None:
    # No test uses the developer's Dagster instance: those that need one make their own under their
    # tmp_path. Two workers writing one instance's SQLite files would also race.
    os.environ.pop("DAGSTER_HOME", None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        for marker, needs in _FIXTURE_TIERS.items():
            if fixtures.intersection(needs):
                item.add_marker(getattr(pytest.mark, marker))
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "postgres" in str(callspec.params.get("instance_settings", "")):
            item.add_marker(pytest.mark.postgres)
        if any(item.get_closest_marker(name) for name in _SLOW):
            item.add_marker(pytest.mark.slow)
