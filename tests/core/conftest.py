"""Core tests never record to the developer's Dagster instance (``datacoolie run`` would, with
``DAGSTER_HOME`` exported: see :mod:`datacoolie_core.observers`)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_dagster_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
