from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.postgres import postgres_url as _postgres_url


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server for the session (see tests/support/postgres.py)."""
    with _postgres_url() as url:
        yield url
