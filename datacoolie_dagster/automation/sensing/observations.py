"""The fingerprint of a table's external sources: what the source sensor compares between evaluations.

Probing is core's (:mod:`datacoolie_core.sources.probe`: Delta versions from the log, file counts and
newest modification times, ``COUNT(*)``/``MAX`` over a database query, Iceberg snapshot ids, one full
read of an API). This module names the Delta tables a source reads as the code location knows them
(:class:`~datacoolie_dagster.location.tables.SourceRef`, with the fallback path an unqualified query
table has). Which sources are sensed is decided at load by :mod:`.sensable` (no reader loaded there).
A source that cannot be read raises ``SourceError`` naming it.
"""

from __future__ import annotations

from collections.abc import Sequence

from datacoolie_core import DataFlow
from datacoolie_core.api import source_fingerprint
from datacoolie_dagster.automation.sensing.sensable import Fingerprint, ref_name
from datacoolie_dagster.location.tables import SourceRef


def fingerprint_source(dataflow: DataFlow, refs: Sequence[SourceRef]) -> Fingerprint:
    """The fingerprint of what ``dataflow`` reads from ``refs`` (its external sources).

    Raises:
        SourceError: the source cannot be read (missing folder, no Delta table, database error).
    """
    return source_fingerprint(dataflow, source_paths(refs))


def source_paths(refs: Sequence[SourceRef]) -> dict[str, list[str | None]]:
    """``{name: [path, fallback path]}`` of each Delta table ``refs`` name, as the probe takes them."""
    return {ref_name(ref): [ref.path, ref.fallback_path] for ref in refs}
