"""Confinement on object storage: a path built from metadata never leaves its bucket prefix.

delta-rs and Polars parse object-store paths as URLs, where ``%2e%2e`` is ``..``; the lexical checks
decode it before normalising, so neither spelling climbs out of ``base_path``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datacoolie_core.cli import main
from datacoolie_core.platform.paths import PathEscapeError, confined_path, ensure_confined, remote_key

ROOT = "s3://bucket/lake"

ESCAPES = {
    "dot-dot": ("..", "other"),
    "encoded-dot-dot": ("%2e%2e", "other"),
    "encoded-upper": ("silver", "%2E%2E/%2E%2E/x"),
    "above-the-bucket": ("../..", "b2"),
    "backslash": ("silver\\..\\..", "x"),
}


@pytest.mark.parametrize("parts", list(ESCAPES.values()), ids=list(ESCAPES))
def test_names_that_climb_out_of_an_object_store_root_are_refused(parts: tuple[str, str]) -> None:
    with pytest.raises(PathEscapeError, match="leaves its root 's3://bucket/lake'"):
        confined_path(ROOT, *parts)


def test_names_inside_the_root_are_joined_as_written() -> None:
    assert confined_path(ROOT, "silver", "orders") == "s3://bucket/lake/silver/orders"
    assert confined_path(ROOT + "/", "silver", "orders") == "s3://bucket/lake/silver/orders"
    assert confined_path("/data/lake", "%2e%2e") == "/data/lake/%2e%2e"  # a local folder name, not a climb


RUNTIME = {
    "sibling-prefix": "s3://bucket/lakehouse/t",
    "encoded-climb": "s3://bucket/lake/a/%2e%2e/%2e%2e/x",
    "other-bucket": "s3://other/lake/t",
    "other-scheme": "gs://bucket/lake/t",
    "above-the-bucket": "s3://bucket/../b2/t",
}


@pytest.mark.parametrize("path", list(RUNTIME.values()), ids=list(RUNTIME))
def test_a_resolved_path_outside_the_root_is_refused_at_run_time(path: str) -> None:
    with pytest.raises(PathEscapeError, match="outside its root 's3://bucket/lake'"):
        ensure_confined(ROOT, path, what="destination path")


def test_a_path_inside_the_root_passes_at_run_time() -> None:
    ensure_confined(ROOT, "s3://bucket/lake/silver/orders", what="destination path")
    ensure_confined(ROOT, "S3://bucket/lake/silver/./orders", what="destination path")


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("s3://bucket/lake/%2e%2e/x", "s3://bucket/x"),
        ("s3://bucket/%2E%2E/%2e%2e/x", "s3://../x"),
        ("abfss://c@acct.dfs.core.windows.net/lake/./t/", "abfss://c@acct.dfs.core.windows.net/lake/t"),
    ],
)
def test_remote_key_is_the_path_the_store_resolves(url: str, key: str) -> None:
    assert remote_key(url) == key


def test_validate_refuses_an_encoded_climb_out_of_an_s3_base_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    metadata = tmp_path / "metadata.json"
    metadata.write_text(
        json.dumps(
            {
                "connections": [
                    {"name": "landing", "format": "parquet", "configure": {"base_path": str(tmp_path / "landing")}},
                    {"name": "lake", "format": "delta", "configure": {"base_path": "s3://bucket/lake"}},
                ],
                "dataflows": [
                    {"name": "orders", "source": {"connection_name": "landing", "table": "orders"},
                     "destination": {"connection_name": "lake", "schema_name": "%2e%2e", "table": "other"}}
                ],
            }
        )
    )  # fmt: skip
    assert main(["validate", str(metadata)]) == 2  # invalid metadata
    out = capsys.readouterr()
    assert "destination.schema_name" in out.out + out.err
    assert "contains the percent escape '%2e'" in out.out + out.err
