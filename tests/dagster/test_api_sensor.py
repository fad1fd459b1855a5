"""API sources are sensed like database sources: a fingerprint (record count, watermark maxima) per endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dagster.test_sensors import requested, tick
from tests.support.api_server import BEARER, State, orders, serve

KEY = "bronze/orders"


@pytest.fixture
def server() -> Iterator[tuple[str, State]]:
    with serve(State(records=orders(2), auth="bearer")) as served:
        yield served


def write_metadata(root: Path, base_url: str) -> None:
    document = {
        "connections": [
            {"name": "shop", "connection_type": "api",
             "configure": {"base_url": base_url, "auth_type": "bearer", "auth_token": "DC_TEST_SHOP_TOKEN"},
             "secrets_ref": {"env:": ["auth_token"]}},
            {"name": "bronze", "connection_type": "lakehouse", "format": "delta",
             "configure": {"base_path": "./lake/bronze"}},
        ],
        "dataflows": [
            {"name": "orders", "stage": "load",
             "source": {"connection_name": "shop", "watermark_columns": ["updated_at"],
                        "configure": {"endpoint": "offset/orders", "pagination_type": "offset", "page_size": 2,
                                      "data_path": "data.items"}},
             "destination": {"connection_name": "bronze", "table": "orders", "load_type": "append"}},
        ],
    }  # fmt: skip
    (root / "metadata.json").write_text(json.dumps(document), encoding="utf-8")


def test_an_api_source_is_sensed_by_its_records_and_watermark(
    tmp_path: Path, server: tuple[str, State], monkeypatch: pytest.MonkeyPatch, instance: Any
) -> None:
    base, state = server
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DC_TEST_SHOP_TOKEN", BEARER)  # probed with the secret, not its name
    write_metadata(tmp_path, base)

    first = tick(tmp_path, instance)
    assert [keys for _, keys in requested(first)] == [[KEY]]
    (observation,) = first.asset_events
    assert observation.asset_key.to_user_string() == "shop/offset_orders"
    assert observation.metadata["datacoolie/rows"].value == 2

    assert requested(tick(tmp_path, instance, first.cursor)) == []  # nothing new: no run

    state.records += orders(1, day=2, start_id=3)
    assert [keys for _, keys in requested(tick(tmp_path, instance, first.cursor))] == [[KEY]]
