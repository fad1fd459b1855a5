from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core import FileProvider, WatermarkError, WatermarkManager
from tests.conftest import METADATA_FIXTURES, write_json


@pytest.fixture(scope="module")
def full() -> FileProvider:
    return FileProvider(METADATA_FIXTURES / "full.json")


@pytest.mark.parametrize(
    ("stage", "names"),
    [
        (None, ["orders_landing_to_bronze", "customers_to_silver", "customers_history", "events_window_replace",
                "crm_accounts", "sqlite_items", "gen-calendar", "api_orders"]),
        ("", ["orders_landing_to_bronze", "customers_to_silver", "customers_history", "events_window_replace",
              "crm_accounts", "sqlite_items", "gen-calendar", "api_orders"]),
        ("db2bronze", ["crm_accounts", "sqlite_items"]),
        ("reference, db2bronze", ["crm_accounts", "sqlite_items", "gen-calendar"]),
        (["api2bronze", "reference"], ["gen-calendar", "api_orders"]),
        ("no_such_stage", []),
    ],
    ids=["none", "empty", "one", "comma", "list", "unknown"],
)  # fmt: skip
def test_get_dataflows_by_stage(full: FileProvider, stage: Any, names: list[str]) -> None:
    assert [d.name for d in full.get_dataflows(stage=stage)] == names


def test_inactive_dataflows(full: FileProvider) -> None:
    assert "old_json_feed" not in [d.name for d in full.get_dataflows()]
    assert "old_json_feed" in [d.name for d in full.get_dataflows(active_only=False)]


def test_lookups(full: FileProvider) -> None:
    dataflow = full.get_dataflows(stage="reference")[0]
    assert full.get_dataflow_by_id("gen-calendar") is dataflow
    assert full.get_dataflow_by_id("missing") is None
    assert full.get_connection_by_name("missing") is None
    assert full.get_connection_by_id("conn-silver") is full.get_connection_by_name("silver")


@pytest.mark.parametrize(
    ("connection", "names"),
    [
        (None, ["orders_landing_to_bronze", "customers_to_silver", "customers_history", "events_window_replace",
                "crm_accounts", "gen-calendar", "api_orders"]),
        ("silver", ["customers_to_silver", "events_window_replace"]),
        ("warehouse,conn-silver", ["customers_to_silver", "customers_history", "events_window_replace"]),
        ("exports", []),
    ],
    ids=["all-lakehouse", "by-name", "by-name-and-id", "file-destination"],
)  # fmt: skip
def test_maintenance_dataflows(full: FileProvider, connection: Any, names: list[str]) -> None:
    assert [d.name for d in full.get_maintenance_dataflows(connection=connection)] == names


def test_get_schema_hints(full: FileProvider) -> None:
    csv = full.get_connection_by_name("landing_csv")
    assert csv is not None
    assert next(h.data_type for h in full.get_schema_hints(str(csv.connection_id), "orders", "sales")) == "long"
    assert [h.data_type for h in full.get_schema_hints(str(csv.connection_id), "orders", "other")] == ["string"]
    assert full.get_schema_hints("nope", "orders") == []


# --- watermarks ---------------------------------------------------------------------------


def test_watermark_layout_and_roots(tmp_path: Path, document: dict[str, Any]) -> None:
    (tmp_path / "meta").mkdir()
    path = write_json(tmp_path / "meta" / "pipeline.json", document)
    default = FileProvider(path)
    orders_id = default.get_dataflows()[0].dataflow_id or ""
    folder = f"bronze2silver_orders_{orders_id}"
    assert default.watermark_path(orders_id) == tmp_path / "meta" / "watermarks" / folder / "watermark_value.json"
    state = FileProvider(path, state_base_path=tmp_path / "state")
    assert state.watermark_path(orders_id) == tmp_path / "state" / "watermarks" / folder / "watermark_value.json"
    explicit = FileProvider(path, watermark_base_path=tmp_path / "wm", state_base_path=tmp_path / "ignored")
    assert explicit.watermark_path(orders_id) == tmp_path / "wm" / folder / "watermark_value.json"
    assert explicit.watermark_folder("unknown-id") == "unknown-id"


def test_reads_watermark_written_by_datacoolie(tmp_path: Path) -> None:
    provider = FileProvider(METADATA_FIXTURES / "contract_example.json", watermark_base_path=tmp_path)
    dataflow = provider.get_dataflows()[0]
    file = tmp_path / provider.watermark_folder(dataflow.dataflow_id or "") / "watermark_value.json"
    file.parent.mkdir(parents=True)
    file.write_text('{"changed_at": "2026-03-02T08:15:00"}')  # DataCoolie 0.1.7 wrote CSV watermarks as text
    manager = WatermarkManager(provider)
    assert manager.get_watermark(dataflow.dataflow_id or "") == {"changed_at": "2026-03-02T08:15:00"}


def test_watermark_round_trip_through_provider(tmp_path: Path, document: dict[str, Any]) -> None:
    provider = FileProvider(write_json(tmp_path / "m.json", document))
    manager = WatermarkManager(provider)
    dataflow_id = provider.get_dataflows()[0].dataflow_id or ""
    assert manager.get_watermark(dataflow_id) is None
    first = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    manager.save_watermark(dataflow_id, {"updated_at": first}, job_id="j1", dataflow_run_id="r1")
    manager.save_watermark(dataflow_id, {"updated_at": datetime(2025, 1, 1, tzinfo=UTC)})  # older
    assert manager.get_watermark(dataflow_id) == {"updated_at": first}
    assert json.loads(provider.watermark_path(dataflow_id).read_text()) == {
        "updated_at": {"__datetime__": "2026-01-02T03:04:05.678901+00:00"}
    }


def test_corrupt_watermark_is_an_error_not_a_first_run(tmp_path: Path, document: dict[str, Any]) -> None:
    provider = FileProvider(write_json(tmp_path / "m.json", document))
    dataflow_id = provider.get_dataflows()[0].dataflow_id or ""
    file = provider.watermark_path(dataflow_id)
    file.parent.mkdir(parents=True)
    file.write_text('{"updated_at": ')
    with pytest.raises(WatermarkError, match=dataflow_id):
        WatermarkManager(provider).get_watermark(dataflow_id)
