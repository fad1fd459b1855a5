"""Source readers, keyed by connection format (DataCoolie S-01).

Example::

    from datacoolie_core.sources import ReadRequest, get_reader

    result = get_reader(dataflow.source.connection.format).read(dataflow.source, ReadRequest(watermark=stored))
    if result is None:
        ...  # nothing qualifies: skip the dataflow, write nothing, keep the watermark
"""

from __future__ import annotations

from datacoolie_core.errors import SourceError
from datacoolie_core.models.coerce import did_you_mean
from datacoolie_core.sources.api import ApiReader
from datacoolie_core.sources.base import Reader, ReadRange, ReadRequest, ReadResult
from datacoolie_core.sources.database import DatabaseReader
from datacoolie_core.sources.delta import DeltaReader
from datacoolie_core.sources.file import FileReader
from datacoolie_core.sources.function import FunctionReader

_FILE_READER = FileReader()

READERS: dict[str, Reader] = {
    "parquet": _FILE_READER,
    "csv": _FILE_READER,
    "json": _FILE_READER,
    "jsonl": _FILE_READER,
    "avro": _FILE_READER,
    "excel": _FILE_READER,
    "delta": DeltaReader(),
    "sql": DatabaseReader(),
    "function": FunctionReader(),
    "api": ApiReader(),
}
"""Connection format -> reader."""

UNSUPPORTED = {
    "iceberg": "read the table through a Delta copy or a function source",
}
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


__all__ = [
    "READERS",
    "ApiReader",
    "UNSUPPORTED",
    "DatabaseReader",
    "DeltaReader",
    "FileReader",
    "FunctionReader",
    "ReadRange",
    "ReadRequest",
    "ReadResult",
    "Reader",
    "get_reader",
]
