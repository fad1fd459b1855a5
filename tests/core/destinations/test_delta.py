"""delta-rs wrappers: commit markers (fan-in), predicates with typed literals, metrics, checkpoints, errors."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from deltalake import DeltaTable, write_deltalake
from polars.testing import assert_frame_equal

from datacoolie_core.destinations import DeltaWriter, delta, predicates
from datacoolie_core.destinations.load_strategies import DeltaTarget, merge_upsert
from datacoolie_core.errors import CommitConflictError, DestinationError, TransientError
from tests.core.destinations.builders import APP, make_destination, marker, read_table

WRITER = DeltaWriter()


@pytest.mark.parametrize(
    ("value", "sql"),
    [
        (5, "5"),
        (True, "TRUE"),
        (2.5, "2.5"),
        ("it's", "'it''s'"),
        (Decimal("12.30"), "CAST('12.30' AS DECIMAL(38, 2))"),
        (date(2024, 1, 2), "CAST('2024-01-02' AS DATE)"),
        (datetime(2024, 1, 2, 3, 4, 5), "ARROW_CAST('2024-01-02T03:04:05', 'Timestamp(Microsecond, None)')"),
        (
            datetime(2024, 1, 2, 5, tzinfo=timezone(timedelta(hours=2))),
            "ARROW_CAST('2024-01-02T03:00:00+00:00', 'Timestamp(Microsecond, Some(\"UTC\"))')",
        ),
    ],
    ids=["int", "bool", "float", "quoted-string", "decimal", "date", "naive-datetime", "aware-datetime-in-utc"],
)
def test_literal(value: Any, sql: str) -> None:
    assert predicates.literal(value) == sql


@pytest.mark.parametrize("value", [float("nan"), [1], None], ids=["nan", "list", "none"])
def test_literal_rejects_untyped_values(value: Any) -> None:
    with pytest.raises(DestinationError, match=r"cannot use .* in a Delta predicate"):
        predicates.literal(value)


def test_predicates_quote_identifiers() -> None:
    assert predicates.keys_match(["Order ID", "x"]).sql() == (
        '("target"."Order ID" IS NOT DISTINCT FROM "source"."Order ID") AND '
        '("target"."x" IS NOT DISTINCT FROM "source"."x")'
    )
    window = predicates.window_predicate({'we"ird': (1, None), "ts": (None, date(2024, 1, 1))})
    assert window is not None
    assert window.sql() == '"target"."we""ird" > 1 AND "target"."ts" <= CAST(\'2024-01-01\' AS DATE)'
    assert predicates.window_predicate({"a": (None, None)}) is None


@pytest.mark.parametrize(
    ("column", "lower", "upper", "kept"),
    [
        ("n", 1, 3, [1, 4]),
        ("s", "a", "c", [1, 4]),
        ("d", date(2024, 1, 1), date(2024, 1, 3), [1, 4]),
        ("ts", datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 3, tzinfo=UTC), [1, 4]),
        ("ts", datetime(2024, 1, 1, 2, tzinfo=timezone(timedelta(hours=2))), datetime(2024, 1, 3, tzinfo=UTC), [1, 4]),
        ("ntz", datetime(2024, 1, 1), datetime(2024, 1, 3), [1, 4]),
        ("dec", Decimal("1.10"), Decimal("3.10"), [1, 4]),
        ("n", None, 2, [3, 4]),
    ],
    ids=["int", "string", "date", "utc-datetime", "offset-datetime", "naive-datetime", "decimal", "upper-only"],
)
def test_window_predicate_compares_in_the_column_type(
    tmp_path: Path, column: str, lower: Any, upper: Any, kept: list[int]
) -> None:
    days = [datetime(2024, 1, d) for d in (1, 2, 3, 4)]
    frame = pl.DataFrame(
        {
            "n": [1, 2, 3, 4],
            "s": ["a", "b", "c", "d"],
            "d": [d.date() for d in days],
            "ts": [d.replace(tzinfo=UTC) for d in days],
            "ntz": days,
            "dec": [Decimal("1.10"), Decimal("2.10"), Decimal("3.10"), Decimal("4.10")],
        },
        schema_overrides={"dec": pl.Decimal(10, 2)},
    )
    write_deltalake(tmp_path, frame.to_arrow())
    predicate = predicates.window_predicate({column: (lower, upper)}, schema=frame.schema)
    assert predicate is not None
    # DELETE compares without type coercion (stricter than MERGE), so it proves the literals exact
    DeltaTable(tmp_path).delete(predicate.sql().replace('"target".', ""))
    assert sorted(pl.read_delta(str(tmp_path))["n"].to_list()) == kept


def test_app_transactions_survive_schema_overwrite_and_other_writers(tmp_path: Path) -> None:
    """Fan-in: each app id's last sequence stays readable whatever other dataflows commit after it."""
    append_dest = make_destination(tmp_path, load_type="append")
    overwrite_dest = make_destination(tmp_path, load_type="overwrite")
    merge_dest = make_destination(tmp_path, load_type="merge_upsert", merge_keys=["id"])
    WRITER.write(pl.DataFrame({"id": [1], "a": ["x"]}), append_dest, marker=marker(7, "datacoolie:a"))
    WRITER.write(pl.DataFrame({"id": [2], "b": [1.0]}), overwrite_dest, marker=marker(3, "datacoolie:b"))
    WRITER.write(pl.DataFrame({"id": [2], "b": [2.0]}), merge_dest, marker=marker(1, "datacoolie:c"))
    WRITER.write(pl.DataFrame({"id": [3], "b": [3.0]}), append_dest, marker=marker(8, "datacoolie:d"))
    sequences = {app: WRITER.committed_sequence(append_dest, f"datacoolie:{app}") for app in "abcdz"}
    assert sequences == {"a": 7, "b": 3, "c": 1, "d": 8, "z": None}
    assert_frame_equal(read_table(append_dest.path), pl.DataFrame({"id": [2, 3], "b": [2.0, 3.0]}))


@pytest.mark.parametrize("load_type", ["append", "overwrite", "merge_upsert"])
def test_categorical_enum_and_null_columns_are_written(tmp_path: Path, load_type: str) -> None:
    # Frames reach delta-rs as Polars' Arrow C stream, except these: a Categorical's Utf8View dictionary
    # panics delta-rs 1.6.6's parquet writer and a Null column is refused by the C data interface
    # (a parquet file written by Polars from a Categorical column reads back as one)
    dest = make_destination(tmp_path, load_type=load_type, merge_keys=["id"])
    frame = pl.DataFrame(
        {
            "id": [1, 2],
            "c": pl.Series(["a", None], dtype=pl.Categorical),
            "e": pl.Series(["x", "y"], dtype=pl.Enum(["x", "y"])),
            "nothing": pl.Series([None, None], dtype=pl.Null),
            "nested": pl.Series([{"c": "x"}, None], dtype=pl.Struct({"c": pl.Categorical})),
            "many": pl.Series([["y"], []], dtype=pl.List(pl.Categorical)),
        }
    )
    for sequence in (1, 2):  # the first write creates the table, the second writes into it
        WRITER.write(frame, dest, marker=marker(sequence))
    table = read_table(dest.path).sort("id")
    assert table.height == (4 if load_type == "append" else 2)
    rows = table.select("id", "c", "e", "nested", "many").unique("id", keep="first", maintain_order=True)
    assert rows.rows() == [(1, "a", "x", {"c": "x"}, ["y"]), (2, None, "y", None, [])]
    types = {field.name: str(field.type) for field in DeltaTable(str(dest.path)).schema().fields}
    assert (types["c"], types["e"], types["nothing"]) == ('PrimitiveType("string")',) * 2 + ('PrimitiveType("void")',)


def test_commit_carries_marker_metadata(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="append")
    WRITER.write(pl.DataFrame({"id": [1]}), dest, marker=marker(4, watermark='{"ts": 1}'))
    entry = DeltaTable(str(dest.path)).history(1)[0]
    assert {k: entry[k] for k in entry if k.startswith("datacoolie") or k == "watermark"} == {
        "datacoolie.app_id": APP,
        "datacoolie.sequence": "4",
        "datacoolie.dataflow_run_id": "run-4",
        "watermark": '{"ts": 1}',
    }


def test_committed_sequence_of_a_missing_table_is_none(tmp_path: Path) -> None:
    assert WRITER.committed_sequence(make_destination(tmp_path), APP) is None


def test_checkpoint_every_ten_versions(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="append")
    log = Path(str(dest.path)) / "_delta_log"
    for sequence in range(1, 11):  # versions 0..9
        WRITER.write(pl.DataFrame({"id": [sequence]}), dest, marker=marker(sequence))
    assert not list(log.glob("*.checkpoint.parquet"))
    info = WRITER.write(pl.DataFrame({"id": [11]}), dest, marker=marker(11))
    assert info.table_version == 10
    assert [p.name for p in log.glob("*.checkpoint.parquet")] == [f"{10:020d}.checkpoint.parquet"]


def test_write_metrics_come_from_the_commit(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="overwrite")
    first = WRITER.write(pl.DataFrame({"id": [1, 2, 3]}), dest, marker=marker(1))
    files = sorted(Path(str(dest.path)).glob("*.parquet"))
    assert (first.rows_written, first.files_added, first.table_version, first.commit_sequence) == (3, 1, 0, 1)
    assert first.bytes_added == sum(f.stat().st_size for f in files)
    second = WRITER.write(pl.DataFrame({"id": [4]}), dest, marker=marker(2))
    assert (second.rows_written, second.files_removed, second.bytes_removed) == (1, 1, first.bytes_added)
    assert second.operation_type == "overwrite"


def test_a_new_tables_metrics_come_from_its_first_commit_file(tmp_path: Path) -> None:
    # create_table does not open the new table again: its metrics are read from version 0's file,
    # found from the path as written (a space and all), so its bytes are known (a history entry has none)
    dest = make_destination(tmp_path / "a lake", load_type="append", partition_columns=["region"])
    info = WRITER.write(pl.DataFrame({"id": [1, 2, 3], "region": ["eu", "us", "eu"]}), dest, marker=marker(1))
    files = sorted(Path(str(dest.path)).rglob("*.parquet"))
    assert (info.table_version, info.rows_written, info.rows_inserted, info.files_added) == (0, 3, 3, 2)
    assert info.bytes_added == sum(f.stat().st_size for f in files) > 0
    assert DeltaTable(str(dest.path)).transaction_version(APP) == 1


def test_a_concurrent_commit_is_a_transient_conflict(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, pl.DataFrame({"id": [1], "v": ["a"]}).to_arrow())
    stale = DeltaTable(path)
    write_deltalake(path, pl.DataFrame({"id": [2], "v": ["b"]}).to_arrow(), mode="append")  # another writer
    target = DeltaTarget(path=path, table=stale, marker=marker(1), merge_keys=("id",))
    with (
        pytest.raises(CommitConflictError, match="another writer committed concurrently") as caught,
        delta.translate_errors(path, "orders"),
    ):
        merge_upsert(pl.DataFrame({"id": [1], "v": ["A"]}), target)
    assert isinstance(caught.value, TransientError)
    assert caught.value.__cause__ is not None


def test_other_failures_name_the_table_and_keep_the_cause(tmp_path: Path) -> None:
    dest = make_destination(tmp_path, load_type="append", partition_columns=["region"])
    WRITER.write(pl.DataFrame({"id": [1], "region": ["eu"]}), dest, marker=marker(1))
    other = make_destination(tmp_path, load_type="append", partition_columns=["id"])
    with pytest.raises(DestinationError, match=r"Delta table 'orders' at .*orders: write failed") as caught:
        WRITER.write(pl.DataFrame({"id": [2], "region": ["us"]}), other, marker=marker(2))
    assert caught.value.__cause__ is not None
