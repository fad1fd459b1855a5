"""The ``state_store`` fixture: each state store a deployment may use, for the one contract suite.

``file`` is a state root under ``tmp_path`` (the default store); ``postgres`` a fresh database on
the test process's PostgreSQL server (``postgres_server``, ``tests/conftest.py``), marked ``postgres`` + ``slow``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg2
import pytest

from datacoolie_core.watermark.migrate import open_state_location
from datacoolie_core.watermark.store import StateStore

STORES = [
    pytest.param("file", id="file"),
    pytest.param("postgres", id="postgres", marks=[pytest.mark.postgres, pytest.mark.slow]),
]


@dataclass(frozen=True)
class StateSetup:
    """One store under test, as every configuration surface names it."""

    kind: str
    location: str
    """The state root folder (``--state-path``) or the database URL (``--state-url``)."""

    @property
    def cli_args(self) -> list[str]:
        return ["--state-path" if self.kind == "file" else "--state-url", self.location]

    @property
    def provider_args(self) -> dict[str, Any]:
        """Keywords of ``FileProvider`` / ``DataCoolieDriver`` / ``build_definitions``."""
        return {"state_base_path": self.location} if self.kind == "file" else {"state_url": self.location}

    def open(self) -> StateStore:
        return open_state_location(self.location)


def fresh_database(server: str) -> str:
    """A new empty database on ``server``; its URL."""
    name = f"state_{uuid.uuid4().hex[:12]}"
    admin = psycopg2.connect(server)
    try:
        admin.autocommit = True  # CREATE DATABASE refuses to run inside a transaction
        admin.cursor().execute(f'CREATE DATABASE "{name}"')
    finally:
        admin.close()
    parts = urlsplit(server)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


@pytest.fixture(params=STORES)
def state_store(request: pytest.FixtureRequest, tmp_path: Path) -> StateSetup:
    if request.param == "file":
        return StateSetup("file", str(tmp_path / "state"))
    return StateSetup("postgres", fresh_database(request.getfixturevalue("postgres_server")))


@pytest.fixture
def state_url(postgres_server: str) -> str:
    """A fresh, empty PostgreSQL state database (for PostgreSQL-only tests)."""
    return fresh_database(postgres_server)
