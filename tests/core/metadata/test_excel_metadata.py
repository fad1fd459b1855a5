"""Excel metadata workbooks (DataCoolie P-09): the same models as the JSON form, errors naming the cell."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from datacoolie_core import FileProvider
from datacoolie_core.cli import main
from datacoolie_core.errors import MetadataError
from datacoolie_core.metadata.loader import load_document
from tests.conftest import METADATA_FIXTURES
from tests.support.excel import write_metadata_workbook


def workbook(tmp_path: Path, sheets: dict[str, list[list[Any]]], name: str = "metadata.xlsx") -> Path:
    """A workbook written cell by cell: ``{sheet: [header, row, ...]}``."""
    book = openpyxl.Workbook()
    book.remove(book.active)
    for title, rows in sheets.items():
        sheet = book.create_sheet(title)
        for row in rows:
            sheet.append(row)
    path = tmp_path / name
    book.save(path)
    return path


CONNECTIONS = [
    ["name", "format", "configure_base_path"],
    ["landing", "csv", "./lake/landing"],
    ["lake", "delta", "./lake/silver"],
]


def dataflows(*rows: list[Any], header: list[str] | None = None) -> list[list[Any]]:
    header = header or ["name", "stage", "source_connection_name", "source_table", "destination_connection_name",
                        "destination_table", "destination_load_type"]  # fmt: skip
    return [header, *rows]


@pytest.mark.parametrize("name", ["full.json", "contract_example.json", "every_source.json"])
def test_a_workbook_holds_the_same_models_as_its_json_twin(tmp_path: Path, name: str) -> None:
    document = json.loads((METADATA_FIXTURES / name).read_text())
    path = write_metadata_workbook(document, tmp_path / "metadata.xlsx")
    from_excel, from_json = load_document(path), load_document(METADATA_FIXTURES / name)

    assert from_excel.issues == ()
    assert [c.model_dump() for c in from_excel.connections] == [c.model_dump() for c in from_json.connections]
    assert [d.model_dump() for d in from_excel.dataflows] == [d.model_dump() for d in from_json.dataflows]
    assert [h.model_dump() for h in from_excel.schema_hints] == [h.model_dump() for h in from_json.schema_hints]
    assert from_json.dataflows
    assert from_json.connections


def test_the_golden_workbook_uses_every_cell_form(tmp_path: Path) -> None:
    """The golden exercises configure_<key> columns, comma lists, JSON arrays and a transform JSON cell."""
    path = write_metadata_workbook(json.loads((METADATA_FIXTURES / "full.json").read_text()), tmp_path / "m.xlsx")
    book = openpyxl.load_workbook(path, read_only=True)
    headers = {name: [c.value for c in next(book[name].iter_rows(max_row=1))] for name in book.sheetnames}
    assert {"configure", "configure_base_path", "secrets_ref"} <= set(headers["connections"])
    assert {"transform", "transform_select_columns", "source_watermark_columns"} <= set(headers["dataflows"])
    cells = [c for row in book["dataflows"].iter_rows(min_row=2, values_only=True) for c in row if isinstance(c, str)]
    assert any(c.startswith("{") for c in cells)
    assert any(", " in c and not c.startswith(("[", "{")) for c in cells)
    assert "schema_hints" in headers


def test_file_provider_serves_a_workbook(tmp_path: Path) -> None:
    header = [*dataflows()[0], "destination_merge_keys"]
    rows = [
        ["orders", "bronze2silver", "landing", "orders", "lake", "orders", "merge_upsert", '["order_id", "day"]'],
        ["customers", "bronze2silver", "landing", "customers", "lake", "customers", None, None],
    ]
    path = workbook(tmp_path, {"connections": CONNECTIONS, "dataflows": [header, *rows]})
    provider = FileProvider(path)
    orders, customers = provider.get_dataflows(stage="bronze2silver")
    assert orders.destination.merge_keys == ["order_id", "day"]
    assert customers.destination.load_type == "append"  # a blank cell is an unset field
    assert provider.watermark_base_path == tmp_path / "watermarks"


def test_is_active_blank_is_true_text_is_read_and_nonsense_is_an_error(tmp_path: Path) -> None:
    rows = [
        ["a", "s", "landing", "a", "lake", "a", None],
        ["b", "s", "landing", "b", "lake", "b", "FALSE"],
        ["c", "s", "landing", "c", "lake", "c", False],
        ["d", "s", "landing", "d", "lake", "d", "yes"],
    ]
    header = ["name", "stage", "source_connection_name", "source_table", "destination_connection_name",
              "destination_table", "is_active"]  # fmt: skip
    path = workbook(tmp_path, {"connections": CONNECTIONS, "dataflows": [header, *rows]})
    flows = FileProvider(path).get_dataflows(active_only=False)
    assert {d.name: d.is_active for d in flows} == {"a": True, "b": False, "c": False, "d": True}

    bad = workbook(
        tmp_path,
        {"connections": CONNECTIONS, "dataflows": [header, ["e", "s", "landing", "e", "lake", "e", "maybe"]]},
        "bad.xlsx",
    )
    with pytest.raises(MetadataError, match=r"sheet 'dataflows', row 2, column 'is_active' \(G2\)"):
        FileProvider(bad).initialize()


def test_an_unknown_column_names_the_sheet_the_column_and_the_fix(tmp_path: Path) -> None:
    header = [
        "name",
        "stage",
        "source_connection_name",
        "source_tabel",
        "destination_connection_name",
        "destination_table",
    ]
    path = workbook(
        tmp_path, {"connections": CONNECTIONS, "dataflows": [header, ["a", "s", "landing", "a", "lake", "a"]]}
    )
    with pytest.raises(MetadataError) as raised:
        FileProvider(path).initialize()
    (issue,) = raised.value.issues
    assert (issue.file, issue.path) == (str(path), "sheet 'dataflows', row 1, column D")
    assert issue.message == "unknown column 'source_tabel'; did you mean 'source_table'?"


def test_a_validation_error_is_located_at_its_row_and_column(tmp_path: Path) -> None:
    path = workbook(
        tmp_path,
        {
            "connections": CONNECTIONS,
            "dataflows": dataflows(
                ["a", "s", "landing", "a", "lake", "a", "append"],
                ["b", "s", "landing", "b", "lake", "b", "merge_upsrt"],
            ),
        },
    )
    with pytest.raises(MetadataError) as raised:
        load_document(path).raise_on_errors()
    (issue,) = raised.value.issues
    assert issue.path == "sheet 'dataflows', row 3, column 'destination_load_type' (G3)"
    assert "did you mean 'merge_upsert'?" in issue.message
    assert str(issue).startswith(f"{path}: sheet 'dataflows', row 3")


def test_a_bad_json_cell_and_an_error_inside_json_name_the_cell(tmp_path: Path) -> None:
    header = [*dataflows()[0], "transform"]
    path = workbook(
        tmp_path,
        {
            "connections": CONNECTIONS,
            "dataflows": [
                header,
                ["a", "s", "landing", "a", "lake", "a", "append", '{"select_columns": ["x"'],
                [
                    "b",
                    "s",
                    "landing",
                    "b",
                    "lake",
                    "b",
                    "append",
                    '{"value_rules": [{"operation": "trimm", "columns": ["x"]}]}',
                ],
            ],
        },
    )
    with pytest.raises(
        MetadataError, match=r"sheet 'dataflows', row 2, column 'transform' \(H2\): invalid JSON at character \d+"
    ):
        FileProvider(path).initialize()
    fixed = workbook(
        tmp_path,
        {
            "connections": CONNECTIONS,
            "dataflows": [
                header,
                [
                    "b",
                    "s",
                    "landing",
                    "b",
                    "lake",
                    "b",
                    "append",
                    '{"value_rules": [{"operation": "trimm", "columns": ["x"]}]}',
                ],
            ],
        },
        "fixed.xlsx",
    )
    (issue,) = load_document(fixed).errors
    assert issue.path == "sheet 'dataflows', row 2, column 'transform' (H2), at value_rules.0.operation"


def test_per_field_transform_cells_win_over_the_whole_transform_cell(tmp_path: Path) -> None:
    header = [*dataflows()[0], "transform", "transform_select_columns"]
    row = [
        "a",
        "s",
        "landing",
        "a",
        "lake",
        "a",
        "append",
        '{"select_columns": ["x"], "filter_expression": "x > 1"}',
        "y, z",
    ]
    (dataflow,) = FileProvider(
        workbook(tmp_path, {"connections": CONNECTIONS, "dataflows": [header, row]})
    ).get_dataflows()
    assert dataflow.transform.select_columns == ["y", "z"]
    assert dataflow.transform.filter_expression == "x > 1"


def test_schema_hint_rows_group_by_table_and_errors_name_the_hint_row(tmp_path: Path) -> None:
    hints = [
        ["connection_name", "table_name", "column_name", "data_type", "precision", "scale"],
        ["landing", "orders", "amount", "decimal", 10, 2],
        ["landing", "customers", "id", "bigint", None, None],
        ["landing", "orders", "day", "date", None, None],
    ]
    path = workbook(
        tmp_path,
        {
            "connections": CONNECTIONS,
            "dataflows": dataflows(["a", "s", "landing", "orders", "lake", "a", "append"]),
            "schema_hints": hints,
        },
    )
    document = load_document(path)
    assert [(g.table_name, [h.column_name for h in g.hints]) for g in document.schema_hints] == [
        ("orders", ["amount", "day"]),
        ("customers", ["id"]),
    ]
    hints[3][3] = None  # a hint without its data type, in the fourth row
    path = workbook(tmp_path, {"connections": CONNECTIONS, "schema_hints": hints}, "bad.xlsx")
    (issue,) = load_document(path).errors
    assert issue.path == "sheet 'schema_hints', row 4, column 'data_type' (D4)"


def test_a_misnamed_sheet_gets_did_you_mean_and_xls_is_refused(tmp_path: Path) -> None:
    path = workbook(
        tmp_path, {"connections": CONNECTIONS, "dataflow": dataflows(["a", "s", "landing", "a", "lake", "a", None])}
    )
    with pytest.raises(
        MetadataError, match=r"sheet 'dataflow': is not read; did you mean 'dataflows'\? Rename the sheet"
    ):
        FileProvider(path).initialize()
    legacy = tmp_path / "old.xls"
    legacy.write_bytes(b"\xd0\xcf\x11\xe0")
    with pytest.raises(MetadataError, match=r"legacy \.xls workbooks cannot be read; save the workbook as \.xlsx"):
        FileProvider(legacy).initialize()
    damaged = tmp_path / "damaged.xlsx"
    damaged.write_bytes(b"PK\x03\x04 not a workbook")
    with pytest.raises(MetadataError, match=r"cannot open the workbook .*save it again as \.xlsx"):
        FileProvider(damaged).initialize()


def test_datacoolie_validate_reads_a_workbook(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_metadata_workbook(
        json.loads((METADATA_FIXTURES / "contract_example.json").read_text()), tmp_path / "m.xlsx"
    )
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("OK: ")
    bad = workbook(
        tmp_path,
        {"connections": CONNECTIONS, "dataflows": dataflows(["a", "s", "landng", "a", "lake", "a", None])},
        "bad.xlsx",
    )
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: sheet 'dataflows', row 2, column 'source_connection_name' (C2)" in err
    assert "did you mean 'landing'?" in err


def test_configure_key_columns_take_json_objects_and_keep_other_text(tmp_path: Path) -> None:
    connections = [
        ["name", "format", "configure_base_path", "configure_read_options", "configure_date_folder_partitions"],
        ["landing", "csv", "./lake/landing", '{"sep": ";"}', "{year}/{month}/{day}"],
        ["lake", "delta", "./lake/silver", None, None],
    ]
    header = [*dataflows()[0], "configure_dagster"]
    row = ["a", "s", "landing", "a", "lake", "a", "append", '{"max_runs": 2}']
    provider = FileProvider(workbook(tmp_path, {"connections": connections, "dataflows": [header, row]}))
    landing = provider.get_connection_by_name("landing")
    assert landing is not None
    assert landing.read_options == {"sep": ";"}
    assert landing.configure.date_folder_partitions == "{year}/{month}/{day}"
    (dataflow,) = provider.get_dataflows()
    assert dataflow.configure == {"dagster": {"max_runs": 2}}
