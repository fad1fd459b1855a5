from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from datacoolie_core.models.connection import Connection
from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.transforms import TransformContext

RUN_TIME = datetime(2026, 3, 2, 8, 15, tzinfo=UTC)
RUN_ID = "run-0001"

CONNECTIONS = {
    "landing": Connection.model_validate({"name": "landing", "format": "csv", "configure": {"base_path": "./landing"}}),
    "no_hints": Connection.model_validate(
        {"name": "no_hints", "format": "csv", "configure": {"base_path": "./landing", "use_schema_hint": False}}
    ),
    "lake": Connection.model_validate({"name": "lake", "format": "delta", "configure": {"base_path": "./lake"}}),
}

MakeCtx = Callable[..., TransformContext]


def make_dataflow(
    *,
    transform: dict[str, Any] | None = None,
    source: dict[str, Any] | None = None,
    destination: dict[str, Any] | None = None,
) -> DataFlow:
    """A dataflow landing -> lake with the given blocks merged over minimal defaults."""
    document = {
        "name": "orders_to_silver",
        "source": {"connection_name": "landing", "table": "orders", **(source or {})},
        "destination": {"connection_name": "lake", "table": "orders", **(destination or {})},
        "transform": transform or {},
    }
    return DataFlow.model_validate(document, context={"connections": CONNECTIONS})


@pytest.fixture
def make_ctx() -> MakeCtx:
    """``make_ctx(transform=..., source=..., destination=..., column_name_mode=...)`` -> TransformContext."""

    def build(*, column_name_mode: str = "lower", **blocks: Any) -> TransformContext:
        return TransformContext(make_dataflow(**blocks), RUN_ID, RUN_TIME, column_name_mode)  # type: ignore[arg-type]

    return build
