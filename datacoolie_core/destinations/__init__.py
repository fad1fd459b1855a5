"""Destination writers, keyed by format (D-01), and the Delta load strategies."""

from __future__ import annotations

from datacoolie_core.destinations.base import CommitMarker, ReplaceWindow, Writer
from datacoolie_core.destinations.delta_writer import DeltaWriter
from datacoolie_core.destinations.file_writer import FILE_LOAD_TYPES, FileWriter
from datacoolie_core.destinations.load_strategies import LOAD_STRATEGIES, Strategy, get_strategy
from datacoolie_core.errors import DestinationError
from datacoolie_core.models.coerce import did_you_mean

WRITERS: dict[str, Writer] = {
    "delta": DeltaWriter(),
    "parquet": FileWriter("parquet"),
    "csv": FileWriter("csv"),
    "json": FileWriter("json"),
    "jsonl": FileWriter("jsonl"),
    "avro": FileWriter("avro"),
}
"""One writer per destination format; there is no iceberg writer (DataCoolie's is Spark/catalog-only)."""


def get_writer(fmt: str) -> Writer:
    """The writer for a destination format; an unknown format raises, listing the known ones."""
    try:
        return WRITERS[fmt]
    except KeyError:
        raise DestinationError(
            f"no writer for destination format '{fmt}'{did_you_mean(fmt, WRITERS)} (known: {', '.join(WRITERS)})"
        ) from None


__all__ = [
    "FILE_LOAD_TYPES",
    "LOAD_STRATEGIES",
    "WRITERS",
    "CommitMarker",
    "DeltaWriter",
    "DestinationError",
    "FileWriter",
    "ReplaceWindow",
    "Strategy",
    "Writer",
    "get_strategy",
    "get_writer",
]
