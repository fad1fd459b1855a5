from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core.redaction import clear_secrets
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
    """The one local-mode SparkSession of the test run (the oracle; tests using it are marked ``spark``)."""
    session = start_spark()
    yield session
    session.stop()


# Slow tiers, marked by where they live so the fast tier (`-m "not slow"`) runs in a few minutes:
# the Spark oracle (JVM), real Dagster daemons, and real PostgreSQL servers.
_TIERS = {"spark": ("spark",), "daemon": ("daemon",), "postgres": ("postgres", "postgres_server", "postgres_database")}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        name = item.nodeid.lower()
        for marker, needs in _TIERS.items():
            if fixtures.intersection(needs) or (marker == "daemon" and "daemon" in name):
                item.add_marker(getattr(pytest.mark, marker))
                item.add_marker(pytest.mark.slow)
