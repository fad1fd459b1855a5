"""Excel sources (S-17) on real .xlsx workbooks written with openpyxl, checked against openpyxl's own reading."""

from __future__ import annotations

import sys
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import openpyxl
import polars as pl
import pytest

from datacoolie_core.columns import FILE_COLUMNS, FILE_MODIFICATION_TIME
from datacoolie_core.errors import SourceError
from tests.core.sources.helpers import read, read_ok
from tests.core.sources.test_file import T0, file_source, folder_of, set_mtime, stored

HEADER = ["id", "amount", "name", "paid", "day", "ts", "note"]


def rows(start: int, count: int) -> list[list[Any]]:
    return [
        [i, i * 1.25, f"customer {i}", i % 2 == 0, date(2026, 1, 1) + timedelta(days=i),
         datetime(2026, 1, 1, 8, 30) + timedelta(hours=i), None if i % 3 else f"note {i}"]
        for i in range(start, start + count)
    ]  # fmt: skip


def workbook(path: Path, sheets: dict[str, list[list[Any]]], *, minute: int = 1) -> Path:
    book = openpyxl.Workbook()
    book.remove(book.active)
    for title, content in sheets.items():
        sheet = book.create_sheet(title)
        for row in content:
            sheet.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    book.save(path)
    set_mtime(path, minute)
    return path


def openpyxl_rows(path: Path, sheet: str) -> list[tuple[Any, ...]]:
    """The cells as openpyxl reads them (the independent reference): values only, header row skipped."""
    book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        return list(book[sheet].iter_rows(min_row=2, values_only=True))
    finally:
        book.close()


def as_openpyxl(value: Any) -> Any:
    """openpyxl has no date cells: a date-formatted cell reads as a midnight datetime."""
    return datetime(value.year, value.month, value.day) if type(value) is date else value


def test_types_and_values_match_what_openpyxl_reads(tmp_path: Path) -> None:
    path = workbook(folder_of(tmp_path) / "orders.xlsx", {"orders": [HEADER, *rows(1, 250)]})
    data = read_ok(file_source(tmp_path, "excel")).data.drop(FILE_COLUMNS)

    assert data.schema == pl.Schema(
        {"id": pl.Int64, "amount": pl.Float64, "name": pl.String, "paid": pl.Boolean, "day": pl.Date,
         "ts": pl.Datetime("ms"), "note": pl.String}
    )  # fmt: skip
    expected = openpyxl_rows(path, "orders")
    assert [tuple(as_openpyxl(v) for v in row) for row in data.iter_rows()] == expected
    assert len(expected) == 250


def test_a_text_cell_past_row_100_of_a_number_column_is_an_error_not_a_null(tmp_path: Path) -> None:
    late = [[i, i * 1.5] for i in range(1, 150)] + [[150, "unknown"]]
    workbook(folder_of(tmp_path) / "orders.xlsx", {"orders": [["id", "amount"], *late]})
    source = file_source(tmp_path, "excel")
    with pytest.raises(
        SourceError,
        match=r"type coercion is strict and column contains \{.*\} \(could not determine dtype for column amount\).*schema_overrides",
    ):
        read(source)
    as_text = file_source(tmp_path, "excel", configure={"read_options": {"schema_overrides": {"amount": "String"}}})
    assert read_ok(as_text).data["amount"].to_list()[-2:] == ["223.5", "unknown"]
    datacoolie = file_source(tmp_path, "excel", configure={"read_options": {"infer_schema_length": 100,
                                                                            "read_options": {"dtype_coercion": "coerce"}}})  # fmt: skip
    assert read_ok(datacoolie).data["amount"].to_list()[-1] is None  # Polars' defaults: "unknown" silently lost


def test_sheet_selection_and_header(tmp_path: Path) -> None:
    path = workbook(
        folder_of(tmp_path) / "book.xlsx",
        {"orders": [HEADER, *rows(1, 3)], "returns": [["id", "reason"], [9, "broken"]], "raw": [[1, "a"], [2, "b"]]},
    )
    first = read_ok(file_source(tmp_path, "excel")).data
    assert first["id"].to_list() == [1, 2, 3]  # the first sheet by default

    named = read_ok(file_source(tmp_path, "excel", configure={"read_options": {"sheet_name": "returns"}})).data
    assert named.drop(FILE_COLUMNS).rows() == openpyxl_rows(path, "returns")

    every = read_ok(file_source(tmp_path, "excel", configure={"read_options": {"sheet_name": ["orders", "returns"]}}))
    assert every.data["id"].to_list() == [1, 2, 3, 9]
    assert every.data["reason"].to_list() == [None, None, None, "broken"]  # stacked by column name

    headless = {"read_options": {"sheet_name": "raw", "header": "false"}}
    raw = read_ok(file_source(tmp_path, "excel", configure=headless)).data.drop(FILE_COLUMNS)
    assert raw.rows() == [(1, "a"), (2, "b")]
    assert raw.columns == ["column_0", "column_1"]

    with pytest.raises(SourceError, match=r"has the sheets 'orders', 'returns', 'raw'; did you mean 'returns'\?"):
        read(file_source(tmp_path, "excel", configure={"read_options": {"sheet_name": "retruns"}}))
    with pytest.raises(SourceError, match=r"read option 'sheet' is not an option of polars.read_excel"):
        read(file_source(tmp_path, "excel", configure={"read_options": {"sheet": "orders"}}))


def test_incremental_by_file_modification_time(tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    workbook(folder / "jan.xlsx", {"orders": [HEADER, *rows(1, 2)]}, minute=1)
    workbook(folder / "feb.xlsx", {"orders": [HEADER, *rows(3, 2)]}, minute=2)
    (folder / "notes.csv").write_text("ignored\n")  # not .xlsx: not listed
    source = file_source(tmp_path, "excel", watermark_columns=[FILE_MODIFICATION_TIME])

    run1 = read_ok(source)
    assert run1.data["id"].to_list() == [1, 2, 3, 4]
    assert run1.runtime.watermark_after == {FILE_MODIFICATION_TIME: T0 + timedelta(minutes=2)}

    workbook(folder / "mar.xlsx", {"orders": [HEADER, *rows(5, 1)]}, minute=3)
    run2 = read_ok(source, stored(run1.runtime.watermark_after))
    assert run2.data["id"].to_list() == [5]
    assert run2.runtime.source_action["files_read"] == [str(folder / "mar.xlsx")]
    assert read(source, stored(run2.runtime.watermark_after)) is None


def test_an_empty_sheet_is_no_rows_and_a_missing_engine_names_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workbook(folder_of(tmp_path) / "empty.xlsx", {"orders": []})
    assert read(file_source(tmp_path, "excel")) is None  # nothing to write: skipped, as an empty CSV
    monkeypatch.setitem(sys.modules, "fastexcel", None)  # as if it were not installed
    with pytest.raises(SourceError, match=r"excel.*pip install fastexcel"):
        read(file_source(tmp_path, "excel"))
