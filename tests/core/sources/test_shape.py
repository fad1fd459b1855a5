"""Shape checks: a read whose files (or source) lack a column the metadata names fails, naming them."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from datacoolie_core import Connection, DataFlow
from datacoolie_core.errors import SourceShapeError, TerminalError
from datacoolie_core.sources import ReadRange
from datacoolie_core.sources.base import ExpectedColumn, ReadRequest
from datacoolie_core.sources.shape import check_columns, check_files, expected_columns
from tests.core.sources.helpers import make_source, read, read_ok

HEADER = "Order ID,Unit Price (€),customerName,Order Date\n"
ROWS = "1,2.50,ann,2025-01-01\n2,3.50,bob,2025-01-02\n"


def dataflow(*, destination: dict[str, Any] | None = None, transform: dict[str, Any] | None = None,
             use_schema_hint: bool = True, **source: Any) -> DataFlow:  # fmt: skip
    landing = Connection.model_validate(
        {
            "name": "landing",
            "format": "csv",
            "configure": {"base_path": "./landing", "use_schema_hint": use_schema_hint},
        }
    )
    lake = Connection.model_validate({"name": "lake", "format": "delta", "configure": {"base_path": "./lake"}})
    return DataFlow.model_validate(
        {
            "name": "orders",
            "source": {"connection_name": "landing", "table": "orders", **source},
            "destination": {"connection_name": "lake", "table": "orders", **(destination or {})},
            "transform": transform or {},
        },
        context={"connections": {"landing": landing, "lake": lake}},
    )


MERGE = {"load_type": "merge_upsert", "merge_keys": ["Order ID"]}


@pytest.mark.parametrize(
    ("blocks", "expected"),
    [
        ({"destination": MERGE}, [("Order ID", "destination.merge_keys")]),
        ({"destination": {"merge_keys": ["Order ID"]}}, []),
        ({"destination": {"partition_columns": ["Region", {"column": "y", "expression": "1"}]}},
         [("Region", "destination.partition_columns")]),
        ({"transform": {"schema_hints": [{"column_name": "Unit Price (€)", "data_type": "double"},
                                         {"column_name": "old", "data_type": "int", "is_active": False}]}},
         [("Unit Price (€)", "transform.schema_hints")]),
        ({"transform": {"schema_hints": [{"column_name": "x", "data_type": "int"}]}, "use_schema_hint": False}, []),
        ({"transform": {"schema_hints": [{"column_name": "x", "data_type": "int"}],
                        "configure": {"missing_column_policy": "ignore"}}}, []),
        ({"transform": {"deduplicate_columns": ["customerName"], "latest_data_columns": ["Order Date"]}},
         [("customerName", "transform.deduplicate_columns"), ("Order Date", "transform.latest_data_columns")]),
        ({"transform": {"deduplicate_columns": ["customerName"]}}, []),
        ({"destination": MERGE, "watermark_columns": ["Order Date"]}, [("Order ID", "destination.merge_keys")]),
        ({"destination": MERGE, "transform": {"additional_columns": [{"column": "order_id", "expression": "1"}]}}, []),
        ({"destination": {"load_type": "merge_upsert", "merge_keys": ["h"]},
          "transform": {"hash_columns": [{"target_column": "h", "columns": ["x"]}]}}, []),
        ({"destination": {"load_type": "merge_upsert", "merge_keys": ["key"]},
          "transform": {"rename_columns": {"Order ID": "Key"}}}, []),
        ({"destination": MERGE | {"partition_columns": ["order_id"]},
          "transform": {"schema_hints": [{"column_name": "ORDER ID", "data_type": "long"}]}},
         [("Order ID", "destination.merge_keys"), ("order_id", "destination.partition_columns"),
          ("ORDER ID", "transform.schema_hints")]),
    ],
    ids=[
        "merge-keys-of-a-merge",
        "merge-keys-of-an-append",
        "partition-without-expression",
        "active-hints",
        "hints-off-on-the-connection",
        "hints-with-ignore-policy",
        "dedup-columns",
        "dedup-without-order",
        "watermark-columns-are-not-listed",
        "computed-merge-key",
        "hash-merge-key",
        "renamed-merge-key",
        "one-entry-per-spelling",
    ],
)  # fmt: skip
def test_expected_columns(blocks: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert [(c.name, c.key) for c in expected_columns(dataflow(**blocks))] == expected


def request(*expected: tuple[str, str], **values: Any) -> ReadRequest:
    return ReadRequest(expected_columns=tuple(ExpectedColumn(name, key) for name, key in expected), **values)


SOURCE = make_source({"format": "csv", "configure": {"base_path": "./landing", "read_options": {"header": "true", "inferSchema": "true"}}}, table="orders",
                     watermark_columns=["Order Date", "__file_modification_time"])  # fmt: skip


def test_check_columns_names_the_missing_columns_their_keys_and_the_columns_found() -> None:
    with pytest.raises(SourceShapeError) as caught:
        check_columns(["Order Id", "amount"], SOURCE, request(("Order ID", "destination.merge_keys")), label="src")
    assert str(caught.value) == (
        "src: the source lacks 'Order Date' (source.watermark_columns; did you mean 'Order Id'?); "
        "found columns: Order Id, amount; "
        "nothing was loaded; add the column(s) to the source or fix the metadata"
    )
    assert isinstance(caught.value, TerminalError)  # retrying reads the same columns again


def test_check_columns_accepts_any_spelling_and_wants_the_replay_column() -> None:
    check_columns(["order_id", "order_date"], SOURCE, request(("Order ID", "destination.merge_keys")), label="src")
    replay = request(read_range=ReadRange("Shipped At", None, None))
    with pytest.raises(SourceShapeError, match=r"lacks 'Shipped At' \(replay chunk_column; did you mean 'Shipped'\?\)"):
        check_columns(["Order Date", "Shipped"], SOURCE, replay, label="src")


def test_check_columns_resolves_in_the_run_mode() -> None:
    wants = request(("customer_name", "transform.schema_hints"), column_name_mode="snake")
    check_columns(["Order Date", "customerName"], SOURCE, wants, label="src")
    with pytest.raises(SourceShapeError, match="lacks 'customer_name'"):
        check_columns(["Order Date", "customerName"], SOURCE, request(("customer_name", "k")), label="src")


def lazy(header: str) -> pl.LazyFrame:
    return pl.DataFrame({name: [] for name in header.split(",")}).lazy()


def test_check_files_lists_each_odd_file_with_its_columns() -> None:
    scans = [("a.csv", lazy("Order ID,Order Date")), ("b.csv", lazy("foo,bar")), ("c.csv", lazy("Order ID,x"))]
    with pytest.raises(SourceShapeError) as caught:
        check_files(scans, SOURCE, request(("Order ID", "destination.merge_keys")), label="src")
    assert str(caught.value) == (
        "src: 2 of 3 file(s) lack expected columns: "
        "file 'b.csv' lacks 'Order Date' (source.watermark_columns), 'Order ID' (destination.merge_keys) "
        "(its columns: foo, bar); "
        "file 'c.csv' lacks 'Order Date' (source.watermark_columns; did you mean 'Order ID'?) (its columns: Order ID, x); "
        "nothing was loaded; fix those files or move them out of the folder, or fix the metadata"
    )


def test_check_files_rejects_a_file_sharing_no_column_with_the_first() -> None:
    bare = make_source(
        {
            "format": "csv",
            "configure": {"base_path": "./landing", "read_options": {"header": "true", "inferSchema": "true"}},
        },
        table="orders",
    )
    scans = [("a.csv", lazy("id,name")), ("b.csv", lazy("name,id,extra")), ("c.csv", lazy("1,ann"))]
    with pytest.raises(SourceShapeError, match=r"file 'c.csv' shares no column with file 'a.csv' \(columns: id, name\); "
                       r"its columns: 1, ann; its header is missing or wrong"):  # fmt: skip
        check_files(scans, bare, ReadRequest(), label="src")
    check_files(scans[:2], bare, ReadRequest(), label="src")  # other order, one more column: fine


def landing(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "landing" / "orders"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def csv_source(tmp_path: Path, **source: Any) -> Any:
    return make_source(
        {
            "format": "csv",
            "configure": {
                "base_path": str(tmp_path / "landing"),
                "read_options": {"header": "true", "inferSchema": "true"},
            },
        },
        table="orders",
        **source,
    )


def test_a_file_without_the_watermark_column_fails_the_read_instead_of_hiding_its_rows(tmp_path: Path) -> None:
    folder = landing(tmp_path, {"a.csv": HEADER + ROWS, "b.csv": "Order ID,customerName\n3,cy\n"})
    source = csv_source(tmp_path, watermark_columns=["order_date"])

    with pytest.raises(SourceShapeError) as caught:
        read(source, {"order_date": "2025-01-02"})

    assert f"1 of 2 file(s) lack expected columns: file '{folder / 'b.csv'}' lacks 'order_date' " in str(caught.value)
    assert "(its columns: Order ID, customerName)" in str(caught.value)


def test_files_with_reordered_headers_are_read_by_name(tmp_path: Path) -> None:
    landing(tmp_path, {"a.csv": HEADER + ROWS, "b.csv": "Order Date,customerName,Order ID\n2025-01-03,cy,3\n"})

    result = read_ok(csv_source(tmp_path, watermark_columns=["Order Date"]))

    assert result.data.select("Order ID", "customerName", "Order Date").rows() == [
        (1, "ann", date(2025, 1, 1)), (2, "bob", date(2025, 1, 2)), (3, "cy", date(2025, 1, 3)),
    ]  # fmt: skip
    assert result.data["Unit Price (€)"].to_list() == [2.5, 3.5, None]
