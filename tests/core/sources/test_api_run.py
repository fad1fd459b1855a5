"""API sources end to end: ``datacoolie run`` (in process) against a local HTTP server, twice, incrementally."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from datacoolie_core.cli import main
from datacoolie_core.metadata import FileProvider
from datacoolie_core.redaction import clear_secrets
from datacoolie_core.watermark.manager import WatermarkManager
from tests.support.api_server import BEARER, State, orders, serve


@pytest.fixture
def server() -> Iterator[tuple[str, State]]:
    with serve(State(records=orders(4), auth="bearer")) as served:
        yield served


def write_metadata(folder: Path, base_url: str) -> Path:
    document = {
        "connections": [
            {"name": "shop", "connection_type": "api",
             "configure": {"base_url": base_url, "auth_type": "bearer", "auth_token": "SHOP_TOKEN"},
             "secrets_ref": {"env:": ["auth_token"]}},
            {"name": "lake", "format": "delta", "configure": {"base_path": str(folder / "lake")}},
        ],
        "dataflows": [
            {"name": "orders", "stage": "api2bronze",
             "source": {"connection_name": "shop", "watermark_columns": ["updated_at"],
                        "configure": {"endpoint": "offset/orders", "pagination_type": "offset", "page_size": 2,
                                      "data_path": "data.items",
                                      "range_param_mapping": {"updated_at": {"lower": "since", "upper": "until"}}}},
             "destination": {"connection_name": "lake", "table": "orders", "load_type": "merge_upsert",
                             "merge_keys": ["id"]}},
        ],
    }  # fmt: skip
    path = folder / "metadata.json"
    path.write_text(json.dumps(document))
    return path


def run(metadata: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any], str]:
    code = main(["run", "--metadata", str(metadata), "--json", "--retry-delay", "0", *extra])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def test_incremental_runs_push_the_stored_watermark_and_never_log_the_token(
    tmp_path: Path,
    server: tuple[str, State],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    base, state = server
    monkeypatch.setenv("SHOP_TOKEN", BEARER)
    metadata = write_metadata(tmp_path, base)
    caplog.set_level(logging.DEBUG)
    try:
        code, report, err = run(metadata, capsys)
        assert (code, report["succeeded"]) == (0, 1), err
        assert "since" not in state.data_requests()[0].query  # first run: everything up to now
        table = tmp_path / "lake" / "orders"
        assert pl.read_delta(str(table))["id"].sort().to_list() == [1, 2, 3, 4]
        stored = WatermarkManager(FileProvider(metadata)).get_watermark(
            FileProvider(metadata).get_dataflows()[0].dataflow_id
        )
        assert stored == {"updated_at": datetime(2024, 1, 1, 3, tzinfo=UTC)}  # typed, not text

        state.requests.clear()
        state.records += orders(3, day=2, start_id=5)
        code, report, err = run(metadata, capsys)

        assert (code, report["succeeded"]) == (0, 1), err
        first = state.data_requests()[0]
        assert first.query["since"] == "2024-01-01T03:00:00+00:00"
        (row,) = report["dataflows"]
        assert row["source"]["rows_read"] == 3  # only the new orders (id 4 came back by >= and was dropped)
        assert pl.read_delta(str(table))["id"].sort().to_list() == [1, 2, 3, 4, 5, 6, 7]
        logged = caplog.text + err + json.dumps(report)
        assert BEARER not in logged
        assert all(r.headers["Authorization"] == f"Bearer {BEARER}" for r in state.data_requests())
    finally:
        clear_secrets()


def test_an_api_outage_fails_the_dataflow_and_keeps_the_watermark(
    tmp_path: Path, server: tuple[str, State], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    base, state = server
    monkeypatch.setenv("SHOP_TOKEN", BEARER)
    metadata = write_metadata(tmp_path, base)
    state.outage = True
    try:
        code, report, _ = run(metadata, capsys)
    finally:
        clear_secrets()
    assert (code, report["failed"]) == (1, 1)
    (row,) = report["dataflows"]
    assert "returned HTTP 503" in row["error_message"]
    assert not (tmp_path / "lake" / "orders").exists()
