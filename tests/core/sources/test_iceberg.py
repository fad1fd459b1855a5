"""The Iceberg reader on a real pyiceberg SQL catalog: tables written by pyiceberg itself, read back."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.errors import SourceError
from datacoolie_core.sources.base import ReadRange
from datacoolie_core.sources.iceberg import _pushdown, polars_schema
from datacoolie_core.sources.window import build_window
from tests.core.sources.helpers import make_source, read, read_ok
from tests.support.iceberg import catalog_configure, seed_table

T = pl.Datetime("us", "UTC")


def orders(ids: list[int], days: list[int]) -> pl.DataFrame:
    return pl.DataFrame(
        {"id": ids, "updated_at": [datetime(2024, 1, d, tzinfo=UTC) for d in days], "amount": [i * 1.5 for i in ids]},
        schema_overrides={"updated_at": T},
    )


def source(root: Path, **fields: Any) -> Any:
    connection = {"format": "iceberg", "configure": catalog_configure(root)}
    return make_source(connection, **({"schema_name": "sales", "table": "orders"} | fields))


def test_incremental_reads_compare_in_the_columns_type(tmp_path: Path) -> None:
    table = seed_table(tmp_path, ("sales", "orders"), orders([1, 2], [1, 2]))
    src = source(tmp_path, watermark_columns=["updated_at"])
    # read 1 — no watermark: everything, the new watermark typed like the column
    first = read_ok(src)
    assert_frame_equal(first.data.sort("id"), orders([1, 2], [1, 2]))
    assert first.runtime.watermark_after == {"updated_at": datetime(2024, 1, 2, tzinfo=UTC)}
    assert first.runtime.source_action["snapshot_id"] == table.current_snapshot().snapshot_id
    # read 2 — two new rows, one equal to the stored max (strict >: not read again)
    table.append(orders([3, 4], [2, 3]).to_arrow())
    second = read_ok(src, first.runtime.watermark_after)
    assert second.data["id"].to_list() == [4]
    assert "GreaterThan" in second.runtime.source_action["row_filter"]
    # a 0.1.7-style ISO string watermark is typed like the column too
    assert read_ok(src, {"updated_at": "2024-01-02T00:00:00"}).data["id"].to_list() == [4]
    # read 3 — nothing new: skipped
    assert read(src, second.runtime.watermark_after) is None


@pytest.mark.parametrize(
    ("values", "dtype", "stored", "expected"),
    [
        ([date(2024, 1, 1), date(2024, 1, 2), date(2024, 1, 3)], pl.Date, "2024-01-02", [3]),
        ([10, 20, 30], pl.Int64, 20.5, [3]),  # a float bound on an integer column is floored, kept strict
        ([datetime(2024, 1, d) for d in (1, 2, 3)], pl.Datetime("us"), datetime(2024, 1, 2, tzinfo=UTC), [3]),
    ],
    ids=["date", "int", "naive-timestamp"],
)
def test_watermark_types(
    tmp_path: Path, values: list[Any], dtype: pl.DataType, stored: Any, expected: list[int]
) -> None:
    seed_table(
        tmp_path, ("sales", "orders"), pl.DataFrame({"id": [1, 2, 3], "w": values}, schema_overrides={"w": dtype})
    )
    result = read_ok(source(tmp_path, watermark_columns=["W"]), {"w": stored})  # names resolve ignoring case
    assert result.data["id"].to_list() == expected
    assert result.runtime.watermark_after == {"w": values[-1]}


def test_the_window_prunes_data_files_by_their_statistics(tmp_path: Path) -> None:
    table = seed_table(tmp_path, ("sales", "orders"), orders([1], [1]), orders([2], [2]), orders([3], [3]))
    src = source(tmp_path, watermark_columns=["updated_at"])
    window = build_window(["updated_at"], {"updated_at": datetime(2024, 1, 2, tzinfo=UTC)}, None)
    assert window is not None
    row_filter = _pushdown(window, polars_schema(table), "test")
    assert len(list(table.scan().plan_files())) == 3
    assert len(list(table.scan(row_filter=row_filter).plan_files())) == 1  # only day 3's file is read
    assert read_ok(src, {"updated_at": datetime(2024, 1, 2, tzinfo=UTC)}).data["id"].to_list() == [3]


def test_replay_range_is_half_open(tmp_path: Path) -> None:
    seed_table(tmp_path, ("sales", "orders"), orders([1, 2, 3, 4], [1, 2, 3, 4]))
    src = source(tmp_path, watermark_columns=["updated_at"])
    chunk = ReadRange("updated_at", datetime(2024, 1, 2, tzinfo=UTC), datetime(2024, 1, 4, tzinfo=UTC))
    result = read_ok(src, {"updated_at": datetime(2024, 1, 3, tzinfo=UTC)}, read_range=chunk)
    assert sorted(result.data["id"].to_list()) == [2, 3]  # the stored watermark is not applied to a range
    assert "GreaterThanOrEqual" in result.runtime.source_action["row_filter"]


def test_a_string_column_against_a_typed_bound_is_filtered_exactly_but_not_pushed(tmp_path: Path) -> None:
    frame = pl.DataFrame({"id": [1, 2, 3], "ts": ["2024-01-01 00:00:00", "2024-01-02 00:00:00", "garbage"]})
    seed_table(tmp_path, ("sales", "orders"), frame)
    chunk = ReadRange("ts", datetime(2024, 1, 2), datetime(2024, 1, 3))
    result = read_ok(source(tmp_path), read_range=chunk)
    assert result.data["id"].to_list() == [2]
    assert result.runtime.source_action["row_filter"] is None


def test_filter_expression_rows_do_not_advance_the_watermark(tmp_path: Path) -> None:
    seed_table(tmp_path, ("sales", "orders"), orders([1, 2, 3], [1, 2, 3]))
    result = read_ok(source(tmp_path, watermark_columns=["updated_at"], filter_expression="amount < 4"))
    assert result.data["id"].to_list() == [1, 2]
    assert result.runtime.watermark_after == {"updated_at": datetime(2024, 1, 2, tzinfo=UTC)}


def test_time_travel_to_a_snapshot(tmp_path: Path) -> None:
    table = seed_table(tmp_path, ("sales", "orders"), orders([1], [1]), orders([2], [2]))
    first = table.snapshots()[0].snapshot_id
    result = read_ok(source(tmp_path, configure={"read_options": {"snapshot_id": str(first)}}))
    assert result.data["id"].to_list() == [1]
    assert result.runtime.source_action["snapshot_id"] == first


def test_an_empty_table_is_skipped(tmp_path: Path) -> None:
    catalog_table = seed_table(tmp_path, ("sales", "orders"), orders([1], [1]))
    catalog_table.delete("id = 1")
    assert read(source(tmp_path, watermark_columns=["updated_at"])) is None


def test_query_mode_over_the_connections_tables(tmp_path: Path) -> None:
    seed_table(tmp_path, ("sales", "orders"), orders([1, 2], [1, 2]))
    customers = pl.DataFrame({"id": [1, 2], "name": ["a", "b"]})
    seed_table(tmp_path, ("sales", "customers"), customers)
    query = "SELECT o.id, c.name, o.updated_at FROM orders o JOIN sales.customers c ON o.id = c.id"
    result = read_ok(source(tmp_path, table=None, query=query, watermark_columns=["updated_at"]))
    assert sorted(result.data.select("id", "name").rows()) == [(1, "a"), (2, "b")]
    assert set(result.runtime.source_action["tables"]) == {"orders", "sales.customers"}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"table": "order"}, r"no Iceberg table 'sales.order' in catalog 'src'; did you mean 'sales.orders'\?"),
        ({"schema_name": None}, r"source table 'orders' on Iceberg connection 'src' has no namespace"),
        (
            {"configure": {"read_options": {"snapshot": 1}}},
            r"unknown Iceberg read option 'snapshot'; did you mean 'snapshot_id'",
        ),
        ({"configure": {"read_options": {"snapshot_id": 42}}}, r"snapshot_id 42 is not a snapshot of the table"),
        (
            {"watermark_columns": ["updatd_at"]},
            r"the source lacks 'updatd_at' \(source.watermark_columns; did you mean 'updated_at'\?\)",
        ),
    ],
    ids=["table-typo", "no-namespace", "option-typo", "expired-snapshot", "watermark-typo"],
)
def test_errors_name_the_fix(tmp_path: Path, fields: dict[str, Any], message: str) -> None:
    seed_table(tmp_path, ("sales", "orders"), orders([1], [1]))
    with pytest.raises(SourceError, match=message):
        read(source(tmp_path, **fields), {"updated_at": datetime(2024, 1, 1, tzinfo=UTC)})
