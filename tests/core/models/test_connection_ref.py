"""``ConnectionRef.connection``: the resolved connection, read straight from pydantic's private storage."""

from __future__ import annotations

import pytest

from datacoolie_core.models.connection import Connection
from datacoolie_core.models.dataflow import Destination

LAKE = {"name": "lake", "format": "delta", "configure": {"base_path": "/data/lake"}}


def test_an_unresolved_reference_says_how_to_resolve_it() -> None:
    destination = Destination.model_validate({"connection_name": "lake", "table": "orders"})
    with pytest.raises(LookupError, match=r"connection 'lake' was not resolved; validate with connections in context"):
        destination.connection  # noqa: B018


def test_a_resolved_reference_bound_or_copied_keeps_its_connection() -> None:
    lake = Connection.model_validate(LAKE)
    destination = Destination.model_validate(
        {"connection_name": "lake", "table": "orders"}, context={"connections": {"lake": lake}}
    )
    assert destination.connection is lake
    assert destination.path == "/data/lake/orders"
    copied = destination.model_copy(deep=True)
    assert copied.connection == lake
    assert copied.connection is not lake
    other = Connection.model_validate(LAKE | {"configure": {"base_path": "/data/other"}})
    copied.bind(other)
    assert copied.connection is other
    assert destination.connection is lake
