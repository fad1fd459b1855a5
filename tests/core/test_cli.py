from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core.cli import main
from tests.conftest import METADATA_FIXTURES, write_json

EXAMPLE = Path(__file__).parents[2] / "datacoolie_dagster" / "example" / "metadata.json"


def test_validate_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "orders_landing_to_bronze", "stage=landing2bronze", "landing_csv:sales.orders", "(csv)", "->",
        "bronze:sales.orders", "(delta)", "append",
    ]  # fmt: skip
    assert out[-1] == (
        "OK: 4 valid dataflow(s) (4 active) in 2 stage(s), 4 connection(s), 1 schema-hint group(s); 0 warning(s)"
    )


def test_validate_reports_every_error_and_exits_2(
    tmp_path: Path, document: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    document["dataflows"][0]["source"]["watermark_column"] = document["dataflows"][0]["source"].pop("watermark_columns")
    document["dataflows"][1]["destination"]["load_type"] = "merge_upsrt"
    path = write_json(tmp_path / "pipeline.json", document)
    assert main(["validate", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[:2] == [
        f"{path}: dataflows[0].source.watermark_column (dataflow 'orders'): "
        "unknown key 'watermark_column'; did you mean 'watermark_columns'?",
        f"{path}: dataflows[1].destination.load_type (dataflow 'customers'): unknown load_type 'merge_upsrt'; "
        "did you mean 'merge_upsert'? (known: append, overwrite, merge_upsert, merge_overwrite, scd2, full_load)",
    ]
    assert captured.err.splitlines()[2].startswith("INVALID: 2 error(s), 0 warning(s)")


def test_validate_json(tmp_path: Path, document: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    document["dataflows"][1]["group_number"] = "2"
    path = write_json(tmp_path / "m.json", document)
    assert main(["validate", str(path), "--json"]) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is False
    assert [d["name"] for d in report["dataflows"]] == ["orders"]
    assert report["invalid_dataflows"] == ["dataflows[1] (dataflow 'customers')"]
    assert report["errors"] == [
        {
            "file": str(path),
            "path": "dataflows[1].group_number",
            "subject": "dataflow 'customers'",
            "message": "expected an integer, got str '2'",
            "severity": "error",
        }
    ]


def test_validate_strict_fails_on_warnings(tmp_path: Path, document: dict[str, Any]) -> None:
    document["connections"][0]["configure"]["bse_path"] = "./x"
    path = write_json(tmp_path / "m.json", document)
    assert main(["validate", str(path)]) == 0
    assert main(["validate", str(path), "--strict"]) == 2


def test_validate_unreadable_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "missing.json")]) == 2
    assert "cannot read the metadata file" in capsys.readouterr().err


def test_usage_error_exits_2() -> None:
    with pytest.raises(SystemExit) as raised:
        main(["frobnicate"])
    assert raised.value.code == 2


def test_console_script_is_installed() -> None:
    executable = shutil.which("datacoolie") or str(Path(__file__).parents[2] / ".venv" / "bin" / "datacoolie")
    done = subprocess.run(
        [executable, "validate", str(METADATA_FIXTURES / "full_coerced.yaml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("OK: 9 valid dataflow(s) (8 active)")
