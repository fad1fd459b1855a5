"""Which sources the sensors can watch, decided at code-location load without loading a reader.

The sensors' readers (:mod:`.observations`: fingerprints; :mod:`.source_changes`: the partitions
new data touches) need Polars, deltalake, pyarrow and sqlglot. A code server that only serves the
UI never evaluates a sensor, so the code location decides here what is sensed and the readers load
with the first evaluation.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from datacoolie_core import DataFlow
from datacoolie_core.api import FILE_FORMATS
from datacoolie_dagster.location.tables import SourceRef

Fingerprint = dict[str, Any]
"""JSON-able; equal fingerprints mean "no new data"."""


def is_sensable(dataflow: DataFlow, refs: Sequence[SourceRef]) -> bool:
    """Whether :func:`.observations.fingerprint_source` can fingerprint ``dataflow``'s external ``refs``."""
    source = dataflow.source
    fmt = source.connection.format or ""
    if not refs or source.python_function:
        return False
    if fmt == "delta":
        return all(ref.path for ref in refs)
    if fmt == "iceberg":
        return bool(source.table) and not source.query
    return fmt in FILE_FORMATS or fmt in ("sql", "api")


def senses_partitions(dataflow: DataFlow) -> bool:
    """Whether :func:`.source_changes.read_change` can map ``dataflow``'s new source data to partitions (its
    format's changes carry their window values: Delta versions, files, database rows; not API or Iceberg
    sources, which the source sensor fingerprints as a whole)."""
    fmt = dataflow.source.connection.format or ""
    return fmt in ("delta", "sql") or fmt in FILE_FORMATS


def has_data(fingerprint: Fingerprint) -> bool:
    """Whether the fingerprinted source holds anything to load."""
    if "delta_versions" in fingerprint:
        return True  # the table exists (a missing one raised); version 0 may hold rows
    if "files" in fingerprint:
        return bool(fingerprint["files"])
    if "iceberg_snapshots" in fingerprint:
        return any(snapshot is not None for snapshot in fingerprint["iceberg_snapshots"].values())
    return bool(fingerprint.get("rows"))


def ref_name(ref: SourceRef) -> str:
    """The key of ``ref`` in a Delta fingerprint's ``delta_versions``."""
    return os.path.normpath(ref.path or "")
