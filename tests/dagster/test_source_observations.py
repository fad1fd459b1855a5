"""The source sensor records what each external source looks like when it changes: one
``AssetObservation`` per changed source, with the fingerprint as metadata and a data version, stored
in a real instance the way the daemon stores a sensor's asset events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg
from deltalake import write_deltalake

from tests.dagster.test_sensors import EVENTS, METADATA, ORDERS, insert_customer, land, land_all, tick

SOURCES = {"orders": "landing/sales/orders", "events": "raw/events", "customers": "crm/customers"}


def _observed(data: Any) -> dict[str, tuple[str | None, dict[str, Any]]]:
    """``{source key: (data version, metadata)}`` of an evaluation's observations."""
    return {
        e.asset_key.to_user_string(): (e.tags.get("dagster/data_version"), {k: v.value for k, v in e.metadata.items()})
        for e in data.asset_events
    }


def test_each_changed_source_is_observed_with_its_version(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps(METADATA), encoding="utf-8")
    land_all(tmp_path)
    with dg.instance_for_test() as instance:
        first = tick(tmp_path, instance)
        observed = _observed(first)
        # sources of sensed tables only: the opted-out audit folder is not observed
        assert sorted(observed) == sorted(SOURCES.values())
        assert observed[SOURCES["events"]] == ("0", {"datacoolie/delta_version": 0})
        version, files = observed[SOURCES["orders"]]
        assert files["datacoolie/files"] == 1
        assert version is not None
        assert observed[SOURCES["customers"]][1]["datacoolie/rows"] == 1

        assert _observed(tick(tmp_path, instance, first.cursor)) == {}  # no change, nothing observed

        write_deltalake(str(tmp_path / "lake/raw/events"), EVENTS.to_arrow(), mode="append")
        land(tmp_path, "sales/orders", ORDERS, batch=2)
        insert_customer(tmp_path, 2, "2024-02-01 00:00:00")
        second = tick(tmp_path, instance, first.cursor)
        changed = _observed(second)
        assert changed[SOURCES["events"]] == ("1", {"datacoolie/delta_version": 1})
        assert changed[SOURCES["orders"]][1]["datacoolie/files"] == 2
        assert changed[SOURCES["orders"]][0] != version  # a new file: a new data version
        assert changed[SOURCES["customers"]][1]["datacoolie/rows"] == 2

        for event in second.asset_events:  # what the daemon does with a sensor's asset events
            instance.report_runless_asset_event(event)
        record = instance.get_latest_data_version_record(dg.AssetKey.from_user_string(SOURCES["events"]))
    assert record is not None
    assert record.asset_observation is not None
    assert record.asset_observation.tags["dagster/data_version"] == "1"
