"""Metadata in DataCoolie's Excel layout (P-09): one workbook, one sheet per section.

Sheets ``connections``, ``dataflows`` and ``schema_hints`` (a missing sheet is an empty section;
other sheets are ignored). Row 1 holds the column names, each further row one object:

* connections: the connection's fields (``name``, ``format``, ``is_active`` …), ``configure`` and
  ``secrets_ref`` as JSON cells, and ``configure_<key>`` columns (``configure_base_path``), which
  win over the same key of the ``configure`` cell;
* dataflows: the dataflow's fields, then ``source_*``, ``destination_*`` and ``transform_*``
  columns (``source_table``, ``destination_load_type``, ``transform_select_columns``). A whole
  ``transform`` JSON cell is merged with the ``transform_*`` cells (a ``transform_*`` cell wins).
  List columns (``source_watermark_columns``, ``destination_merge_keys``, …) take a comma list
  (``id, region``) or a JSON array; object columns take JSON;
* schema_hints: one row per column hint, grouped by (``connection_name``, ``table_name``,
  ``schema_name``) into the JSON form's hint groups.

The rows become the JSON document, validated like a JSON file; every issue is then located back
in the workbook: ``sheet 'dataflows', row 4, column 'destination_load_type' (F4)``. A blank cell is
an unset field (a blank ``is_active`` is true). Unlike DataCoolie, an ``is_active`` text that is
neither true nor false is an error, not false. Cells are read with openpyxl (read-only, formula
results as cached), the reader DataCoolie uses, so a cell means the same in both.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from datacoolie_core.errors import MetadataError, MetadataIssue
from datacoolie_core.input_bounds import MAX_FILE_BYTES
from datacoolie_core.metadata.origins import column_of, object_row
from datacoolie_core.metadata.validation import ValidatedDocument, validate_document
from datacoolie_core.models.connection import Connection
from datacoolie_core.models.dataflow import DataFlow, Destination, Source
from datacoolie_core.models.transform import SchemaHint, Transform
from datacoolie_core.suggestions import closest, did_you_mean

SHEETS = ("connections", "dataflows", "schema_hints")
LIST_COLUMNS = frozenset(
    {
        "source_watermark_columns",
        "destination_merge_keys",
        "destination_partition_columns",
        "transform_select_columns",
        "transform_drop_columns",
        "transform_deduplicate_columns",
        "transform_latest_data_columns",
    }
)
"""Columns taking a comma list or a JSON array (DataCoolie's list columns, plus the dedup lists)."""
_TRANSFORM_OBJECTS = ("additional_columns", "schema_hints", "rename_columns", "value_rules", "hash_columns",
                      "masking_rules", "configure")  # fmt: skip
JSON_COLUMNS = frozenset(
    {"configure", "secrets_ref", "transform", "source_connection", "source_configure", "destination_connection",
     "destination_configure", *(f"transform_{f}" for f in _TRANSFORM_OBJECTS)}
)  # fmt: skip
"""Columns holding an object or a list of objects, written as JSON."""
HINT_GROUP_KEYS = ("connection_name", "table_name", "schema_name")


def _fields(model: Any) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


@dataclass
class _SheetLayout:
    """The columns a sheet accepts: ``column -> key path`` in the JSON object."""

    columns: dict[str, tuple[str, ...]]
    open_prefixes: tuple[str, ...] = ()
    """``<prefix>_<key>`` columns for any key (``configure_<key>``)."""

    def path_of(self, column: str) -> tuple[str, ...] | None:
        if column in self.columns:
            return self.columns[column]
        for prefix in self.open_prefixes:
            if column.startswith(prefix + "_") and len(column) > len(prefix) + 1:
                return (*self.columns[prefix], column[len(prefix) + 1 :])
        return None


def _layouts() -> dict[str, _SheetLayout]:
    connection = _SheetLayout({f: (f,) for f in _fields(Connection)}, ("configure",))
    columns: dict[str, tuple[str, ...]] = {f: (f,) for f in _fields(DataFlow)}
    for prefix, model in (("source", Source), ("destination", Destination), ("transform", Transform)):
        columns |= {f"{prefix}_{f}": (prefix, f) for f in _fields(model)}
    dataflow = _SheetLayout(columns, ("configure",))
    hints = _SheetLayout({f: (f,) for f in (*HINT_GROUP_KEYS, "connection_id", *_fields(SchemaHint))})
    return {"connections": connection, "dataflows": dataflow, "schema_hints": hints}


@dataclass
class _Sheet:
    name: str
    header: dict[str, str] = field(default_factory=dict)
    """Column name -> column letter."""
    rows: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    """(row number, {column: value}) of every non-blank row."""
    duplicates: list[tuple[str, str]] = field(default_factory=list)
    """(column name, letter) of a name already used by an earlier column."""
    orphans: list[str] = field(default_factory=list)
    """Cells (``C7``) holding a value under a blank column name."""


@dataclass
class ExcelOrigins:
    """Where each object of the built document came from, to name cells in issues."""

    file: str
    sheets: dict[str, _Sheet]
    rows: dict[str, list[list[int]]]
    """Section -> per object, its row numbers (a schema-hint group: one row per hint)."""

    def locate(self, issue: MetadataIssue) -> MetadataIssue:
        """``issue`` with its JSON path replaced by the sheet, row and column it comes from."""
        found = object_row(issue.path, self.rows)
        if found is None:
            return issue
        section, row, rest = found
        sheet = self.sheets[section]
        column, inner = column_of(rest, sheet.header)
        where = f"sheet '{sheet.name}', row {row}"
        if column is not None:
            where += f", column '{column}' ({sheet.header[column]}{row})"
        where += f", at {inner}" if inner else ""
        return MetadataIssue(where, issue.message, issue.severity, file=self.file, subject=issue.subject)


def read_excel_metadata(path: str | Path) -> tuple[dict[str, Any], ExcelOrigins]:
    """The workbook as a metadata document (plain objects), and where each object came from.

    Raises:
        MetadataError: the workbook cannot be read, has an unknown column (with the closest known
            one), a repeated column, or a cell that is not valid JSON where JSON is expected.
    """
    path = Path(path)
    sheets = _read_sheets(path)
    issues: list[MetadataIssue] = []
    layouts = _layouts()
    document: dict[str, Any] = {}
    rows: dict[str, list[list[int]]] = {}
    for name, sheet in sheets.items():
        issues += _check_header(sheet, layouts[name], str(path))
        objects = [(row, _build(values, layouts[name], sheet, row, issues, str(path))) for row, values in sheet.rows]
        if name == "schema_hints":
            document[name], rows[name] = _group_hints(objects)
        else:
            document[name], rows[name] = [o for _, o in objects], [[r] for r, _ in objects]
    if issues:
        raise MetadataError(issues, file=str(path))
    return document, ExcelOrigins(str(path), sheets, rows)


def load_excel_document(path: str | Path) -> ValidatedDocument:
    """Read and validate an Excel metadata workbook; every issue names its sheet, row and column."""
    raw, origins = read_excel_metadata(path)
    document = validate_document(raw, file=str(path))
    located = tuple(origins.locate(issue) for issue in document.issues)
    return ValidatedDocument(
        document.connections, document.dataflows, document.schema_hints, located, str(path), document.invalid_dataflows
    )


def _read_sheets(path: Path) -> dict[str, _Sheet]:
    if path.suffix.lower() == ".xls":
        raise MetadataError("legacy .xls workbooks cannot be read; save the workbook as .xlsx", file=str(path))
    try:
        size = path.stat().st_size
    except OSError as e:
        raise MetadataError(f"cannot read the metadata file: {e.strerror or e}", file=str(path)) from e
    if size > MAX_FILE_BYTES:
        raise MetadataError(f"the workbook is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB", file=str(path))
    import openpyxl  # only when a workbook is read

    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as e:  # openpyxl raises zipfile, KeyError and its own errors for a damaged file
        raise MetadataError(
            f"cannot open the workbook ({type(e).__name__}: {e}); save it again as .xlsx from Excel", file=str(path)
        ) from e
    try:
        names = {str(n) for n in book.sheetnames}
        _check_sheet_names(names, str(path))
        return {n: _sheet(n, book[n].iter_rows(values_only=True)) for n in SHEETS if n in names}
    finally:
        book.close()


def _check_sheet_names(names: set[str], file: str) -> None:
    for name in sorted(names - set(SHEETS)):
        match = closest(name.strip().lower(), SHEETS, cutoff=0.8)
        if match and match not in names:
            raise MetadataError(
                [MetadataIssue(f"sheet '{name}'", f"is not read; did you mean '{match}'? Rename the sheet", file=file)],
                file=file,
            )


def _sheet(name: str, cells: Iterator[tuple[Any, ...]]) -> _Sheet:
    sheet = _Sheet(name)
    header = next(cells, ())
    columns = [_text(v) for v in header]
    for index, column in enumerate(columns):
        if column in sheet.header:
            sheet.duplicates.append((column, _letter(index)))
        elif column:
            sheet.header[column] = _letter(index)
    for number, values in enumerate(cells, start=2):
        cells_ = [(c, _cell_value(v), i) for i, (c, v) in enumerate(zip(columns, values, strict=False))]
        sheet.orphans += [f"{_letter(i)}{number}" for c, v, i in cells_ if not c and v is not None]
        row = {c: v for c, v, _ in cells_ if c and v is not None}
        if row:
            sheet.rows.append((number, row))
    return sheet


def _check_header(sheet: _Sheet, layout: _SheetLayout, file: str) -> list[MetadataIssue]:
    issues = [
        MetadataIssue(
            f"sheet '{sheet.name}', row 1, column {letter}", f"column '{column}' appears twice; keep one", file=file
        )
        for column, letter in sheet.duplicates
    ]
    known = [*layout.columns, *(f"{p}_<key>" for p in layout.open_prefixes)]
    for column, letter in sheet.header.items():
        where = f"sheet '{sheet.name}', row 1, column {letter}"
        if layout.path_of(column) is None:
            issues.append(MetadataIssue(where, f"unknown column '{column}'{did_you_mean(column, known)}", file=file))
    if sheet.orphans:
        cells = ", ".join(sheet.orphans[:5]) + (" …" if len(sheet.orphans) > 5 else "")
        message = f"cells {cells} hold values under a blank column name in row 1; name the column or clear the cells"
        issues.append(MetadataIssue(f"sheet '{sheet.name}'", message, file=file))
    return issues


def _build(
    values: dict[str, Any], layout: _SheetLayout, sheet: _Sheet, row: int, issues: list[MetadataIssue], file: str
) -> dict[str, Any]:
    """One row as a JSON object: keys nested by column, JSON cells parsed, per-field cells winning."""
    obj: dict[str, Any] = {}
    # whole-object cells first, so per-field columns (``transform_select_columns``) overwrite their keys
    for column in sorted(values, key=lambda c: len(layout.path_of(c) or ())):
        path = layout.path_of(column)
        if path is None:
            continue  # reported with the header
        value, problem = _convert(values[column], column, open_key=column not in layout.columns)
        if problem:
            where = f"sheet '{sheet.name}', row {row}, column '{column}' ({sheet.header[column]}{row})"
            issues.append(MetadataIssue(where, problem, file=file))
            continue
        _put(obj, path, value)
    return obj


def _convert(value: Any, column: str, *, open_key: bool = False) -> tuple[Any, str | None]:
    """A cell's value as the JSON form holds it; ``open_key``: a ``configure_<key>`` column, whose
    text is JSON when it parses as a JSON object or array (``{year}/{month}`` stays text)."""
    if open_key and isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        parsed, problem = _json(value, "")
        return (value, None) if problem else (parsed, None)
    if column in LIST_COLUMNS and isinstance(value, str):
        if value.lstrip().startswith("["):
            return _json(value, 'a JSON array like ["id", "region"] or a comma list like id, region')
        return [item.strip() for item in value.split(",") if item.strip()], None
    if column in JSON_COLUMNS and isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        return _json(value, "valid JSON (double-quoted keys and strings)")
    return value, None


def _json(text: str, expected: str) -> tuple[Any, str | None]:
    try:
        return json.loads(text), None
    except json.JSONDecodeError as e:
        return None, f"invalid JSON at character {e.pos + 1}: {e.msg}; write {expected}"


def _put(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    *parents, last = path
    for key in parents:
        current = obj.get(key)
        if not isinstance(current, dict):
            current = obj[key] = {} if current is None else current
        if not isinstance(current, dict):
            return  # a non-object whole cell: validation reports it at that cell
        obj = current
    obj[last] = value


def _group_hints(objects: list[tuple[int, dict[str, Any]]]) -> tuple[list[dict[str, Any]], list[list[int]]]:
    groups: dict[tuple[Any, ...], tuple[dict[str, Any], list[int]]] = {}
    for row, obj in objects:
        key = tuple(obj.get(k) for k in (*HINT_GROUP_KEYS, "connection_id"))
        head = {k: obj.pop(k) for k in (*HINT_GROUP_KEYS, "connection_id") if k in obj}
        group, rows = groups.setdefault(key, ({**head, "hints": []}, []))
        group["hints"].append(obj)
        rows.append(row)
    return [g for g, _ in groups.values()], [r for _, r in groups.values()]


def _cell_value(value: Any) -> Any:
    """A cell as JSON would hold it: blank text is unset, dates are ISO text."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return value


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _letter(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        letters = chr(65 + rem) + letters
    return letters
