"""``datacoolie validate`` on date folders (S-12, D-14), Hive partitioning (S-13) and xxhash64 hash
columns (M-42): a document using them all validates clean; their mistakes are errors (or, for a
misspelt configure key, a did-you-mean warning) at the JSON path to fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from datacoolie_core.cli import main
from datacoolie_core.metadata import validate_document
from tests.conftest import write_json

Doc = dict[str, Any]


@pytest.fixture
def folders_doc(document: Doc) -> Doc:
    landing = document["connections"][0]
    landing["format"] = "parquet"
    landing["configure"] |= {"date_folder_partitions": "{year}/{month}/{day}", "use_hive_partitioning": True}
    document["connections"].append(
        {
            "name": "export",
            "format": "csv",
            "configure": {"base_path": "./out", "date_folder_partitions": "{year}/{month}"},
        }
    )
    orders = document["dataflows"][0]
    orders["source"]["watermark_columns"] = ["__date_folder_partition__", "updated_at"]
    orders["transform"] = {
        "hash_columns": [
            {"target_column": "row_sha", "columns": ["order_id"]},
            {"target_column": "row_xx", "columns": ["order_id"], "algorithm": "xxhash64"},
        ]
    }
    document["dataflows"][1]["destination"] = {"connection_name": "export", "table": "customers", "load_type": "append"}
    return document


def test_a_document_with_every_new_option_validates_clean(folders_doc: Doc, tmp_path: Path, capsys: Any) -> None:
    result = validate_document(folders_doc)
    assert (result.errors, result.warnings) == ([], [])
    assert [d.name for d in result.dataflows] == ["orders", "customers"]

    assert main(["validate", str(write_json(tmp_path / "m.json", folders_doc))]) == 0


@pytest.mark.parametrize(
    ("mutate", "path", "message"),
    [
        (
            lambda d: d["connections"][0]["configure"].update(date_folder_partitions="{year}/{day}"),
            "connections[0].configure.date_folder_partitions",
            "date_folder_partitions '{year}/{day}' cannot be read: level 2 has '{day}' where '{month}' belongs",
        ),
        (
            lambda d: d["connections"][0]["configure"].pop("date_folder_partitions"),
            "dataflows[0].source.watermark_columns",
            "__date_folder_partition__ needs the source connection's configure.date_folder_partitions",
        ),
        (
            lambda d: d["dataflows"][0]["transform"]["hash_columns"][1].update(algorithm="xxhash"),
            "dataflows[0].transform.hash_columns[1].algorithm",
            "did you mean 'xxhash64'?",
        ),
    ],
    ids=["unreadable-pattern", "folder-key-without-pattern", "algorithm-typo"],
)
def test_mistakes_are_errors_at_their_path(folders_doc: Doc, mutate: Any, path: str, message: str) -> None:
    mutate(folders_doc)
    errors = validate_document(folders_doc).errors
    # one error per dataflow reading the connection, all at the path to fix
    assert {(e.path, message in e.message) for e in errors} == {(path, True)}, [str(e) for e in errors]


def test_a_destination_only_pattern_is_the_writer_s_business(folders_doc: Doc) -> None:
    # the flat-file writer resolves any pattern with the UTC clock (D-14): one level '{year}{month}' is fine there
    folders_doc["connections"][2]["configure"]["date_folder_partitions"] = "{year}{month}"
    assert validate_document(folders_doc).errors == []


def test_a_misspelt_key_is_a_did_you_mean_warning(folders_doc: Doc) -> None:
    configure = folders_doc["connections"][0]["configure"]
    configure["date_folder_partition"] = configure.pop("date_folder_partitions")
    folders_doc["dataflows"][0]["source"]["watermark_columns"] = ["updated_at"]
    result = validate_document(folders_doc)
    assert result.errors == []
    assert [(w.path, w.message.split("; ")[-1]) for w in result.warnings] == [
        ("connections[0].configure.date_folder_partition", "did you mean 'date_folder_partitions'?")
    ]
