"""One metadata location string, three providers: files (JSON, YAML, Excel), API URLs, database URLs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datacoolie_core.cli import main
from datacoolie_core.metadata.addresses import is_api_url, is_database_url, url_provider
from datacoolie_core.metadata.api_provider import APIProvider
from datacoolie_core.metadata.database_provider import DatabaseProvider
from datacoolie_core.redaction import clear_secrets
from tests.support.api_server import API_KEY, State, serve


@pytest.mark.parametrize(
    ("location", "api", "database"),
    [
        ("https://meta.example.com/api/workspaces/sales", True, False),
        ("sqlite:///meta.db?workspace_id=sales", False, True),
        ("postgresql://u@h/db?workspace_id=s", False, True),
        ("postgresql+psycopg2://u@h/db", False, True),
        ("metadata/pipeline.json", False, False),
        ("mysql://u@h/db", False, False),
        ("./sqlite.json", False, False),
    ],
)
def test_locations_are_told_apart(location: str, api: bool, database: bool) -> None:
    assert (is_api_url(location), is_database_url(location)) == (api, database)


def test_url_provider_picks_the_provider(tmp_path: Path) -> None:
    (tmp_path / "m.db").touch()
    assert isinstance(url_provider(f"sqlite:///{tmp_path / 'm.db'}?workspace_id=s", tmp_path), DatabaseProvider)
    assert isinstance(url_provider("http://127.0.0.1:1/workspaces/s", tmp_path), APIProvider)


def test_datacoolie_validate_reads_a_metadata_api(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATACOOLIE_METADATA_API_KEY", API_KEY)
    document = json.loads((Path(__file__).parents[2] / "fixtures" / "metadata" / "contract_example.json").read_text())
    try:
        with serve(State()) as (base, state):
            state.metadata = {"connections": document["connections"], "dataflows": document["dataflows"]}
            assert main(["validate", f"{base}/workspaces/sales"]) == 0
            assert capsys.readouterr().out.splitlines()[-1].startswith("OK: 1 valid dataflow(s)")
            state.metadata["dataflows"][0]["destination"]["load_type"] = "apend"
            assert main(["validate", f"{base}/workspaces/sales"]) == 2
            assert "dataflows[0].destination.load_type" in capsys.readouterr().err
    finally:
        clear_secrets()
