"""The Iceberg writer on a real pyiceberg SQL catalog (SQLite) under ``tmp_path``.

Every table is read back independently: a catalog of its own, ``table.scan().to_arrow()``. The
load strategies are checked twice: narrated loads with the expected rows, and the same loads as the
Delta strategy tests fed to the Delta writer and the Iceberg writer, whose tables must be equal.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.columns import VALID_FROM
from datacoolie_core.destinations import DeltaWriter, IcebergWriter, ReplaceWindow
from datacoolie_core.destinations.base import CommitMarker
from datacoolie_core.errors import DestinationError
from datacoolie_core.models import Connection, Destination
from tests.core.destinations.builders import (
    APP,
    TS,
    at,
    batch,
    make_destination,
    marker,
    read_table,
    scd2_batch,
    scd2_stored,
    stored,
)
from tests.support.iceberg import catalog_configure, load_table, read_back

WRITER = IcebergWriter()


def iceberg_destination(root: Path, **fields: Any) -> Destination:
    """``silver.orders`` of an Iceberg connection whose catalog and warehouse are under ``root``."""
    configure = catalog_configure(root) | fields.pop("connection", {})
    connection = Connection.model_validate({"name": "lake", "format": "iceberg", "configure": configure})
    return Destination.model_validate(
        {"connection_name": "lake", "schema_name": "silver", "table": "orders", **fields},
        context={"connections": {"lake": connection}},
    )


def orders(root: Path, *by: str) -> pl.DataFrame:
    return read_back(root, "silver", "orders", by=by or ("id",))


def test_append_creates_the_table_where_the_connection_says_and_evolves_the_schema(tmp_path: Path) -> None:
    dest = iceberg_destination(tmp_path, load_type="append")
    # load 1 — initial: the table appears under base_path/schema/table
    info = WRITER.write(batch([(1, "a", 10), (2, "b", 20)], load=1), dest, marker=marker(1))
    assert_frame_equal(orders(tmp_path), stored([(1, "a", 10, 1, 1), (2, "b", 20, 1, 1)]))
    assert load_table(tmp_path, "silver", "orders").location() == f"file://{tmp_path}/lake/silver/orders"
    assert (info.rows_written, info.rows_inserted, info.files_added, info.commit_sequence) == (2, 2, 1, 1)
    assert info.bytes_added > 0
    # load 2 — a new column joins the schema; earlier rows read it as null
    WRITER.write(pl.DataFrame({"id": [3], "name": ["c"], "score": [2.5]}), dest, marker=marker(2))
    # load 3 — a missing column reads as null in the new rows
    WRITER.write(pl.DataFrame({"id": [4], "score": [3.5]}), dest, marker=marker(3))
    table = orders(tmp_path).select("id", "name", "score")
    expected = pl.DataFrame({"id": [1, 2, 3, 4], "name": ["a", "b", "c", None], "score": [None, None, 2.5, 3.5]})
    assert_frame_equal(table, expected)


def test_overwrite_replaces_rows_and_schema(tmp_path: Path) -> None:
    dest = iceberg_destination(tmp_path, load_type="overwrite")
    WRITER.write(batch([(1, "a", 10), (2, "b", 20)], load=1), dest, marker=marker(1))
    # load 2 — the batch is the table; `amount` is dropped and `region` appears
    second = batch([(2, "B", "eu"), (3, "c", "us")], load=2, columns=("id", "name", "region"))
    info = WRITER.write(second, dest, marker=marker(2))
    assert_frame_equal(orders(tmp_path), second)
    assert (info.files_added, info.files_removed) == (1, 1)


def test_merge_upsert_keeps_created_at_and_never_duplicates_keys(tmp_path: Path) -> None:
    dest = iceberg_destination(tmp_path, load_type="merge_upsert", merge_keys=["ID"])
    # load 1 — initial: creates the table
    WRITER.write(batch([(1, "a", 10), (2, "b", 20)], load=1), dest, marker=marker(1))
    # load 2 — key 2 keeps its __created_at and gets the new __updated_at; key 3 is new
    info = WRITER.write(batch([(2, "B", 21), (3, "c", 30)], load=2), dest, marker=marker(2))
    expected = [(1, "a", 10, 1, 1), (2, "B", 21, 1, 2), (3, "c", 30, 2, 2)]
    assert_frame_equal(orders(tmp_path), stored(expected))
    assert (info.rows_inserted, info.rows_updated, info.rows_written) == (1, 1, 2)
    # load 3 — duplicate batch keys: the last row per key in frame order wins, never two rows
    WRITER.write(batch([(3, "x", 1), (4, "d", 40), (3, "y", 2), (4, "e", 41)], load=3), dest, marker=marker(3))
    expected[2:] = [(3, "y", 2, 2, 3), (4, "e", 41, 3, 3)]
    assert_frame_equal(orders(tmp_path), stored(expected))


def test_merge_upsert_evolves_the_schema_and_matches_null_keys(tmp_path: Path) -> None:
    dest = iceberg_destination(tmp_path, load_type="merge_upsert", merge_keys=["id"])
    WRITER.write(pl.DataFrame({"id": [1, None], "name": ["a", "n"]}), dest, marker=marker(1))
    WRITER.write(pl.DataFrame({"id": [1, None], "name": ["A", "N"], "score": [1.5, 2.5]}), dest, marker=marker(2))
    expected = pl.DataFrame({"id": [None, 1], "name": ["N", "A"], "score": [2.5, 1.5]})
    assert_frame_equal(orders(tmp_path).sort("id", nulls_last=False), expected)


def test_merge_overwrite_with_a_replace_window(tmp_path: Path) -> None:
    dest = iceberg_destination(
        tmp_path, load_type="merge_overwrite", merge_keys=["id"], configure={"replace_by_watermark": True}
    )
    first = pl.DataFrame({"id": [1, 2, 3, 4], "name": ["a", "b", "c", "d"], "ts": [at(1), at(2), at(3), at(4)]})
    WRITER.write(first, dest, marker=marker(1))
    # load 2 — window (day 1, day 3]: key 3 was deleted at the source, key 2 changed, key 4 moved in
    second = pl.DataFrame({"id": [2, 4], "name": ["B", "D"], "ts": [at(2, 12), at(3)]}, schema_overrides={"ts": TS})
    info = WRITER.write(second, dest, marker=marker(2), window=ReplaceWindow({"TS": (at(1), at(3))}))
    expected = pl.DataFrame(
        {"id": [1, 2, 4], "name": ["a", "B", "D"], "ts": [at(1), at(2, 12), at(3)]}, schema_overrides={"ts": TS}
    )
    assert_frame_equal(orders(tmp_path), expected)
    assert (info.rows_inserted, info.rows_deleted) == (2, 3)


# The Delta strategy tests' loads (tests/core/destinations/test_load_strategies.py), fed to both writers.
Loads = list[tuple[pl.DataFrame, ReplaceWindow | None]]
SCD2_LOADS = [
    [(1, "a", at(1)), (2, "b", at(1))],
    [(1, "A", at(2)), (2, "b", at(2)), (3, "c", at(2))],
    [(1, "C", at(4)), (1, "B", at(3)), (1, "B", at(3)), (2, "b4", at(4)), (2, "b5", at(5)), (2, "b5x", at(5))],
    [(1, "L", at(2, 12))],
    [(3, "C", at(2)), (1, "A", at(2, 6))],
    [(2, "b5x", at(6))],
    [(None, "n", at(1)), (None, "m", at(1)), (None, "k", at(2))],
]
KEYED_LOADS = [
    [(1, "a", 10), (2, "b", 20)],
    [(2, "B", 21), (2, "B2", 22), (3, "c", 30)],
    [(2, "b0", 5)],
    [(4, "d", 40), (4, "d", 40)],
    [(4, "d", 41), (None, "n", 1)],
]


def _loads(load_type: str) -> Loads:
    if load_type == "scd2":
        return [(scd2_batch(rows, load=n), None) for n, rows in enumerate(SCD2_LOADS, 1)]
    frames = [batch(rows, load=n) for n, rows in enumerate(KEYED_LOADS, 1)]
    if load_type == "merge_upsert":  # the upsert dedups the batch itself: drop the merge_overwrite ties
        frames = [f.unique(subset=["id"], keep="last", maintain_order=True) for f in frames]
    return [(f, None) for f in frames]


@pytest.mark.parametrize("load_type", ["append", "overwrite", "merge_upsert", "merge_overwrite", "scd2"])
def test_every_load_gives_the_table_the_delta_writer_gives(tmp_path: Path, load_type: str) -> None:
    fields: dict[str, Any] = {"load_type": load_type}
    if load_type != "append" and load_type != "overwrite":
        fields["merge_keys"] = ["id"]
    if load_type == "scd2":
        fields["configure"] = {"scd2_effective_column": "changed_at"}
    delta = make_destination(tmp_path / "delta", **fields)
    iceberg = iceberg_destination(tmp_path / "iceberg", **fields)
    by = ["id", VALID_FROM, "name"] if load_type == "scd2" else ["id", "name", "amount"]
    for sequence, (frame, window) in enumerate(_loads(load_type), 1):
        DeltaWriter().write(frame, delta, marker=marker(sequence), window=window)
        info = WRITER.write(frame, iceberg, marker=marker(sequence), window=window)
        assert info.commit_sequence == sequence
        expected = read_table(delta.path).sort(by, nulls_last=False)
        assert_frame_equal(orders(tmp_path / "iceberg").sort(by, nulls_last=False), expected)


def test_scd2_narrated(tmp_path: Path) -> None:
    dest = iceberg_destination(tmp_path, load_type="scd2", merge_keys=["id"], configure={"scd2_effective_column": "c"})
    WRITER.write(scd2_batch([(1, "a", at(1)), (2, "b", at(1))], load=1), dest, marker=marker(1))
    # load 2 — key 1 changed (closed + new version), key 2 re-delivered unchanged, key 3 new
    info = WRITER.write(scd2_batch([(1, "A", at(2)), (2, "b", at(2)), (3, "c", at(2))], load=2), dest, marker=marker(2))
    history = [
        (1, "a", at(1), at(2), 1, 2),
        (1, "A", at(2), None, 2, 2),
        (2, "b", at(1), None, 1, 1),
        (3, "c", at(2), None, 2, 2),
    ]
    assert_frame_equal(orders(tmp_path, "id", VALID_FROM), scd2_stored(history))
    assert (info.rows_inserted, info.rows_updated) == (2, 1)
    # load 3 — an unchanged re-delivery: no row changes, but the marker still commits
    WRITER.write(scd2_batch([(3, "c", at(3))], load=3), dest, marker=marker(3))
    assert_frame_equal(orders(tmp_path, "id", VALID_FROM), scd2_stored(history))
    assert WRITER.committed_sequence(dest, APP) == 3


def test_partition_columns_become_an_identity_partition_spec(tmp_path: Path) -> None:
    dest = iceberg_destination(tmp_path, load_type="append", partition_columns=["region"])
    rows = pl.DataFrame({"id": [1, 2, 3], "region": ["eu", "us", "eu"]})
    info = WRITER.write(rows, dest, marker=marker(1))
    table = load_table(tmp_path, "silver", "orders")
    assert [(f.name, str(f.transform)) for f in table.spec().fields] == [("region", "identity")]
    assert info.files_added == 2  # one data file per partition
    assert_frame_equal(orders(tmp_path), rows)


def test_the_marker_is_in_the_snapshot_summaries_and_a_table_property(tmp_path: Path) -> None:
    dest = iceberg_destination(tmp_path, load_type="merge_upsert", merge_keys=["id"])
    WRITER.write(pl.DataFrame({"id": [1]}), dest, marker=marker(1, **{"datacoolie.watermark": '{"t": 1}'}))
    WRITER.write(pl.DataFrame({"id": [1]}), dest, marker=marker(2, **{"datacoolie.watermark": '{"t": 2}'}))
    table = load_table(tmp_path, "silver", "orders")
    summaries = [s.summary for s in table.snapshots() if s.summary is not None]
    assert [(s["datacoolie.sequence"], s["datacoolie.dataflow_run_id"]) for s in summaries] == [
        ("1", "run-1"),
        ("2", "run-2"),  # the delete of key 1 ...
        ("2", "run-2"),  # ... and the append of its new row: two snapshots, one catalog commit
    ]
    assert all(s["datacoolie.app_id"] == APP for s in summaries)
    record = json.loads(table.properties[f"datacoolie.commit.{APP}"])
    assert record == {"sequence": 2, "dataflow_run_id": "run-2", "watermark": '{"t": 2}'}
    assert [(c.sequence, c.watermark) for c in WRITER.app_commits(dest, APP)] == [(2, '{"t": 2}'), (1, '{"t": 1}')]


def test_a_write_already_committed_is_not_repeated(tmp_path: Path) -> None:
    dest = iceberg_destination(tmp_path, load_type="append")
    first = WRITER.write(pl.DataFrame({"id": [1]}), dest, marker=marker(1))
    again = WRITER.write(pl.DataFrame({"id": [1]}), dest, marker=marker(1))
    assert (first.recovered, again.recovered, again.commit_sequence) == (False, True, 1)
    assert orders(tmp_path)["id"].to_list() == [1]
    # a marker without a sequence takes the next one
    info = WRITER.write(pl.DataFrame({"id": [2]}), dest, marker=CommitMarker(APP, None, "run-x"))
    assert info.commit_sequence == 2
    assert WRITER.log_state(dest, APP).sequence == 2


def test_the_last_commit_survives_expired_snapshots(tmp_path: Path) -> None:
    dest = iceberg_destination(tmp_path, load_type="append")
    for sequence in (1, 2, 3):
        WRITER.write(pl.DataFrame({"id": [sequence]}), dest, marker=marker(sequence, **{"datacoolie.watermark": "w"}))
    table = load_table(tmp_path, "silver", "orders")
    current = table.current_snapshot()
    assert current is not None
    table.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in table.snapshots()][:-1]).commit()
    assert len(load_table(tmp_path, "silver", "orders").snapshots()) == 1
    commits = WRITER.app_commits(dest, APP)
    assert [(c.sequence, c.watermark) for c in commits] == [(3, "w")]
    assert WRITER.log_state(dest, APP).sequence == 3


def test_log_state_of_a_missing_table(tmp_path: Path) -> None:
    dest = iceberg_destination(tmp_path, load_type="append")
    state = WRITER.log_state(dest, APP)
    assert (state.exists, state.sequence) == (False, None)
    assert WRITER.app_commits(dest, APP) == []


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"schema_name": None}, r"table 'orders' on Iceberg connection 'lake' has no namespace; set destination"),
        (
            {"load_type": "merge_upsert", "merge_keys": ["idd"]},
            r"merge key column 'idd' is not in the data; did you mean 'id'",
        ),
        ({"connection": {"catalog_properties": {"type": "nosuch"}}}, r"cannot load Iceberg catalog 'lake'"),
    ],
    ids=["no-namespace", "merge-key-typo", "bad-catalog"],
)
def test_errors_name_the_fix(tmp_path: Path, fields: dict[str, Any], message: str) -> None:
    dest = iceberg_destination(tmp_path, **({"load_type": "append"} | fields))
    with pytest.raises(DestinationError, match=message):
        WRITER.write(pl.DataFrame({"id": [1]}), dest, marker=marker(1))


def test_a_catalog_password_is_not_in_the_error(tmp_path: Path) -> None:
    uri = "postgresql+psycopg2://etl:s3cret-pw@127.0.0.1:1/none"
    dest = iceberg_destination(
        tmp_path, load_type="append", connection={"catalog_properties": {"type": "sql", "uri": uri}}
    )
    with pytest.raises(DestinationError, match="cannot load Iceberg catalog") as raised:
        WRITER.write(pl.DataFrame({"id": [1]}), dest, marker=marker(1))
    assert "s3cret-pw" not in str(raised.value)


def test_timestamps_are_written_in_microseconds_utc(tmp_path: Path) -> None:
    dest = iceberg_destination(tmp_path, load_type="append")
    rows = pl.DataFrame(
        {"id": [1], "ns": [datetime(2024, 1, 1, 12, 0, 0, 123456)], "small": [7]},
        schema_overrides={"ns": pl.Datetime("ns", "Europe/Paris"), "small": pl.UInt8},
    )
    WRITER.write(rows, dest, marker=marker(1))
    back = orders(tmp_path)
    assert back.schema["ns"] == pl.Datetime("us", "UTC")
    assert back["ns"][0] == rows["ns"][0]  # the same instant (aware datetimes compare in UTC)
    assert back["ns"][0].microsecond == 123456
    assert back["small"].to_list() == [7]


def test_maintenance_expires_old_snapshots_and_keeps_the_commit_record(tmp_path: Path) -> None:
    from datacoolie_core.models import DataFlow
    from datacoolie_core.orchestration.maintenance import run_maintenance_target

    dest = iceberg_destination(tmp_path, load_type="append")
    for sequence in (1, 2, 3):
        WRITER.write(pl.DataFrame({"id": [sequence]}), dest, marker=marker(sequence))
    flow = DataFlow.model_construct(name="orders", dataflow_id="orders", destination=dest, is_active=True)
    # compact alone: pyiceberg 0.12 cannot, said so, nothing changes
    runtime = run_maintenance_target(flow, do_compact=True, do_cleanup=False, retention_hours=0)
    assert runtime.status == "skipped"
    assert "compact skipped: pyiceberg 0.12 cannot rewrite data files" in (runtime.skip_reason or "")
    # cleanup with no retention: every snapshot but the current one is expired
    runtime = run_maintenance_target(flow, do_compact=True, do_cleanup=True, retention_hours=0)
    assert runtime.status == "succeeded", runtime.error_message
    assert runtime.operations["cleanup"]["snapshots_expired"] == 2
    table = load_table(tmp_path, "silver", "orders")
    assert len(table.snapshots()) == 1
    assert orders(tmp_path)["id"].to_list() == [1, 2, 3]  # the data is intact
    assert WRITER.log_state(dest, APP).sequence == 3
    # a long retention expires nothing
    runtime = run_maintenance_target(flow, do_compact=False, do_cleanup=True, retention_hours=24)
    assert runtime.operations["cleanup"]["snapshots_expired"] == 0


def test_catalog_properties_are_known_to_validation() -> None:
    from datacoolie_core.metadata import validate_document

    doc = {"connections": [{"name": "lake", "format": "iceberg", "configure": {"catalog_propertes": {}}}]}
    (issue,) = validate_document(doc).issues
    assert issue.path == "connections[0].configure.catalog_propertes"
    assert "did you mean 'catalog_properties'?" in issue.message


def test_a_rest_catalog_is_configuration_only_and_its_credential_stays_out_of_errors(tmp_path: Path) -> None:
    rest = {"type": "rest", "uri": "http://127.0.0.1:9", "credential": "client:t0p-secret"}  # nothing listens
    dest = iceberg_destination(tmp_path, load_type="append", connection={"catalog_properties": rest})
    with pytest.raises(
        DestinationError, match=r"cannot load Iceberg catalog 'lake': ConnectionError: .*127\.0\.0\.1"
    ) as raised:
        WRITER.write(pl.DataFrame({"id": [1]}), dest, marker=marker(1))
    assert "t0p-secret" not in str(raised.value)


def test_merge_upsert_into_a_partitioned_table(tmp_path: Path) -> None:
    dest = iceberg_destination(tmp_path, load_type="merge_upsert", merge_keys=["id"], partition_columns=["region"])
    WRITER.write(pl.DataFrame({"id": [1, 2, 3], "region": ["eu", "us", "eu"], "v": [1, 2, 3]}), dest, marker=marker(1))
    # key 1 updated in place; key 2 moves region: merge keys are extended with the partition column
    # (M-28), so the moved row is a new row beside the old one, as on Delta
    info = WRITER.write(pl.DataFrame({"id": [1, 2], "region": ["eu", "eu"], "v": [10, 20]}), dest, marker=marker(2))
    expected = pl.DataFrame({"id": [1, 2, 2, 3], "region": ["eu", "eu", "us", "eu"], "v": [10, 20, 2, 3]})
    assert_frame_equal(orders(tmp_path, "id", "region"), expected)
    assert (info.rows_updated, info.rows_inserted) == (1, 1)


def test_a_concurrent_commit_is_a_retryable_conflict_never_a_rebase(tmp_path: Path) -> None:
    from datacoolie_core.destinations.iceberg_writer import fail_fast
    from datacoolie_core.errors import CommitConflictError, TransientError
    from datacoolie_core.platform import iceberg_catalog as ic

    dest = iceberg_destination(tmp_path, load_type="append")
    WRITER.write(pl.DataFrame({"id": [1]}), dest, marker=marker(1))
    stale = load_table(tmp_path, "silver", "orders")  # our view, then another writer commits
    WRITER.write(pl.DataFrame({"id": [2]}), dest, marker=marker(2))
    tx = fail_fast(stale).transaction()
    tx.append(pl.DataFrame({"id": [3]}).to_arrow())
    conflict = pytest.raises(CommitConflictError, match="another writer committed concurrently")
    with conflict as raised, ic.translate_errors(("silver", "orders")):
        tx.commit_transaction()
    assert isinstance(raised.value, TransientError)
    table = load_table(tmp_path, "silver", "orders")
    assert orders(tmp_path)["id"].to_list() == [1, 2]
    assert "commit.retry.num-retries" not in table.properties  # set in memory only


def test_a_table_with_not_null_columns_made_by_another_engine(tmp_path: Path) -> None:
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    from tests.support.iceberg import seed_catalog

    catalog = seed_catalog(tmp_path, "lake")
    catalog.create_namespace("silver")
    required_id = NestedField(1, "id", LongType(), required=True)
    catalog.create_table(("silver", "orders"), schema=Schema(required_id, NestedField(2, "name", StringType())))
    dest = iceberg_destination(tmp_path, load_type="merge_upsert", merge_keys=["id"])
    # Polars exports every column nullable: the batch is aligned with the table's NOT NULL columns
    WRITER.write(pl.DataFrame({"id": [1, 2], "name": ["a", "b"]}), dest, marker=marker(1))
    WRITER.write(pl.DataFrame({"id": [2], "name": ["B"], "score": [1.5]}), dest, marker=marker(2))
    expected = pl.DataFrame({"id": [1, 2], "name": ["a", "B"], "score": [None, 1.5]})
    assert_frame_equal(orders(tmp_path), expected)
    assert load_table(tmp_path, "silver", "orders").schema().find_field("id").required  # not relaxed
    with pytest.raises(DestinationError, match=r"requires id \(NOT NULL\) but the batch has nulls"):
        WRITER.write(
            pl.DataFrame({"id": [None], "name": ["n"]}, schema={"id": pl.Int64, "name": pl.String}),
            dest,
            marker=marker(3),
        )


def test_catalog_credentials_are_registered_secrets() -> None:
    from datacoolie_core.secrets import secret_values

    properties = {
        "type": "rest",
        "uri": "https://user:uri-pw@catalog.example.com/api",
        "credential": "client:cred-secret",
        "s3.secret-access-key": "s3-secret",
        "warehouse": "analytics",
    }
    connection = Connection.model_validate(
        {"name": "lake", "format": "iceberg", "configure": {"catalog_properties": properties}}
    )
    assert secret_values(connection) == {"uri-pw", "client:cred-secret", "s3-secret"}
    assert "cred-secret" not in repr(connection)
