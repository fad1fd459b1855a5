"""Destination writers, keyed by format (D-01), and the Delta load strategies.

A writer's module is imported on its first use (:class:`~datacoolie_core.lazy.LazyRegistry`): a run
writing only files never imports deltalake.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from datacoolie_core.errors import DestinationError
from datacoolie_core.lazy import LazyRegistry, lazy_exports
from datacoolie_core.suggestions import did_you_mean

if TYPE_CHECKING:
    from datacoolie_core.destinations.base import CommitMarker, ReplaceWindow, Writer
    from datacoolie_core.destinations.delta_writer import DeltaWriter
    from datacoolie_core.destinations.file_writer import FILE_LOAD_TYPES, FileWriter
    from datacoolie_core.destinations.iceberg_writer import IcebergWriter
    from datacoolie_core.destinations.load_strategies import LOAD_STRATEGIES, Strategy, get_strategy

_FILE_WRITER = "datacoolie_core.destinations.file_writer:FileWriter"

WRITERS: Mapping[str, Writer] = LazyRegistry(
    {
        "delta": "datacoolie_core.destinations.delta_writer:DeltaWriter",
        "parquet": (_FILE_WRITER, "parquet"),
        "csv": (_FILE_WRITER, "csv"),
        "json": (_FILE_WRITER, "json"),
        "jsonl": (_FILE_WRITER, "jsonl"),
        "avro": (_FILE_WRITER, "avro"),
        "iceberg": "datacoolie_core.destinations.iceberg_writer:IcebergWriter",
    }
)
"""One writer per destination format (``iceberg`` needs the ``iceberg`` extra: pyiceberg)."""


def get_writer(fmt: str) -> Writer:
    """The writer for a destination format; an unknown format raises, listing the known ones."""
    try:
        return WRITERS[fmt]
    except KeyError:
        raise DestinationError(
            f"no writer for destination format '{fmt}'{did_you_mean(fmt, WRITERS)} (known: {', '.join(WRITERS)})"
        ) from None


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CommitMarker": "datacoolie_core.destinations.base",
        "ReplaceWindow": "datacoolie_core.destinations.base",
        "Writer": "datacoolie_core.destinations.base",
        "DeltaWriter": "datacoolie_core.destinations.delta_writer",
        "FILE_LOAD_TYPES": "datacoolie_core.destinations.file_writer",
        "FileWriter": "datacoolie_core.destinations.file_writer",
        "IcebergWriter": "datacoolie_core.destinations.iceberg_writer",
        "LOAD_STRATEGIES": "datacoolie_core.destinations.load_strategies",
        "Strategy": "datacoolie_core.destinations.load_strategies",
        "get_strategy": "datacoolie_core.destinations.load_strategies",
    },
)

__all__ = [
    "FILE_LOAD_TYPES",
    "LOAD_STRATEGIES",
    "WRITERS",
    "CommitMarker",
    "DeltaWriter",
    "DestinationError",
    "FileWriter",
    "IcebergWriter",
    "ReplaceWindow",
    "Strategy",
    "Writer",
    "get_strategy",
    "get_writer",
]
