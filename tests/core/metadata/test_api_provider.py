"""APIProvider (P-12) against a real local HTTP server: paginated metadata, watermarks, outages are errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from datacoolie_core.cli import main
from datacoolie_core.errors import MetadataError, WatermarkError
from datacoolie_core.metadata.api_provider import APIProvider
from datacoolie_core.redaction import clear_secrets
from datacoolie_core.watermark.manager import WatermarkManager
from tests.support.api_server import API_KEY, State, orders, serve

WS = "/workspaces/sales"


def metadata(base_url: str, lake: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        "connections": [
            {"name": "shop", "connection_type": "api", "configure": {"base_url": base_url}},
            {"name": "lake", "format": "delta", "configure": {"base_path": str(lake)}},
        ],
        "dataflows": [
            {"name": "orders", "stage": "api2bronze",
             "source": {"connection_name": "shop", "watermark_columns": ["updated_at"],
                        "configure": {"endpoint": "plain/orders",
                                      "range_param_mapping": {"updated_at": {"lower": "since"}}}},
             "destination": {"connection_name": "lake", "table": "orders"}},
            {"name": "other", "stage": "elsewhere",
             "source": {"connection_name": "shop", "configure": {"endpoint": "plain/orders"}},
             "destination": {"connection_name": "lake", "table": "other"}},
        ],
        "schema-hints": [
            {"connection_name": "shop", "table_name": "orders", "hints": [{"column_name": "id", "data_type": "long"}]}
        ],
    }  # fmt: skip


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, State]]:
    with serve(State(records=orders(3))) as (base, state):
        state.metadata = metadata(base, tmp_path / "lake")
        yield base, state
    clear_secrets()


def provider(base: str, tmp_path: Path, **kwargs: Any) -> APIProvider:
    return APIProvider(base + WS, state_base_path=tmp_path / "state", api_key=API_KEY, backoff=0, **kwargs)


def test_metadata_is_read_page_by_page_and_validated(server: tuple[str, State], tmp_path: Path) -> None:
    base, state = server
    with provider(base, tmp_path, page_size=1) as p:
        flows = p.get_dataflows(stage="api2bronze")
        assert [f.name for f in flows] == ["orders"]
        assert p.get_connection_by_name("shop") is not None
    pages = sorted((r.path, r.query["page"]) for r in state.requests)
    assert pages == [(f"{WS}/connections", "1"), (f"{WS}/connections", "2"), (f"{WS}/dataflows", "1"),
                     (f"{WS}/dataflows", "2"), (f"{WS}/schema-hints", "1")]  # fmt: skip
    assert [f.name for f in p.get_dataflows()] == ["orders", "other"]  # in the API's order
    assert set(state.page_size_seen) == {1}
    assert all(r.headers["X-API-Key"] == API_KEY for r in state.requests)


def test_invalid_metadata_from_the_api_names_the_json_path(server: tuple[str, State], tmp_path: Path) -> None:
    base, state = server
    state.metadata["dataflows"][0]["source"]["configure"]["pagination_typ"] = "offset"
    state.metadata["dataflows"][0]["destination"]["load_type"] = "upsert"
    with pytest.raises(MetadataError, match=r"dataflows\[0\]\.destination\.load_type"):
        provider(base, tmp_path).initialize()


def test_watermarks_round_trip_through_the_api_and_never_move_backward(
    server: tuple[str, State], tmp_path: Path
) -> None:
    base, state = server
    manager = WatermarkManager(provider(base, tmp_path))
    assert manager.get_watermark("df-1") is None  # 404: nothing stored yet

    later = {"updated_at": datetime(2024, 1, 2, tzinfo=UTC)}
    manager.save_watermark("df-1", later, job_id="job-7", dataflow_run_id="run-9")
    put = state.watermarks["df-1"]
    assert (put["job_id"], put["dataflow_run_id"]) == ("job-7", "run-9")
    assert manager.get_watermark("df-1") == later

    state.requests.clear()
    assert manager.save_watermark("df-1", {"updated_at": datetime(2024, 1, 1, tzinfo=UTC)}) == later
    assert [r.method for r in state.requests] == ["GET"]  # merged to the stored value: nothing to write


@pytest.mark.parametrize("where", ["everything", "watermarks"])
def test_an_outage_is_an_error_never_a_first_run(server: tuple[str, State], tmp_path: Path, where: str) -> None:
    base, state = server
    p = provider(base, tmp_path)
    p.initialize()
    state.failing = f"{WS}/watermarks" if where == "watermarks" else "/"
    with pytest.raises(WatermarkError, match=r"outage is not 'no watermark'.*returned HTTP 503"):
        WatermarkManager(p).get_watermark("df-1")
    assert len(state.data_requests()) == 0
    assert sum(r.path.endswith("df-1") for r in state.requests) == 4  # 1 + max_retries=3
    with pytest.raises(WatermarkError, match="returned HTTP 503"):
        WatermarkManager(p).save_watermark("df-1", {"updated_at": datetime(2024, 1, 2, tzinfo=UTC)})


def test_a_refused_connection_is_an_error(tmp_path: Path) -> None:
    with serve() as (base, _):
        pass
    p = provider(base, tmp_path, max_retries=1)
    with pytest.raises(MetadataError, match=r"GET .*/connections failed: ConnectError"):
        p.initialize()
    with pytest.raises(WatermarkError, match=r"outage is not 'no watermark'.*ConnectError"):
        p.get_watermark("df-1")


def test_429_and_retry_after_are_honoured(server: tuple[str, State], tmp_path: Path) -> None:
    base, state = server
    state.rate_limited = 2
    waits: list[float] = []
    with provider(base, tmp_path, sleep=waits.append) as p:
        assert len(p.get_dataflows()) == 2
    assert waits == [0.0, 0.0]  # Retry-After: 0 honoured, not the 1 s backoff


def test_datacoolie_run_reads_metadata_and_watermarks_from_the_api(
    server: tuple[str, State], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    base, state = server
    monkeypatch.setenv("DATACOOLIE_METADATA_API_KEY", API_KEY)
    argv = ["run", "--metadata", base + WS, "--state-path", str(tmp_path / "state"), "--stage", "api2bronze", "--json"]

    assert main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    (stored,) = state.watermarks.values()
    assert json.loads(stored["current_value"])  # written through the API, by the manager's encoding

    state.records += orders(2, day=2, start_id=4)
    state.requests.clear()
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dataflows"][0]["source"]["rows_read"] == 2
    assert state.data_requests()[0].query == {"since": "2024-01-01T02:00:00+00:00"}
    assert pl.read_delta(str(tmp_path / "lake" / "orders"))["id"].sort().to_list() == [1, 2, 3, 4, 5]
    assert API_KEY not in json.dumps(report)

    state.failing = f"{WS}/watermarks"  # the store is down: the run fails, nothing is read again
    state.requests.clear()
    assert main(argv) == 1
    assert "outage is not 'no watermark'" in capsys.readouterr().out
    assert state.data_requests() == []


def test_an_api_url_needs_a_state_path(server: tuple[str, State], capsys: pytest.CaptureFixture[str]) -> None:
    base, _ = server
    assert main(["run", "--metadata", base + WS]) == 2
    assert "needs a state path (--state-path" in capsys.readouterr().err
