"""Write a metadata document (the JSON form) into the ``dc_framework_*`` tables, with plain SQL, for tests.

Ids are those the JSON form derives (``connection_id`` / ``dataflow_id`` given, else the name's
uuid5), so a dataflow keeps its identity, and its watermark, whichever form it is read from.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import sqlalchemy as sa

from datacoolie_core.models.coerce import name_to_uuid

LISTS = ("watermark_columns", "merge_keys", "partition_columns")


def write_metadata_database(document: dict[str, Any], url: str, workspace: str) -> None:
    """Insert ``document``'s connections, dataflows and schema hints as rows of ``workspace``."""
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg2://", 1))
    ids = {c["name"]: c.get("connection_id") or name_to_uuid(c["name"]) for c in document.get("connections", [])}
    with engine.begin() as conn:
        for c in document.get("connections", []):
            row = {k: c.get(k) for k in ("name", "connection_type", "format", "catalog", "database")}
            row |= {"connection_id": ids[c["name"]], "workspace_id": workspace, "is_active": c.get("is_active", True)}
            row |= {k: json.dumps(c[k]) for k in ("configure", "secrets_ref") if c.get(k) is not None}
            _insert(conn, "dc_framework_connections", row)
        for d in document.get("dataflows", []):
            _insert(conn, "dc_framework_dataflows", _dataflow_row(d, ids, workspace))
        for group in document.get("schema_hints", []):
            for hint in group["hints"]:
                row = {"schema_hint_id": str(uuid.uuid4()), "workspace_id": workspace,
                       "connection_id": ids[group["connection_name"]], "table_name": group["table_name"],
                       "schema_name": group.get("schema_name"), "is_active": True, **hint}  # fmt: skip
                _insert(conn, "dc_framework_schema_hints", row)
    engine.dispose()


def _dataflow_row(d: dict[str, Any], ids: dict[str, str], workspace: str) -> dict[str, Any]:
    row: dict[str, Any] = {"dataflow_id": d.get("dataflow_id") or name_to_uuid(d["name"]), "workspace_id": workspace,
                           "is_active": d.get("is_active", True)}  # fmt: skip
    row |= {k: d[k] for k in ("name", "description", "stage", "group_number", "execution_order") if k in d}
    row |= {k: json.dumps(d[k]) for k in ("transform", "configure") if k in d}
    for side in ("source", "destination"):
        for key, value in d[side].items():
            if key == "connection_name":
                row[f"{side}_connection_id"] = ids[value]
            elif key in LISTS or key == "configure":
                row[f"{side}_{key}"] = json.dumps(value)
            else:
                row[f"{side}_{key}"] = value
    return row


def _insert(conn: sa.Connection, table: str, row: dict[str, Any]) -> None:
    row = {k: v for k, v in row.items() if v is not None}
    conn.execute(sa.text(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})"), row)
