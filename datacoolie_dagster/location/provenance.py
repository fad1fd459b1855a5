"""The data version and input provenance of a materialization the Dagster layer records itself.

Dagster derives a materialization's provenance (its code version, and the data version and event
of every upstream it saw) only for the events of a ``MaterializeResult``. The events we build
ourselves (a stage job's per-partition writes, a backfill's finished partitions, a command-line
run, an adopted table) must carry the same tags, or the UI calls a partition loaded after its
upstream last changed "Unsynced: has a new dependency on …".

A table's data version is its Delta version: a run that wrote nothing keeps it, so the tables
that read it stay in sync.
"""

from __future__ import annotations

import dagster as dg

CODE_VERSION_TAG = "dagster/code_version"
DATA_VERSION_TAG = "dagster/data_version"
DATA_VERSION_IS_USER_PROVIDED_TAG = "dagster/data_version_is_user_provided"
INPUT_DATA_VERSION_TAG_PREFIX = "dagster/input_data_version"
INPUT_EVENT_POINTER_TAG_PREFIX = "dagster/input_event_pointer"
INITIAL_DATA_VERSION = "INITIAL"
"""Dagster's data version of an asset assumed to have a value with none recorded (an external source)."""
NULL = "NULL"
"""Dagster's event pointer of no event."""


def data_version_of(table_version: int | None) -> dg.DataVersion | None:
    """The data version of a table at ``table_version`` (its Delta version or Iceberg sequence number)."""
    return None if table_version is None else dg.DataVersion(str(table_version))


def provenance_tags(
    instance: dg.DagsterInstance | None,
    spec: dg.AssetSpec,
    table_version: int | None,
) -> dict[str, str]:
    """Tags of a materialization of ``spec``: code version, data version and, with an ``instance``,
    the data version and latest event of every upstream as they are now (a table's latest
    materialization, an external source's latest observation).

    Without a code version Dagster reads no provenance, so none is recorded. An upstream with no
    event is recorded as Dagster's ``INITIAL`` version, which Dagster equates with "never
    materialized", so its first materialization or observation shows as a change.
    """
    tags: dict[str, str] = {}
    if table_version is not None:
        tags[DATA_VERSION_TAG] = str(table_version)
        tags[DATA_VERSION_IS_USER_PROVIDED_TAG] = "true"
    if not spec.code_version:
        return tags
    tags[CODE_VERSION_TAG] = spec.code_version
    if instance is None:
        return tags
    for dep in spec.deps:
        key = dep.asset_key
        record = instance.get_latest_data_version_record(key)  # a materialization, else an observation
        if record is None:
            version, pointer = INITIAL_DATA_VERSION, NULL
        else:
            tagged = (record.event_log_entry.tags or {}).get(DATA_VERSION_TAG)
            version, pointer = tagged or INITIAL_DATA_VERSION, str(record.storage_id)
        name = key.to_user_string()
        tags[f"{INPUT_DATA_VERSION_TAG_PREFIX}/{name}"] = version
        tags[f"{INPUT_EVENT_POINTER_TAG_PREFIX}/{name}"] = pointer
    return tags
