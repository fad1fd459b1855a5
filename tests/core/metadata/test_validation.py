"""Every validation error names the JSON path and the fix; every error of a document is reported."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core import FileProvider, MetadataError
from datacoolie_core.metadata import validate_document
from tests.conftest import write_json

Doc = dict[str, Any]


def _at(doc: Doc, path: str) -> tuple[Any, str | int]:
    parts: list[str | int] = [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", path)]
    node: Any = doc
    for part in parts[:-1]:
        node = node[part]
    return node, parts[-1]


def setv(path: str, value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        node, key = _at(doc, path)
        node[key] = value

    return mutate


def delete(path: str) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        node, key = _at(doc, path)
        del node[key]

    return mutate


def rename(path: str, new: str) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        node, key = _at(doc, path)
        node[new] = node.pop(key)

    return mutate


def both(*mutations: Callable[[Doc], None]) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        for m in mutations:
            m(doc)

    return mutate


CASES: list[tuple[str, Callable[[Doc], None], str, str]] = [
    (
        "unknown-key",
        rename("dataflows[0].source.watermark_columns", "watermark_column"),
        "dataflows[0].source.watermark_column",
        "unknown key 'watermark_column'; did you mean 'watermark_columns'?",
    ),
    ("unknown-top-level-key", rename("dataflows", "dataflow"), "dataflow", "did you mean 'dataflows'?"),
    (
        "unknown-connection-key",
        setv("connections[0].base_path", "./x"),
        "connections[0].base_path",
        "unknown key 'base_path' (allowed here: name, connection_id",
    ),
    (
        "string-as-integer",
        setv("dataflows[0].group_number", "3"),
        "dataflows[0].group_number",
        "expected an integer, got str '3'",
    ),
    ("bad-boolean", setv("dataflows[1].is_active", "maybe"), "dataflows[1].is_active", "expected a boolean"),
    (
        "unknown-load-type",
        setv("dataflows[0].destination.load_type", "upsert"),
        "dataflows[0].destination.load_type",
        "unknown load_type 'upsert'; did you mean 'merge_upsert'?",
    ),
    *[
        (
            f"{load_type}-without-merge-keys",
            both(
                setv("dataflows[0].destination.load_type", load_type),
                delete("dataflows[0].destination.merge_keys"),
                setv("dataflows[0].destination.configure", {"scd2_effective_column": "updated_at"}),
            ),
            "dataflows[0].destination.merge_keys",
            f"load_type '{load_type}' needs merge_keys",
        )
        for load_type in ("merge_upsert", "merge_overwrite", "scd2")
    ],
    (
        "scd2-without-effective-column",
        setv("dataflows[0].destination.load_type", "scd2"),
        "dataflows[0].destination.configure.scd2_effective_column",
        "load_type 'scd2' needs configure.scd2_effective_column",
    ),
    (
        "select-and-drop",
        setv("dataflows[1].transform", {"select_columns": ["a"], "drop_columns": ["b"]}),
        "dataflows[1].transform.drop_columns",
        "select_columns and drop_columns cannot be used together",
    ),
    (
        "unknown-connection-name",
        setv("dataflows[0].source.connection_name", "landng"),
        "dataflows[0].source.connection_name",
        "connection 'landng' is not defined; did you mean 'landing'?",
    ),
    (
        "format-not-valid-for-type",
        setv("connections[0].connection_type", "lakehouse"),
        "connections[0].format",
        "format 'csv' is not valid for connection_type 'lakehouse' (allowed: delta, iceberg)",
    ),
    (
        "unknown-format",
        setv("connections[1].format", "detla"),
        "connections[1].format",
        "unknown format 'detla'; did you mean 'delta'?",
    ),
    (
        "streaming",
        setv("connections[1]", {"name": "lake", "connection_type": "streaming"}),
        "connections[1].connection_type",
        "not supported",
    ),
    (
        "missing-table",
        delete("dataflows[0].destination.table"),
        "dataflows[0].destination.table",
        "required key 'table' is missing",
    ),
    ("missing-source", delete("dataflows[0].source"), "dataflows[0].source", "required key 'source' is missing"),
    (
        "missing-connection-reference",
        delete("dataflows[0].source.connection_name"),
        "dataflows[0].source.connection_name",
        "required key 'connection_name' is missing",
    ),
    (
        "file-source-without-table",
        delete("dataflows[1].source.table"),
        "dataflows[1].source.table",
        "a file source needs table",
    ),
    (
        "unwritable-destination",
        both(
            setv("connections[1]", {"name": "lake", "format": "sql", "configure": {"database_type": "sqlite"}}),
        ),
        "dataflows[0].destination.connection_name",
        "format 'sql', which cannot be a destination",
    ),
    (
        "duplicate-connection",
        setv("connections[1].name", "landing"),
        "connections[1].name",
        "connection name 'landing' is already used by connections[0]",
    ),
    (
        "duplicate-dataflow",
        setv("dataflows[1].name", "orders"),
        "dataflows[1].name",
        "is already used by dataflows[0]; names and ids must be unique",
    ),
    ("dataflows-not-a-list", setv("dataflows", {"name": "x"}), "dataflows", "expected a list, got dict"),
    (
        "list-of-ints",
        setv("dataflows[0].source.watermark_columns", "[1, 2]"),
        "dataflows[0].source.watermark_columns[0]",
        "expected a string, got int 1",
    ),
    (
        "non-portable-regex",
        setv(
            "dataflows[1].transform",
            {"value_rules": [{"operation": "regex_replace", "columns": ["a"], "pattern": "(?=x)y"}]},
        ),
        "dataflows[1].transform.value_rules[0].pattern",
        "lookaround at position 0 is not portable",
    ),
    (
        "rule-needs-mode",
        setv("dataflows[1].transform", {"value_rules": [{"operation": "case", "columns": ["a"]}]}),
        "dataflows[1].transform.value_rules[0].mode",
        "operation 'case' needs a non-empty 'mode'",
    ),
    (
        "rename-chain",
        setv("dataflows[1].transform", {"rename_columns": {"a": "b", "b": "c"}}),
        "dataflows[1].transform.rename_columns",
        "renames onto a column that is itself renamed",
    ),
    (
        "masked-twice",
        setv(
            "dataflows[1].transform",
            {"masking_rules": [{"method": "nullify", "columns": ["a"]}, {"method": "nullify", "columns": ["A"]}]},
        ),
        "dataflows[1].transform.masking_rules[1].columns",
        "column 'A' is already masked by masking_rules[0]",
    ),
    (
        "replace-by-watermark-needs-merge-overwrite",
        setv("dataflows[0].destination.configure", {"replace_by_watermark": True}),
        "dataflows[0].destination.configure.replace_by_watermark",
        "needs load_type 'merge_overwrite'",
    ),
    (
        "removed-api-key",
        setv("dataflows[0].source.configure", {"watermark_param_mapping": {}}),
        "dataflows[0].source.configure.watermark_param_mapping",
        "removed in DataCoolie 0.2.0; use range_param_mapping",
    ),
    (
        "secret-field-not-in-configure",
        setv("connections[0].secrets_ref", {"env:": ["password"]}),
        "connections[0].secrets_ref",
        "secret field 'password' is not in configure",
    ),
    (
        "hint-without-type",
        setv("dataflows[1].transform", {"schema_hints": [{"column_name": "a"}]}),
        "dataflows[1].transform.schema_hints[0].data_type",
        "required key 'data_type' is missing",
    ),
    (
        "shared-hints-unknown-connection",
        setv("schema_hints", [{"connection_name": "lnding", "table_name": "t", "hints": []}]),
        "schema_hints[0].connection_name",
        "connection 'lnding' is not defined; did you mean 'landing'?",
    ),
    (
        "processing-mode-typo",
        setv("dataflows[0].processing_mode", "btach"),
        "dataflows[0].processing_mode",
        "did you mean 'batch'?",
    ),
    ("not-an-object", setv("dataflows[0]", "orders"), "dataflows[0]", "expected an object, got str 'orders'"),
    (
        "sql-two-statements",
        setv("dataflows[0].source.filter_expression", "1=1; DROP TABLE x"),
        "dataflows[0].source.filter_expression",
        "holds 2 statements; give one expression",
    ),
    (
        "sql-subquery",
        setv("dataflows[1].transform", {"filter_expression": "id IN (SELECT id FROM secrets)"}),
        "dataflows[1].transform.filter_expression",
        "contains a subquery",
    ),
    (
        "sql-unknown-function",
        setv("dataflows[1].transform", {"additional_columns": [{"column": "h", "expression": "sentences(name)"}]}),
        "dataflows[1].transform.additional_columns[0].expression",
        "SQL function 'SENTENCES' is not supported",
    ),
    (
        "sql-partition-expression",
        setv("dataflows[1].destination.partition_columns", [{"column": "y", "expression": "year(("}]),
        "dataflows[1].destination.partition_columns[0].expression",
        "does not parse",
    ),
    (
        "sql-scd2-effective",
        both(
            setv("dataflows[0].destination.load_type", "scd2"),
            setv("dataflows[0].destination.configure", {"scd2_effective_column": "nowish()"}),
        ),
        "dataflows[0].destination.configure.scd2_effective_column",
        "'NOWISH' is not supported",
    ),
]


@pytest.mark.parametrize(("mutate", "path", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validation_error(document: Doc, mutate: Callable[[Doc], None], path: str, message: str) -> None:
    mutate(document)
    result = validate_document(document, file="meta.json")
    assert (path, True) in [(i.path, message in i.message) for i in result.errors], "\n".join(map(str, result.errors))


def test_file_provider_error_names_file_path_and_fix(tmp_path: Path, document: Doc) -> None:
    rename("dataflows[0].source.watermark_columns", "watermark_column")(document)
    path = write_json(tmp_path / "pipeline.json", document)
    with pytest.raises(MetadataError) as raised:
        FileProvider(path).initialize()
    assert str(raised.value).splitlines()[1].strip() == (
        f"{path}: dataflows[0].source.watermark_column (dataflow 'orders'): "
        "unknown key 'watermark_column'; did you mean 'watermark_columns'?"
    )


def test_every_error_is_reported_and_valid_dataflows_still_load(document: Doc) -> None:
    document["dataflows"].append(
        {
            "name": "third",
            "source": {"connection_name": "landing", "table": "t"},
            "destination": {"connection_name": "lake", "table": "t", "load_type": "scd2", "merge_keys": ["k"]},
        }
    )
    rename("dataflows[0].source.watermark_columns", "watermark_column")(document)
    setv("dataflows[0].group_number", "1")(document)
    setv("connections[0].configure.use_schema_hint", "sometimes")(document)
    result = validate_document(document, file="meta.json")
    assert sorted(i.path for i in result.errors) == [
        "connections[0].configure.use_schema_hint",
        "dataflows[0].group_number",
        "dataflows[0].source.watermark_column",
        "dataflows[1].source.connection_name",  # its connection is invalid
        "dataflows[2].destination.configure.scd2_effective_column",
    ]
    assert result.invalid_dataflows == (
        "dataflows[0] (dataflow 'orders')",
        "dataflows[1] (dataflow 'customers')",
        "dataflows[2] (dataflow 'third')",
    )
    with pytest.raises(MetadataError, match="5 metadata error"):
        result.raise_on_errors()


def test_mixed_file_validates_the_good_dataflow_but_never_loads_for_a_run(tmp_path: Path, document: Doc) -> None:
    setv("dataflows[0].destination.load_type", "merge_upsrt")(document)
    result = validate_document(document)
    assert [d.name for d in result.dataflows] == ["customers"]
    with pytest.raises(MetadataError, match=r"dataflows\[0\]\.destination\.load_type"):
        FileProvider(write_json(tmp_path / "m.json", document)).initialize()


def test_configure_typo_is_a_warning_not_an_error(document: Doc) -> None:
    setv("connections[0].configure", {"base_path": "./x", "use_hive_partitionin": True, "sslmode": "require"})(document)
    result = validate_document(document)
    assert result.errors == []
    assert [(w.path, w.message) for w in result.warnings] == [
        (
            "connections[0].configure.use_hive_partitionin",
            "unknown configure key 'use_hive_partitionin' is kept but not used by DataCoolie; "
            "did you mean 'use_hive_partitioning'?",
        )
    ]


def test_secret_values_never_appear_in_errors(document: Doc) -> None:
    setv("connections[0].configure.password", ["hunter2-secret"])(document)
    result = validate_document(document)
    assert next(e.path for e in result.errors) == "connections[0].configure.password"
    assert result.errors[0].message == "expected a string"
    assert not any("hunter2" in str(e) for e in result.errors)


@pytest.mark.parametrize(
    ("text", "suffix", "match"),
    [
        ('{"connections": [], "connections": []}', ".json", r"\$: key 'connections' appears more than once"),
        ('{"dataflows": [{"name": "a", "name": "b"}]}', ".json", r"dataflows\[0\]: key 'name' appears more than once"),
        ("dataflows:\n  - name: a\n    name: b\n", ".yaml", "line 3, column 5: key 'name' appears more than once"),
        ('{"connections": [', ".json", "invalid JSON at line 1, column 18"),
        ("connections: [\n", ".yml", "invalid YAML at line 2"),
    ],
    ids=["json-top-duplicate", "json-nested-duplicate", "yaml-duplicate", "bad-json", "bad-yaml"],
)
def test_parse_errors(tmp_path: Path, text: str, suffix: str, match: str) -> None:
    path = tmp_path / f"meta{suffix}"
    path.write_text(text)
    with pytest.raises(MetadataError, match=match):
        FileProvider(path).initialize()


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(MetadataError, match="cannot read the metadata file"):
        FileProvider(tmp_path / "nope.json").initialize()


def test_yaml_dates_stay_strings(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        "connections:\n  - name: lake\n    format: delta\n    configure: {base_path: ./l}\n"
        "dataflows:\n  - name: d\n    stage: 2024-01-01\n"
        "    source: {connection_name: lake, table: t}\n    destination: {connection_name: lake, table: u}\n"
    )
    (dataflow,) = FileProvider(path).get_dataflows()
    assert dataflow.stage == "2024-01-01"
