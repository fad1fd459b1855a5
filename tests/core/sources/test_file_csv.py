"""CSV and JSON-lines sources beyond the Spark oracle: incremental loads over text columns, schema
hints on text, option errors. (Row-by-row agreement with Spark: ``test_file_spark_oracle.py``.)
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.exceptions import InvalidOperationError
from polars.testing import assert_frame_equal

from datacoolie_core.errors import SourceError
from datacoolie_core.models.connection import Connection
from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.sources import ReadRange
from datacoolie_core.sources.csv_text import CACHED_LINE_CHARS, _cached_columns_of_line
from datacoolie_core.transforms import SchemaConverter, TransformContext
from tests.core.sources.helpers import read, read_ok
from tests.core.sources.test_file import business, file_source, folder_of, set_mtime, stored

ORDERS = "id,code,changed_at,amount\n1,0179,2024-01-31 23:00:00,10.50\n2,0042,2024-02-01 08:00:00,4\n"
UTC_US = pl.Datetime("us", "UTC")


def land(tmp_path: Path, name: str, text: str, *, minute: int = 1) -> Path:
    path = folder_of(tmp_path) / name
    path.write_text(text)
    set_mtime(path, minute)
    return path


def csv_source(tmp_path: Path, options: dict[str, Any] | None = None, **source: Any) -> Any:
    return file_source(tmp_path, "csv", configure={"read_options": {"header": "true", **(options or {})}}, **source)


# --- typing --------------------------------------------------------------------------------------


def test_without_infer_schema_every_column_is_text_and_leading_zeros_survive(tmp_path: Path) -> None:
    land(tmp_path, "a.csv", ORDERS)
    data = business(read_ok(csv_source(tmp_path)).data)
    assert data.schema == pl.Schema(dict.fromkeys(("id", "code", "changed_at", "amount"), pl.String()))
    assert data["code"].to_list() == ["0179", "0042"]


def test_infer_schema_types_the_union_of_every_file(tmp_path: Path) -> None:
    land(tmp_path, "a.csv", "id,v\n1,2\n", minute=1)
    land(tmp_path, "b.csv", "id,v\n3,2.5\n", minute=2)
    data = business(read_ok(csv_source(tmp_path, {"inferSchema": "true"})).data)
    assert_frame_equal(data, pl.DataFrame({"id": [1, 3], "v": [2.0, 2.5]}, schema={"id": pl.Int32, "v": pl.Float64}))


# --- watermarks and replay ranges over text columns ----------------------------------------------


def test_inferred_timestamp_watermark_compares_as_timestamps_across_runs(tmp_path: Path) -> None:
    source = csv_source(tmp_path, {"inferSchema": "true"}, watermark_columns=["changed_at"])

    # load 1 — typed max
    land(tmp_path, "a.csv", ORDERS, minute=1)
    run1 = read_ok(source)
    assert run1.runtime.watermark_after == {"changed_at": datetime(2024, 2, 1, 8, tzinfo=UTC)}

    # load 2 — only the newer row of a new file
    land(tmp_path, "b.csv", "id,code,changed_at,amount\n3,0001,2024-02-01 08:00:00,1\n4,0002,2024-02-01T09:30:00,2\n")
    run2 = read_ok(source, stored(run1.runtime.watermark_after))
    assert run2.data["id"].to_list() == [4]


def test_replay_range_of_datetimes_casts_a_text_column_as_spark_does(tmp_path: Path) -> None:
    # "2024-02-01 08:00:00" < "2024-02-01T00:00:00" as text; as timestamps it belongs to February
    land(tmp_path, "a.csv", ORDERS)
    february = ReadRange("changed_at", datetime(2024, 2, 1), datetime(2024, 3, 1))
    assert read_ok(csv_source(tmp_path), read_range=february).data["id"].to_list() == ["2"]
    january = ReadRange("changed_at", datetime(2024, 1, 1), datetime(2024, 2, 1))
    assert read_ok(csv_source(tmp_path), read_range=january).data["id"].to_list() == ["1"]


def test_numeric_range_casts_a_text_column_to_a_number(tmp_path: Path) -> None:
    land(tmp_path, "a.csv", "id\n9\n10\n100\nx\n")
    result = read_ok(csv_source(tmp_path), read_range=ReadRange("id", 9, 100))
    assert result.data["id"].to_list() == ["9", "10"]  # as text "9" > "10"; "x" is null and never passes


def test_string_watermark_of_a_text_column_compares_as_text(tmp_path: Path) -> None:
    source = csv_source(tmp_path, watermark_columns=["changed_at"])
    land(tmp_path, "a.csv", ORDERS, minute=1)
    run1 = read_ok(source)
    assert run1.runtime.watermark_after == {"changed_at": "2024-02-01 08:00:00"}
    land(tmp_path, "b.csv", "id,changed_at\n3,2024-02-01 08:00:00\n4,2024-02-02 00:00:00\n", minute=2)
    assert read_ok(source, stored(run1.runtime.watermark_after)).data["id"].to_list() == ["4"]


# --- schema hints on text ------------------------------------------------------------------------


def hinted(tmp_path: Path, hints: list[dict[str, Any]]) -> pl.LazyFrame:
    """Read the landed CSV and apply ``hints`` as the transform's slot 10 does."""
    connections = {
        "src": Connection.model_validate(
            {
                "name": "src",
                "format": "csv",
                "configure": {"base_path": str(tmp_path / "landing"), "read_options": {"header": "true"}},
            }
        ),
        "lake": Connection.model_validate({"name": "lake", "format": "delta", "configure": {"base_path": "/tmp/x"}}),
    }
    flow = DataFlow.model_validate(
        {
            "name": "flow",
            "source": {"connection_name": "src", "schema_name": "sales", "table": "orders"},
            "destination": {"connection_name": "lake", "table": "out"},
            "transform": {"schema_hints": hints},
        },
        context={"connections": connections},
    )
    raw = read_ok(flow.source).data.lazy()
    ctx = TransformContext(flow, "run", datetime(2024, 3, 1, tzinfo=UTC))
    return SchemaConverter().apply(raw, ctx)[0]


def test_hints_cast_text_columns_and_unhinted_ones_stay_text(tmp_path: Path) -> None:
    land(tmp_path, "a.csv", ORDERS)
    hints = [
        {"column_name": "id", "data_type": "long"},
        {"column_name": "amount", "data_type": "decimal", "precision": 12, "scale": 2},
        {"column_name": "changed_at", "data_type": "timestamp"},
    ]
    data = business(hinted(tmp_path, hints).collect())
    expected = pl.DataFrame(
        {
            "id": [1, 2],
            "code": ["0179", "0042"],
            "changed_at": [datetime(2024, 1, 31, 23), datetime(2024, 2, 1, 8)],
            "amount": [Decimal("10.50"), Decimal("4.00")],
        },
        schema={"id": pl.Int64, "code": pl.String, "changed_at": pl.Datetime("us"), "amount": pl.Decimal(12, 2)},
    ).with_columns(pl.col("changed_at").dt.replace_time_zone("UTC"))
    assert_frame_equal(data, expected)


def test_a_text_value_that_does_not_fit_its_hint_fails_naming_it(tmp_path: Path) -> None:
    land(tmp_path, "a.csv", "id,code\n1,0179\n2,x42\n")
    with pytest.raises(InvalidOperationError, match="x42"):
        hinted(tmp_path, [{"column_name": "code", "data_type": "int"}]).collect()


# --- options and errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"seperator": ";"}, r"read option 'seperator' is not a CSV read option.*did you mean 'separator'"),
        ({"samplingRatio": "0.5"}, r"read option 'samplingRatio' is not a CSV read option.*supported \(Spark names\)"),
        ({"header": "perhaps"}, r"read option 'header' must be true or false, got 'perhaps'"),
        ({"quote": "''"}, r"read option 'quote' must be one character"),
        ({"sep": ""}, r"read option 'sep' is empty"),
        ({"mode": "LENIENT"}, r"read option 'mode' is 'LENIENT'; use one of PERMISSIVE, DROPMALFORMED, FAILFAST"),
        ({"encoding": "klingon"}, r"read option 'encoding' 'klingon' is not a known encoding"),
    ],
    ids=["typo", "unsupported-spark-option", "bad-boolean", "long-quote", "empty-sep", "bad-mode", "bad-encoding"],
)
def test_bad_csv_options_are_named(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    land(tmp_path, "a.csv", "id\n1\n")
    with pytest.raises(SourceError, match=message):
        read(csv_source(tmp_path, options))


def test_failfast_names_the_file_and_the_expected_width(tmp_path: Path) -> None:
    path = land(tmp_path, "a.csv", "a,b\n1,2\n3\n")
    with pytest.raises(SourceError, match=rf"file '{path}' has a row whose number of fields is not 2.*FAILFAST"):
        read(csv_source(tmp_path, {"mode": "FAILFAST"}))


def test_an_empty_csv_file_is_skipped(tmp_path: Path) -> None:
    land(tmp_path, "a.csv", "", minute=1)
    land(tmp_path, "b.csv", "id\n1\n", minute=2)
    assert business(read_ok(csv_source(tmp_path)).data)["id"].to_list() == ["1"]
    (folder_of(tmp_path) / "b.csv").unlink()
    assert read(csv_source(tmp_path)) is None


def test_each_file_keeps_its_own_header_when_some_share_one(tmp_path: Path) -> None:
    """The header is parsed once per distinct first line: files that share it and files that do not,
    quoted or not, each get their own columns."""
    land(tmp_path, "a.csv", "id,v\n1,x\n", minute=1)
    land(tmp_path, "b.csv", "id,w\n2,y\n", minute=2)
    land(tmp_path, "c.csv", "id,v\n3,z\n", minute=3)
    land(tmp_path, "d.csv", 'id,"v"\n4,"a,b"\n', minute=4)
    data = business(read_ok(csv_source(tmp_path)).data).sort("id")
    assert data.columns == ["id", "v", "w"]
    assert data.rows() == [("1", "x", None), ("2", None, "y"), ("3", "z", None), ("4", "a,b", None)]


def test_a_header_longer_than_the_cached_length_reads_its_columns_and_is_not_kept(tmp_path: Path) -> None:
    """A first line past ``CACHED_LINE_CHARS`` (a file without line breaks, a very wide header) is
    read as any header is, and the header cache does not keep it."""
    wide = "a" * (CACHED_LINE_CHARS + 1)
    land(tmp_path, "a.csv", f"id,{wide}\n1,x\n")
    before = _cached_columns_of_line.cache_info().currsize
    data = business(read_ok(csv_source(tmp_path)).data)
    assert data.columns == ["id", wide]
    assert data.rows() == [("1", "x")]
    assert _cached_columns_of_line.cache_info().currsize == before


def test_bad_json_line_names_the_file(tmp_path: Path) -> None:
    land(tmp_path, "a.jsonl", '{"a": 1}\nnot json\n')
    with pytest.raises(SourceError, match=r"cannot read file '.*a.jsonl'"):
        read(file_source(tmp_path, "jsonl"))


def test_unknown_json_option_is_named(tmp_path: Path) -> None:
    land(tmp_path, "a.jsonl", '{"a": 1}\n')
    source = file_source(tmp_path, "jsonl", configure={"read_options": {"primitiveAsString": "true"}})
    with pytest.raises(
        SourceError, match=r"'primitiveAsString' is not a JSON read option.*did you mean 'primitivesAsString'"
    ):
        read(source)


# --- JSON lines: samplingRatio ---------------------------------------------------------------------


def _jsonl(tmp_path: Path, options: dict[str, Any]) -> Any:
    return file_source(tmp_path, "jsonl", configure={"read_options": options})


def test_sampling_ratio_one_types_every_line_as_the_default_does(tmp_path: Path) -> None:
    land(tmp_path, "a.jsonl", '{"a": 1}\n' * 300 + '{"a": 2.5, "late": "x"}\n')
    default = business(read_ok(_jsonl(tmp_path, {})).data)
    explicit = business(read_ok(_jsonl(tmp_path, {"samplingRatio": "1.0"})).data)
    assert_frame_equal(explicit, default)
    assert explicit.schema == pl.Schema({"a": pl.Float64(), "late": pl.String()})


def test_sampling_ratio_types_a_subset_of_the_lines_the_same_subset_every_run(tmp_path: Path) -> None:
    # each line has a key of its own: the columns are exactly the keys of the lines that were typed
    land(tmp_path, "a.jsonl", "".join(f'{{"id": {i}, "k{i:03d}": {i}}}\n' for i in range(200)))
    first = business(read_ok(_jsonl(tmp_path, {"samplingRatio": 0.5})).data)
    again = business(read_ok(_jsonl(tmp_path, {"SAMPLINGRATIO": "0.5"})).data)
    typed = [c for c in first.columns if c.startswith("k")]
    assert 50 < len(typed) < 150  # about half of 200, from a seeded Bernoulli sample
    assert first.height == 200
    assert first["id"].to_list() == list(range(200))
    assert again.columns == first.columns
    assert all(first[c].drop_nulls().to_list() == [int(c[1:])] for c in typed)  # the sampled line's value


def test_a_tiny_sampling_ratio_still_types_one_line(tmp_path: Path) -> None:
    land(tmp_path, "a.jsonl", '{"a": 1}\n{"a": 2}\n')
    data = business(read_ok(_jsonl(tmp_path, {"samplingRatio": "0.0001"})).data)
    assert data.schema == pl.Schema({"a": pl.Int64()})
    assert data["a"].to_list() == [1, 2]


@pytest.mark.parametrize("ratio", ["0", "-0.5", "1.5", "half", "nan"])
def test_a_sampling_ratio_outside_zero_to_one_is_an_error_naming_the_option(tmp_path: Path, ratio: str) -> None:
    land(tmp_path, "a.jsonl", '{"a": 1}\n')
    with pytest.raises(SourceError, match=r"read option 'samplingRatio' must be a number greater than 0 and at most 1"):
        read(_jsonl(tmp_path, {"samplingRatio": ratio}))
