"""Write a metadata document (the JSON form) as a DataCoolie Excel workbook (P-09), for tests.

The writer is independent of the reader: openpyxl cells from the JSON objects, flattened the way a
person fills the sheets. It uses each way the layout allows, so one golden covers them: a
``configure`` JSON cell plus ``configure_<key>`` columns, comma lists and JSON arrays for list
columns, and a whole ``transform`` JSON cell whose ``select_columns``/``drop_columns`` move to
their own ``transform_*`` columns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openpyxl

SPLIT_CONFIGURE_KEYS = ("base_path", "use_hive_partitioning", "backward_days", "database_type")
"""Connection configure keys written in their own ``configure_<key>`` column (scalars)."""
PER_FIELD_TRANSFORM = ("select_columns", "drop_columns", "filter_expression")


def write_metadata_workbook(document: dict[str, Any], path: Path) -> Path:
    book = openpyxl.Workbook()
    book.remove(book.active)
    _sheet(book, "connections", [_connection_row(c) for c in document.get("connections", [])])
    _sheet(book, "dataflows", [_dataflow_row(d) for d in document.get("dataflows", [])])
    hints = [
        {**{k: v for k, v in group.items() if k != "hints"}, **hint}
        for group in document.get("schema_hints", [])
        for hint in group["hints"]
    ]
    if hints:
        _sheet(book, "schema_hints", [{k: _cell(v) for k, v in h.items()} for h in hints])
    book.save(path)
    return path


def _sheet(book: openpyxl.Workbook, name: str, rows: list[dict[str, Any]]) -> None:
    sheet = book.create_sheet(name)
    columns = list(dict.fromkeys(k for row in rows for k in row))
    sheet.append(columns)
    for row in rows:
        sheet.append([row.get(c) for c in columns])


def _connection_row(connection: dict[str, Any]) -> dict[str, Any]:
    row = {k: _cell(v) for k, v in connection.items() if k not in ("configure", "secrets_ref")}
    configure = dict(connection.get("configure") or {})
    for key in SPLIT_CONFIGURE_KEYS:
        if key in configure and not isinstance(configure[key], dict | list):
            row[f"configure_{key}"] = configure.pop(key)
    if configure:
        row["configure"] = json.dumps(configure)
    if connection.get("secrets_ref") is not None:
        row["secrets_ref"] = _cell(connection["secrets_ref"])
    return row


def _dataflow_row(dataflow: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for key, value in dataflow.items():
        if key in ("source", "destination"):
            for field, inner in value.items():
                row[f"{key}_{field}"] = (
                    _list_cell(inner) if field in ("watermark_columns", "merge_keys") else _cell(inner)
                )
        elif key == "transform" and isinstance(value, dict):
            whole = {k: v for k, v in value.items() if k not in PER_FIELD_TRANSFORM}
            if whole:
                row["transform"] = json.dumps(whole)
            for field in PER_FIELD_TRANSFORM:
                if field in value:
                    row[f"transform_{field}"] = _list_cell(value[field])
        else:
            row[key] = _cell(value)
    return row


def _list_cell(value: Any) -> Any:
    """A list as a comma list when plain names, else as a JSON array (both are accepted)."""
    if isinstance(value, list) and all(isinstance(v, str) and "," not in v for v in value):
        return ", ".join(value)
    return _cell(value)


def _cell(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, dict | list) else value
