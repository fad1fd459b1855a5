"""The tables of metadata in a database (DataCoolie P-11) and how their rows become a metadata document.

Four tables (SQLAlchemy Core; SQLite and PostgreSQL):

* ``dc_framework_connections``: one row per connection; ``configure`` and ``secrets_ref`` are JSON text;
* ``dc_framework_dataflows``: the dataflow's fields, the source and destination flattened into
  ``source_*`` / ``destination_*`` columns (a connection referenced by ``source_connection_id``), and
  JSON text ``transform``, ``configure``, ``source_configure``, ``destination_configure``;
  ``source_watermark_columns`` / ``destination_merge_keys`` / ``destination_partition_columns`` hold
  a JSON array or a comma list;
* ``dc_framework_schema_hints``: one row per column hint of ``(connection_id, schema_name, table_name)``;
* ``dc_framework_watermarks``: one row per dataflow (``dataflow_id`` unique): ``current_value`` (the
  watermark text), ``previous_value``, who wrote it (``job_id``, ``dataflow_run_id``) and when.

Every row carries a ``workspace_id``; a row with ``deleted_at`` set is deleted (soft delete) and
never read. Issues of the built document name the table, the row's id and the column.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from datacoolie_core.errors import MetadataIssue
from datacoolie_core.metadata.origins import column_of, object_row

TABLES = sa.MetaData()


def _audit() -> list[sa.Column[Any]]:
    return [
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now()),
        sa.Column("updated_at", sa.DateTime(timezone=True)),
        sa.Column("deleted_at", sa.DateTime(timezone=True)),
    ]


CONNECTIONS = sa.Table(
    "dc_framework_connections",
    TABLES,
    sa.Column("connection_id", sa.String(64), primary_key=True),
    sa.Column("workspace_id", sa.String(64), nullable=False, index=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("connection_type", sa.String(32)),
    sa.Column("format", sa.String(32)),
    sa.Column("catalog", sa.String(255)),
    sa.Column("database", sa.String(255)),
    sa.Column("configure", sa.Text),
    sa.Column("secrets_ref", sa.Text),
    sa.Column("is_active", sa.Boolean, nullable=False, server_default=sa.true()),
    *_audit(),
)
_ENDPOINT = ("connection_id", "schema_name", "table")
DATAFLOWS = sa.Table(
    "dc_framework_dataflows",
    TABLES,
    sa.Column("dataflow_id", sa.String(64), primary_key=True),
    sa.Column("workspace_id", sa.String(64), nullable=False, index=True),
    sa.Column("name", sa.String(255)),
    sa.Column("description", sa.Text),
    sa.Column("stage", sa.String(255)),
    sa.Column("group_number", sa.Integer),
    sa.Column("execution_order", sa.Integer),
    sa.Column("processing_mode", sa.String(32)),
    sa.Column("is_active", sa.Boolean, nullable=False, server_default=sa.true()),
    *(sa.Column(f"source_{c}", sa.String(255)) for c in _ENDPOINT),
    sa.Column("source_query", sa.Text),
    sa.Column("source_python_function", sa.String(255)),
    sa.Column("source_watermark_columns", sa.Text),
    sa.Column("source_filter_expression", sa.Text),
    sa.Column("source_configure", sa.Text),
    *(sa.Column(f"destination_{c}", sa.String(255)) for c in _ENDPOINT),
    sa.Column("destination_load_type", sa.String(32)),
    sa.Column("destination_merge_keys", sa.Text),
    sa.Column("destination_partition_columns", sa.Text),
    sa.Column("destination_configure", sa.Text),
    sa.Column("transform", sa.Text),
    sa.Column("configure", sa.Text),
    *_audit(),
)
SCHEMA_HINTS = sa.Table(
    "dc_framework_schema_hints",
    TABLES,
    sa.Column("schema_hint_id", sa.String(64), primary_key=True),
    sa.Column("workspace_id", sa.String(64), nullable=False, index=True),
    sa.Column("connection_id", sa.String(64), nullable=False),
    sa.Column("schema_name", sa.String(255)),
    sa.Column("table_name", sa.String(255), nullable=False),
    sa.Column("column_name", sa.String(255), nullable=False),
    sa.Column("data_type", sa.String(64), nullable=False),
    sa.Column("format", sa.String(255)),
    sa.Column("precision", sa.Integer),
    sa.Column("scale", sa.Integer),
    sa.Column("default_value", sa.Text),
    sa.Column("ordinal_position", sa.Integer),
    sa.Column("is_active", sa.Boolean, nullable=False, server_default=sa.true()),
    *_audit(),
)
WATERMARKS = sa.Table(
    "dc_framework_watermarks",
    TABLES,
    sa.Column("watermark_id", sa.String(64), primary_key=True),
    sa.Column("dataflow_id", sa.String(64), nullable=False, unique=True),
    sa.Column("current_value", sa.Text),
    sa.Column("previous_value", sa.Text),
    sa.Column("job_id", sa.String(64)),
    sa.Column("dataflow_run_id", sa.String(64)),
    sa.Column("updated_at", sa.DateTime(timezone=True)),
)

JSON_TEXT = {"configure", "secrets_ref", "transform", "source_configure", "destination_configure"}
LIST_TEXT = {"source_watermark_columns", "destination_merge_keys", "destination_partition_columns"}
_KEYS = {"connections": CONNECTIONS, "dataflows": DATAFLOWS, "schema_hints": SCHEMA_HINTS}
_ID = {"connections": "connection_id", "dataflows": "dataflow_id", "schema_hints": "schema_hint_id"}


@dataclass
class Built:
    """A document built from rows, the issues found in the rows, and each object's row ids."""

    document: dict[str, Any]
    issues: list[MetadataIssue]
    rows: dict[str, list[list[str]]]

    def locate(self, issue: MetadataIssue, where: str) -> MetadataIssue:
        """``issue`` with its JSON path replaced by the table, the row id and the column."""
        found = object_row(issue.path, self.rows)
        if found is None:
            return issue
        section, row_id, rest = found
        names = _KEYS[section].c.keys()
        column, inner = column_of(rest, names, lambda c: c.replace("connection_name", "connection_id"))
        path = _row(section, row_id) + (f", column {column}" if column else "") + (f", at {inner}" if inner else "")
        return MetadataIssue(path, issue.message, issue.severity, file=where, subject=issue.subject)


def _row(section: str, row_id: str) -> str:
    return f"{_KEYS[section].name} ({_ID[section]} '{row_id}')"


def build_document(
    connections: list[dict[str, Any]], dataflows: list[dict[str, Any]], hints: list[dict[str, Any]]
) -> Built:
    """The metadata document of the rows of one workspace (deleted rows already left out)."""
    built = Built({}, [], {"connections": [], "dataflows": [], "schema_hints": []})
    names = {row["connection_id"]: row["name"] for row in connections}
    built.document["connections"] = [_connection(row, built) for row in connections]
    built.document["dataflows"] = [_dataflow(row, names, built) for row in dataflows]
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in hints:
        key = (row["connection_id"], row["schema_name"], row["table_name"])
        if key not in groups:
            groups[key] = {"connection_id": key[0], "schema_name": key[1], "table_name": key[2], "hints": []}
            built.rows["schema_hints"].append([])
        fields = ("column_name", "data_type", "format", "precision", "scale", "default_value", "ordinal_position")
        groups[key]["hints"].append(_present(row, (*fields, "is_active")))
        built.rows["schema_hints"][list(groups).index(key)].append(row["schema_hint_id"])
    built.document["schema_hints"] = [{k: v for k, v in g.items() if v is not None} for g in groups.values()]
    return built


def _connection(row: dict[str, Any], built: Built) -> dict[str, Any]:
    built.rows["connections"].append([row["connection_id"]])
    fields = ("name", "connection_id", "workspace_id", "connection_type", "format", "catalog", "database", "is_active")
    return _present(row, fields) | _decoded(row, ("configure", "secrets_ref"), "connections", built)


def _dataflow(row: dict[str, Any], names: dict[str, str], built: Built) -> dict[str, Any]:
    built.rows["dataflows"].append([row["dataflow_id"]])
    fields = ("name", "dataflow_id", "workspace_id", "description", "stage", "group_number", "execution_order",
              "processing_mode", "is_active")  # fmt: skip
    flow = _present(row, fields) | _decoded(row, ("transform", "configure"), "dataflows", built)
    for side in ("source", "destination"):
        columns = [c for c in row if c.startswith(f"{side}_") and c != f"{side}_connection_id"]
        endpoint = {c.removeprefix(f"{side}_"): v for c, v in _present(row, columns).items()}
        endpoint |= {c.removeprefix(f"{side}_"): v for c, v in _decoded(row, columns, "dataflows", built).items()}
        connection_id = row.get(f"{side}_connection_id")  # unknown (deleted, other workspace): validation says so
        endpoint["connection_name"] = names.get(str(connection_id), connection_id)
        flow[side] = endpoint
    return flow


def _present(row: dict[str, Any], fields: Any) -> dict[str, Any]:
    return {f: row[f] for f in fields if row.get(f) is not None and f not in JSON_TEXT | LIST_TEXT}


def _decoded(row: dict[str, Any], fields: Any, section: str, built: Built) -> dict[str, Any]:
    """The JSON-text and list-text columns of ``fields``, parsed; a bad one is an issue at its column."""
    out: dict[str, Any] = {}
    for field in fields:
        text = row.get(field)
        if field not in JSON_TEXT | LIST_TEXT or text is None or not str(text).strip():
            continue
        if field in LIST_TEXT and not str(text).lstrip().startswith("["):
            out[field] = [item.strip() for item in str(text).split(",") if item.strip()]
            continue
        try:
            out[field] = json.loads(text)
        except json.JSONDecodeError as e:
            id_ = row[_ID[section]]
            message = f"invalid JSON at character {e.pos + 1}: {e.msg}; store JSON text (double-quoted keys)"
            built.issues.append(MetadataIssue(_row(section, id_) + f", column {field}", message))
    return out
