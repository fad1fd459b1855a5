"""Pure selection rules shared by metadata providers: stage filters and shared schema hints."""

from __future__ import annotations

import os
from collections.abc import Sequence

from datacoolie_core.models.coerce import ensure_list
from datacoolie_core.models.connection import Connection
from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.models.transform import SchemaHint, SharedSchemaHint


def normalize_names(value: str | Sequence[str] | None) -> list[str]:
    """``None``/``""`` -> ``[]`` (no filter); ``"a,b"`` or ``["a", "b"]`` -> ``["a", "b"]`` (P-02)."""
    return [str(v).strip() for v in ensure_list(value) if str(v).strip()]


def normalize_paths(value: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None) -> list[str]:
    """One path, several, or none, as a list of strings."""
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    return [os.fspath(v) for v in value]


def matching_schema_hints(
    groups: Sequence[SharedSchemaHint], connection: Connection, table: str, schema_name: str | None
) -> list[SchemaHint]:
    """Active hints of the group for ``connection`` + ``table`` (+ ``schema_name``).

    Tables and schemas compare case-insensitively. A group that names a schema matches only that
    schema; a group without one matches the table in any schema, and is used only when no
    schema-specific group matches.
    """

    def applies(group: SharedSchemaHint) -> bool:
        same_connection = group.connection_name == connection.name or group.connection_id == connection.connection_id
        return same_connection and group.table_name.lower() == table.lower()

    candidates = [g for g in groups if applies(g)]
    exact = [g for g in candidates if g.schema_name and schema_name and g.schema_name.lower() == schema_name.lower()]
    chosen = exact or [g for g in candidates if not g.schema_name]
    return [hint for group in chosen for hint in group.hints if hint.is_active]


def with_shared_schema_hints(dataflow: DataFlow, groups: Sequence[SharedSchemaHint]) -> DataFlow:
    """The dataflow with matching shared hints attached, unless it has its own (M-34, M-44).

    Only table sources of connections with ``use_schema_hint`` get shared hints.
    """
    source = dataflow.source
    if dataflow.transform.schema_hints or not source.table or not source.connection.use_schema_hint:
        return dataflow
    hints = matching_schema_hints(groups, source.connection, source.table, source.schema_name)
    if not hints:
        return dataflow
    attached = dataflow.model_copy(update={"transform": dataflow.transform.model_copy(update={"schema_hints": hints})})
    return attached
