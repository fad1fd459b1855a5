"""Building sources and reading them as the driver does."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from datacoolie_core import Connection, DataFlow
from datacoolie_core.models.dataflow import Source
from datacoolie_core.sources import ReadRequest, ReadResult, get_reader

REFERENCE_TIME = datetime(2024, 3, 20, 12, 0, tzinfo=UTC)


def make_source(connection: dict[str, Any], **source: Any) -> Source:
    """A validated Source of ``connection`` (a connection document) with the given source keys."""
    conn = Connection.model_validate({"name": "src", **connection})
    lake = Connection.model_validate({"name": "lake", "format": "delta", "configure": {"base_path": "/tmp/unused"}})
    flow = DataFlow.model_validate(
        {
            "name": "flow",
            "source": {"connection_name": "src", **source},
            "destination": {"connection_name": "lake", "table": "out"},
        },
        context={"connections": {"src": conn, "lake": lake}},
    )
    return flow.source


def read(source: Source, watermark: dict[str, Any] | None = None, **request: Any) -> ReadResult | None:
    """Read ``source`` through the registry, as the driver does."""
    request.setdefault("reference_time", REFERENCE_TIME)
    return get_reader(source.connection.format or "").read(source, ReadRequest(watermark=watermark, **request))


def read_ok(source: Source, watermark: dict[str, Any] | None = None, **request: Any) -> ReadResult:
    result = read(source, watermark, **request)
    assert result is not None, "expected rows, the read was skipped"
    return result
