"""The writer registry: one writer per destination format, unknown formats suggest the closest."""

from __future__ import annotations

import pytest

from datacoolie_core.destinations import WRITERS, DeltaWriter, FileWriter, IcebergWriter, get_writer
from datacoolie_core.errors import DestinationError
from datacoolie_core.models.dataflow import WRITABLE_FORMATS


def test_every_writable_format_has_a_writer() -> None:
    assert sorted(WRITERS) == sorted(WRITABLE_FORMATS)
    assert isinstance(get_writer("delta"), DeltaWriter)
    assert isinstance(get_writer("iceberg"), IcebergWriter)
    files = [f for f in WRITERS if f not in ("delta", "iceberg")]
    assert all(isinstance(get_writer(f), FileWriter) and get_writer(f).format == f for f in files)


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        ("detla", r"no writer for destination format 'detla'; did you mean 'delta'\? \(known: delta, parquet"),
    ],
    ids=["typo"],
)
def test_unknown_formats_raise(fmt: str, message: str) -> None:
    with pytest.raises(DestinationError, match=message):
        get_writer(fmt)
