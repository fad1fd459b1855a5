from __future__ import annotations

import pytest

from datacoolie_core.errors import SourceError
from datacoolie_core.models.connection import FORMATS
from datacoolie_core.sources import (
    READERS,
    UNSUPPORTED,
    ApiReader,
    DatabaseReader,
    DeltaReader,
    FileReader,
    FunctionReader,
    IcebergReader,
    get_reader,
)


@pytest.mark.parametrize(
    ("fmt", "reader"),
    [("parquet", FileReader), ("csv", FileReader), ("json", FileReader), ("jsonl", FileReader), ("avro", FileReader),
     ("excel", FileReader), ("delta", DeltaReader), ("sql", DatabaseReader), ("function", FunctionReader), ("api", ApiReader),
     ("iceberg", IcebergReader)],
    ids=lambda v: v if isinstance(v, str) else "",
)  # fmt: skip
def test_reader_per_format(fmt: str, reader: type) -> None:
    assert isinstance(get_reader(fmt), reader)


def test_every_connection_format_is_read_or_explained() -> None:
    assert set(FORMATS) == set(READERS) | set(UNSUPPORTED)


def test_unknown_format_suggests() -> None:
    with pytest.raises(SourceError, match=r"unknown source format 'parquett'; did you mean 'parquet'\?"):
        get_reader("parquett")
