"""One metadata file using every source, destination and provider format validates with ``--strict``.

``tests/fixtures/metadata/every_source.json`` holds one dataflow per reader the engine has, every
database kind, both hash algorithms, a lake on S3, date folders, Hive partitions and Iceberg both
ways; ``test_excel_metadata`` checks its Excel twin gives the same models.
"""

from __future__ import annotations

import json

import pytest

from datacoolie_core.cli import main
from datacoolie_core.metadata.loader import load_document
from datacoolie_core.sources import READERS
from datacoolie_core.sources.db_kinds import KINDS
from tests.conftest import METADATA_FIXTURES

EVERY_SOURCE = METADATA_FIXTURES / "every_source.json"


def test_the_file_validates_strictly_through_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--strict", str(EVERY_SOURCE)]) == 0
    assert "OK: 12 valid dataflow(s) (12 active) in 3 stage(s), 14 connection(s)" in capsys.readouterr().out


def test_the_file_covers_every_reader_database_and_hash() -> None:
    document = load_document(EVERY_SOURCE)
    raw = json.loads(EVERY_SOURCE.read_text())
    connections = {c["name"]: c for c in raw["connections"]}
    sources = {connections[d["source"]["connection_name"]].get("format", "api") for d in raw["dataflows"]}
    destinations = {connections[d["destination"]["connection_name"]]["format"] for d in raw["dataflows"]}
    databases = {c["configure"]["database_type"] for c in raw["connections"] if c.get("format") == "sql"}
    hashes = {
        h.get("algorithm", "sha256") for d in raw["dataflows"] for h in d.get("transform", {}).get("hash_columns", [])
    }

    assert document.issues == ()
    # json/jsonl/avro share csv's and parquet's FileReader; function sources are Python callables
    assert sources == set(READERS) - {"json", "jsonl", "avro", "function"}
    assert databases == set(KINDS)
    assert hashes == {"sha256", "xxhash64"}
    assert destinations == {"delta", "iceberg", "parquet"}
    assert any(
        c["configure"]["base_path"].startswith("s3://") for c in raw["connections"] if "base_path" in c["configure"]
    )
    assert any("date_folder_partitions" in c["configure"] for c in raw["connections"])
    assert any(c["configure"].get("use_hive_partitioning") for c in raw["connections"])
