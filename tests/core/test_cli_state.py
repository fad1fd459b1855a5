"""``datacoolie state``: finding the dataflow, JSON facts, exit codes (the damaged cases: tests/core/adversarial)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core.cli import main
from tests.core.orchestration.driver_support import Lake, function_source

WATERMARK = {"watermark_columns": ["updated_at"]}


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    lake = Lake(tmp_path)
    lake.add("orders", source=function_source("orders") | WATERMARK)
    lake.add("customers", stage="gold", source=function_source("orders") | WATERMARK)
    lake.write()
    return lake


def state(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = main(["state", *(str(a) for a in argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_show_as_json_after_a_run(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--metadata", str(lake.metadata_path), "--dataflow", "orders", "--stage", "bronze2silver"]) == 0
    capsys.readouterr()
    code, out, err = state(capsys, "show", "--metadata", lake.metadata_path, "--dataflow", "orders", "--json")  # fmt: skip
    assert (code, err) == (0, "")
    facts = json.loads(out)
    assert facts["verdict"] == "ok"
    assert (facts["destination_exists"], facts["destination_sequence"]) == (True, 1)
    assert json.loads(facts["journal"])["state"] == "settled"
    (commit,) = facts["destination_commits"]
    assert (commit["sequence"], commit["version"]) == (1, 0)
    assert json.loads(commit["watermark"]) == {"updated_at": {"__datetime__": "2025-03-15T00:00:00"}}


def test_an_unknown_name_suggests_the_closest(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = state(capsys, "repair", "--metadata", lake.metadata_path, "--dataflow", "order", "--confirm")
    assert code == 2
    assert "no dataflow named 'order'" in err
    assert "did you mean 'orders'" in err


def test_repair_of_a_first_run_clears_nothing_that_exists(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--metadata", lake.metadata_path, "--dataflow", "customers")
    code, out, _ = state(capsys, "repair", *args)
    assert (code, out.strip()) == (
        0,
        "would clear the state (the destination holds no write of this dataflow): the next run is a first run; "
        "add --confirm to do it",
    )
    code, out, _ = state(capsys, "show", *args)
    assert code == 0
    assert "watermark: (absent)" in out
    assert "verdict: ok" in out
