from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.errors import SourceError
from datacoolie_core.models.dataflow import Source
from datacoolie_core.sources.delta import referenced_tables
from datacoolie_core.watermark import deserialize_watermark, serialize_watermark
from tests.core.sources.helpers import make_source, read, read_ok


def delta_source(tmp_path: Path, **source: Any) -> Source:
    source.setdefault("schema_name", "sales")
    return make_source({"format": "delta", "configure": {"base_path": str(tmp_path / "lake")}}, **source)


def write_table(tmp_path: Path, name: str, frame: pl.DataFrame, mode: str = "append") -> None:
    frame.write_delta(str(tmp_path / "lake" / name), mode=mode)  # type: ignore[arg-type]


def _utc(*hours: int) -> pl.Series:
    return pl.Series("ts", [datetime(2024, 1, 1, h, tzinfo=UTC) for h in hours], dtype=pl.Datetime("us", "UTC"))


def test_incremental_reads_of_a_utc_timestamp_column(tmp_path: Path) -> None:
    source = delta_source(tmp_path, table="orders", watermark_columns=["ts"])

    # load 1 — initial rows
    write_table(tmp_path, "sales/orders", pl.DataFrame({"id": [1, 2], "ts": _utc(1, 2)}))
    run1 = read_ok(source)
    assert_frame_equal(run1.data, pl.DataFrame({"id": [1, 2], "ts": _utc(1, 2)}))
    assert run1.runtime.source_action == {"path": str(tmp_path / "lake/sales/orders"), "version": 0}
    assert run1.runtime.watermark_after == {"ts": datetime(2024, 1, 1, 2, tzinfo=UTC)}

    # load 2 — a late row equal to the stored max and a newer one
    write_table(tmp_path, "sales/orders", pl.DataFrame({"id": [3, 4], "ts": _utc(2, 3)}))
    stored = deserialize_watermark(serialize_watermark(run1.runtime.watermark_after or {}))
    run2 = read_ok(source, stored)
    assert_frame_equal(run2.data, pl.DataFrame({"id": [4], "ts": _utc(3)}))
    assert run2.runtime.source_action["version"] == 1

    # load 3 — nothing new
    assert read(source, {"ts": datetime(2024, 1, 1, 3, tzinfo=UTC)}) is None


def test_missing_table_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"no Delta table at '.*lake/sales/nope'.*check base_path"):
        read(delta_source(tmp_path, table="nope"))


def test_query_over_registered_tables(tmp_path: Path) -> None:
    write_table(tmp_path, "sales/orders", pl.DataFrame({"id": [1, 2, 3], "cust": [10, 20, 10], "n": [1, 2, 3]}))
    write_table(tmp_path, "crm/customers", pl.DataFrame({"cust": [10, 20], "name": ["ann", "bob"]}))
    write_table(tmp_path, "crm/customers", pl.DataFrame({"cust": [30], "name": ["cy"]}))
    query = "WITH o AS (SELECT * FROM orders) SELECT o.id, o.n, c.name FROM o JOIN crm.customers c ON o.cust = c.cust"
    source = delta_source(tmp_path, query=query, watermark_columns=["n"], filter_expression="name <> 'bob'")
    result = read_ok(source, {"n": 1})
    assert_frame_equal(result.data.sort("id"), pl.DataFrame({"id": [3], "n": [3], "name": ["ann"]}))
    tables = result.runtime.source_action["tables"]
    assert tables == {
        "orders": {"path": str(tmp_path / "lake/sales/orders"), "version": 0},
        "crm.customers": {"path": str(tmp_path / "lake/crm/customers"), "version": 1},
    }
    assert result.runtime.watermark_after == {"n": 3}


def test_query_with_unknown_table_lists_what_exists(tmp_path: Path) -> None:
    write_table(tmp_path, "sales/orders", pl.DataFrame({"id": [1]}))
    write_table(tmp_path, "crm/customers", pl.DataFrame({"id": [1]}))
    source = delta_source(tmp_path, query="SELECT * FROM crm.customer")
    with pytest.raises(
        SourceError, match=r"'crm.customer'.*did you mean 'crm.customers'\?.*tables: crm.customers, sales.orders"
    ):
        read(source)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("SELECT * FROM a.b JOIN c ON a.b.x = c.x", [("a", "b"), (None, "c")]),
        ("WITH t AS (SELECT 1) SELECT * FROM t, s.t", [("s", "t")]),
        ("SELECT * FROM `s`.`t` WHERE x IN (SELECT y FROM u)", [("s", "t"), (None, "u")]),
    ],
    ids=["qualified-and-plain", "cte-excluded", "backticks-and-subquery"],
)
def test_referenced_tables(query: str, expected: list[tuple[str | None, str]]) -> None:
    assert referenced_tables(query, "s") == expected


def test_null_free_columns_are_those_every_files_statistics_show_without_a_null(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    from datacoolie_core.sources.delta import null_free_columns

    write_table(tmp_path, "sales/t", pl.DataFrame({"id": [1, 2], "ts": _utc(1, 2), "note": ["a", None]}))
    write_table(tmp_path, "sales/t", pl.DataFrame({"id": [3], "ts": pl.Series("ts", [None], pl.Datetime("us", "UTC")),
                                                   "note": ["b"]}))  # fmt: skip
    table = DeltaTable(str(tmp_path / "lake/sales/t"))
    assert null_free_columns(table, table.get_add_actions(flatten=True)) == {"id"}  # ts: null in the 2nd file


def test_a_null_watermark_in_a_later_file_is_still_counted_and_warned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = delta_source(tmp_path, table="orders", watermark_columns=["ts"])
    write_table(tmp_path, "sales/orders", pl.DataFrame({"id": [1, 2], "ts": _utc(1, 2)}))
    write_table(tmp_path, "sales/orders", pl.DataFrame({"id": [3], "ts": pl.Series("ts", [None], pl.Datetime("us", "UTC"))}))  # fmt: skip
    with caplog.at_level("WARNING"):
        run = read_ok(source, {"ts": datetime(2024, 1, 1, 1, tzinfo=UTC)})
    assert run.data["id"].to_list() == [2]
    assert "1 source row(s) have a NULL or NaN watermark value (ts)" in caplog.text


def test_no_warning_when_the_statistics_prove_the_watermark_has_no_null(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = delta_source(tmp_path, table="orders", watermark_columns=["ts"])
    write_table(tmp_path, "sales/orders", pl.DataFrame({"id": [1, 2], "ts": _utc(1, 2)}))
    with caplog.at_level("WARNING"):
        run = read_ok(source, {"ts": datetime(2024, 1, 1, 1, tzinfo=UTC)})
    assert run.data["id"].to_list() == [2]
    assert "NULL or NaN" not in caplog.text
