"""Run limits: pool names, ``max_runs`` from the metadata, and the limits stored in an instance.
(The queue holding runs back is exercised on a real daemon in ``test_postgres_instance.py``.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from datacoolie_core import DataFlow, FileProvider, MetadataError
from datacoolie_dagster.limits import apply_pool_limits, max_runs_of, pool_for, pool_limits, run_tags_for
from tests.dagster.conftest import LINEAGE, write_metadata


def _dataflows(root: Path, max_runs: dict[str, Any]) -> list[DataFlow]:
    def edit(document: dict[str, Any]) -> None:
        for flow in document["dataflows"]:
            if flow["name"] in max_runs:
                flow.setdefault("configure", {}).setdefault("dagster", {})["max_runs"] = max_runs[flow["name"]]

    provider = FileProvider(write_metadata(root, LINEAGE, edit))
    provider.initialize()
    return list(provider.get_dataflows())


def test_pool_and_tags_name_the_pipeline() -> None:
    assert (pool_for("sales"), run_tags_for("sales")) == ("datacoolie/sales", {"datacoolie/pipeline": "sales"})


def test_the_smallest_max_runs_of_a_pipeline_wins(tmp_path: Path) -> None:
    flows = _dataflows(tmp_path, {})
    names = [str(f.name) for f in flows]
    flows = _dataflows(tmp_path, {names[0]: 3, names[1]: 2})
    assert max_runs_of(flows) == 2
    assert max_runs_of(flows[2:], default=5) == 5
    assert max_runs_of(flows[2:]) is None
    assert pool_limits({"a": flows[:2], "b": flows[2:]}, max_runs=4) == {"datacoolie/a": 2, "datacoolie/b": 4}
    assert pool_limits({"b": flows[2:]}) == {}


@pytest.mark.parametrize("bad", [0, -1, "2", True], ids=["zero", "negative", "string", "bool"])
def test_a_bad_max_runs_names_the_dataflow(tmp_path: Path, bad: object) -> None:
    name = str(_dataflows(tmp_path, {})[0].name)
    flows = _dataflows(tmp_path, {name: bad})
    with pytest.raises(MetadataError, match=rf"max_runs \(dataflow '{name}'\): must be a positive integer"):
        max_runs_of(flows)


def test_limits_are_stored_in_the_instance() -> None:
    with dg.instance_for_test() as instance:
        apply_pool_limits(instance, {"datacoolie/a": 2, "datacoolie/b": 1})
        apply_pool_limits(instance, {"datacoolie/a": 3})  # idempotent: a new value replaces the old
        info = {
            p: instance.event_log_storage.get_concurrency_info(p).slot_count for p in ("datacoolie/a", "datacoolie/b")
        }
    assert info == {"datacoolie/a": 3, "datacoolie/b": 1}
