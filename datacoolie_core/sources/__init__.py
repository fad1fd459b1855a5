"""Source readers, keyed by connection format (DataCoolie S-01).

Example::

    from datacoolie_core.sources import ReadRequest, get_reader

    result = get_reader(dataflow.source.connection.format).read(dataflow.source, ReadRequest(watermark=stored))
    if result is None:
        ...  # nothing qualifies: skip the dataflow, write nothing, keep the watermark

A reader's module is imported on its first use (:class:`~datacoolie_core.lazy.LazyRegistry`): a run
that reads parquet never imports the database reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from datacoolie_core.errors import SourceError
from datacoolie_core.lazy import LazyRegistry, lazy_exports
from datacoolie_core.suggestions import did_you_mean

if TYPE_CHECKING:
    from datacoolie_core.sources.api import ApiReader
    from datacoolie_core.sources.base import Reader, ReadRange, ReadRequest, ReadResult
    from datacoolie_core.sources.database import DatabaseReader
    from datacoolie_core.sources.delta import DeltaReader
    from datacoolie_core.sources.file import FileReader
    from datacoolie_core.sources.function import FunctionReader
    from datacoolie_core.sources.iceberg import IcebergReader

_FILE_READER = "datacoolie_core.sources.file:FileReader"
FILE_FORMATS = ("parquet", "csv", "json", "jsonl", "avro", "excel")
"""The formats the ``FileReader`` reads (``file.EXTENSIONS`` maps them to extensions); known without loading Polars."""

READERS: Mapping[str, Reader] = LazyRegistry(
    {
        **dict.fromkeys(FILE_FORMATS, _FILE_READER),
        "delta": "datacoolie_core.sources.delta:DeltaReader",
        "sql": "datacoolie_core.sources.database:DatabaseReader",
        "function": "datacoolie_core.sources.function:FunctionReader",
        "api": "datacoolie_core.sources.api:ApiReader",
        "iceberg": "datacoolie_core.sources.iceberg:IcebergReader",
    }
)
"""Connection format -> reader (the file formats share one ``FileReader``)."""

UNSUPPORTED: dict[str, str] = {}
"""Formats DataCoolie reads that this engine does not, with what to do instead."""


def get_reader(fmt: str) -> Reader:
    """The reader of connection format ``fmt``.

    Raises:
        SourceError: an unsupported or unknown format (with the closest known one).
    """
    if fmt in READERS:
        return READERS[fmt]
    if fmt in UNSUPPORTED:
        raise SourceError(f"format '{fmt}' is not supported by this engine as a source; {UNSUPPORTED[fmt]}")
    raise SourceError(f"unknown source format '{fmt}'{did_you_mean(fmt, READERS)}; known formats: {', '.join(READERS)}")


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ApiReader": "datacoolie_core.sources.api",
        "Reader": "datacoolie_core.sources.base",
        "ReadRange": "datacoolie_core.sources.base",
        "ReadRequest": "datacoolie_core.sources.base",
        "ReadResult": "datacoolie_core.sources.base",
        "DatabaseReader": "datacoolie_core.sources.database",
        "DeltaReader": "datacoolie_core.sources.delta",
        "FileReader": "datacoolie_core.sources.file",
        "FunctionReader": "datacoolie_core.sources.function",
        "IcebergReader": "datacoolie_core.sources.iceberg",
    },
)

__all__ = [
    "FILE_FORMATS",
    "READERS",
    "ApiReader",
    "UNSUPPORTED",
    "DatabaseReader",
    "DeltaReader",
    "FileReader",
    "FunctionReader",
    "IcebergReader",
    "ReadRange",
    "ReadRequest",
    "ReadResult",
    "Reader",
    "get_reader",
]
