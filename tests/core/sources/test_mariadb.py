"""MySQL/MariaDB sources against a real MariaDB server (tests/support/mariadb.py), through pymysql."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.cli import main
from datacoolie_core.errors import SourceConnectionError, SourceError
from datacoolie_core.models.dataflow import Source
from datacoolie_core.sources import ReadRange
from datacoolie_core.watermark import deserialize_watermark, serialize_watermark
from tests.core.sources.helpers import make_source, read, read_ok
from tests.support.mariadb import fresh_database

pymysql = pytest.importorskip("pymysql")

ORDERS = (
    "id BIGINT, changed_at DATETIME(6), ts TIMESTAMP(6) NULL, day DATE, amount DECIMAL(12,2), "
    "flag TINYINT(1), status VARCHAR(20)"
)


def stored(after: dict[str, Any] | None) -> dict[str, Any] | None:
    """A watermark as the next run sees it: serialized to the state store and read back."""
    return deserialize_watermark(serialize_watermark(after)) if after else None


@pytest.fixture
def maria(mariadb_url: str) -> Iterator[tuple[Any, dict[str, Any], str]]:
    """(autocommit connection to a fresh database, connection configure, the database's name)."""
    with fresh_database(mariadb_url) as (conn, configure):
        yield conn, configure, configure["database"]


def maria_source(configure: dict[str, Any], **source: Any) -> Source:
    return make_source({"format": "sql", "configure": configure}, **source)


def insert(conn: Any, rows: list[tuple[Any, ...]], columns: str = ORDERS, table: str = "orders") -> None:
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE IF NOT EXISTS `{table}` ({columns}) CHARACTER SET utf8mb4")
        marks = ", ".join(["%s"] * len(rows[0]))
        cur.executemany(f"INSERT INTO `{table}` VALUES ({marks})", rows)


def _row(i: int, hour: int, status: str = "ok") -> tuple[Any, ...]:
    return (i, datetime(2024, 1, 1, hour, 0, 0, 123456), datetime(2024, 1, 1, hour), date(2024, 1, hour),
            Decimal(f"{i}.50"), i % 2, status)  # fmt: skip


@pytest.mark.parametrize(
    ("column", "after1", "pushed"),
    [
        ("changed_at", datetime(2024, 1, 1, 2, 0, 0, 123456), "`changed_at` > CAST('2024-01-01 02:00:00.123456' AS DATETIME(6))"),
        ("TS", datetime(2024, 1, 1, 2, tzinfo=UTC), "`ts` > CAST('2024-01-01 02:00:00.000000' AS DATETIME(6))"),
        ("day", date(2024, 1, 2), "`day` > CAST('2024-01-02' AS DATE)"),
        ("amount", Decimal("2.50"), "`amount` > 2.50"),
        ("id", 2, "`id` > 2"),
    ],
    ids=["datetime6", "timestamp-utc", "date", "decimal", "bigint"],
)  # fmt: skip
def test_table_mode_full_then_incremental_with_push_down(maria: Any, column: str, after1: Any, pushed: str) -> None:
    conn, configure, _ = maria
    source = maria_source(configure, table="orders", watermark_columns=[column])

    # load 1 — everything, in the column types' dtypes
    insert(conn, [_row(1, 1), _row(2, 2)])
    run1 = read_ok(source)
    assert run1.data.schema == pl.Schema({"id": pl.Int64, "changed_at": pl.Datetime("us"),
        "ts": pl.Datetime("us", "UTC"), "day": pl.Date, "amount": pl.Decimal(12, 2), "flag": pl.Boolean,
        "status": pl.String})  # fmt: skip
    assert run1.runtime.source_action == {"database_type": "mysql", "query": "SELECT * FROM `orders`"}
    assert run1.runtime.watermark_after == {column: after1}
    assert type(run1.runtime.watermark_after[column]) is type(after1)

    # load 2 — the stored watermark (through the state store's JSON) is pushed down, typed like the column
    insert(conn, [_row(3, 3)])
    run2 = read_ok(source, stored(run1.runtime.watermark_after))
    assert run2.runtime.source_action["query"] == f"SELECT * FROM `orders` WHERE ({pushed})"
    assert run2.data["id"].to_list() == [3]
    assert read(source, stored(run2.runtime.watermark_after)) is None  # nothing new: skipped


def test_query_mode_filter_precedence_and_replay_bounds(maria: Any) -> None:
    conn, configure, schema = maria
    insert(conn, [_row(1, 1), _row(2, 2, "void"), _row(3, 3), _row(4, 4), _row(5, 5)])
    query = f"SELECT id, day, status FROM `{schema}`.orders WHERE amount > 0"
    source = maria_source(configure, query=query, watermark_columns=["id", "day"], filter_expression="status = 'ok'")

    # F-21: "id > 3 OR day > … AND status = 'ok'" would also return the void row 2
    incremental = read_ok(source, {"id": 3, "day": date(2024, 1, 1)})
    assert incremental.data["id"].to_list() == [3, 4, 5]
    assert incremental.runtime.source_action["query"] == (
        f"SELECT * FROM ({query}) AS `t1` WHERE (`id` > 3 OR `day` > CAST('2024-01-01' AS DATE)) AND (`status` = 'ok')"
    )

    # a replay chunk: start <= day < end, the stored watermark ignored
    replay = read_ok(source, {"id": 99, "day": date(2099, 1, 1)},
                     read_range=ReadRange("day", "2024-01-02", date(2024, 1, 4)))  # fmt: skip
    assert replay.data["id"].to_list() == [3]
    sql = replay.runtime.source_action["query"]
    assert "`day` >= CAST('2024-01-02' AS DATE) AND `day` < CAST('2024-01-04' AS DATE)" in sql


def test_query_without_window_is_submitted_verbatim(maria: Any) -> None:
    conn, configure, _ = maria
    insert(conn, [_row(1, 1)])
    query = "select id, status from orders"
    result = read_ok(maria_source(configure, query=query))
    assert result.runtime.source_action["query"] == query
    assert_frame_equal(result.data, pl.DataFrame({"id": [1], "status": ["ok"]}))


def test_tricky_types_keep_every_digit_and_character(maria: Any) -> None:
    conn, configure, _ = maria
    columns = ("big DECIMAL(30,15), micros DATETIME(6), yes TINYINT(1), small TINYINT, "
               "text VARCHAR(20), unsigned_max BIGINT UNSIGNED, note TEXT, raw VARBINARY(4)")  # fmt: skip
    text = "naïve 😀 日本"  # 4-byte UTF-8 needs utf8mb4
    insert(conn, [(Decimal("123456789012345.123456789012345"), datetime(2024, 2, 29, 23, 59, 59, 999999), 1, 7,
                   text, 2**64 - 1, None, b"\x00\xff"),
                  (Decimal("-0.000000000000001"), datetime(2024, 3, 1), 0, -3, None, 0, None, None)],
           columns, "tricky")  # fmt: skip
    source = maria_source(configure, table="tricky", watermark_columns=["big"])

    run = read_ok(source)
    expected = pl.DataFrame(
        {"big": pl.Series([Decimal("123456789012345.123456789012345"), Decimal("-0.000000000000001")],
                          dtype=pl.Decimal(30, 15)),
         "micros": [datetime(2024, 2, 29, 23, 59, 59, 999999), datetime(2024, 3, 1)],
         "yes": [True, False], "small": [7, -3], "text": [text, None],
         "unsigned_max": pl.Series([2**64 - 1, 0], dtype=pl.UInt64),
         "note": pl.Series([None, None], dtype=pl.String), "raw": [b"\x00\xff", None]}
    )  # fmt: skip
    assert_frame_equal(run.data, expected)
    assert run.runtime.watermark_after == {"big": Decimal("123456789012345.123456789012345")}

    # the 15-decimal watermark goes back to the database without rounding: only the bigger value qualifies
    insert(conn, [(Decimal("123456789012345.123456789012346"), None, 1, 0, "x", 1, "n", None)], columns, "tricky")
    run2 = read_ok(source, stored(run.runtime.watermark_after))
    assert run2.data["text"].to_list() == ["x"]
    assert "`big` > 123456789012345.123456789012345" in run2.runtime.source_action["query"]


def test_zero_dates_are_a_clear_error_and_nullif_reads_them_as_null(maria: Any) -> None:
    conn, configure, _ = maria
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")  # lets the zero date in, as legacy MySQL data has it
        cur.execute("CREATE TABLE legacy (id INT, changed_at DATETIME)")
        cur.execute("INSERT INTO legacy VALUES (1, '0000-00-00 00:00:00'), (2, '2024-01-01 00:00:00')")
    with pytest.raises(
        SourceError, match=r"column 'changed_at' holds the MySQL zero date '0000-00-00 00:00:00'.*NULLIF"
    ):
        read(maria_source(configure, table="legacy"))

    query = "SELECT id, NULLIF(changed_at, '0000-00-00 00:00:00') AS changed_at FROM legacy"
    result = read_ok(maria_source(configure, query=query))
    assert result.data["changed_at"].to_list() == [None, datetime(2024, 1, 1)]


def test_injection_through_a_stored_watermark_reads_nothing_extra(maria: Any) -> None:
    conn, configure, _ = maria
    insert(conn, [_row(1, 1, "alpha"), _row(2, 2, "beta")])
    source = maria_source(configure, table="orders", watermark_columns=["status"])
    assert read(source, {"status": "x' OR '1'='1"}) is None
    assert read_ok(source, {"status": "alpha"}).data["id"].to_list() == [2]
    with pytest.raises(SourceError, match=r"'1 OR 1=1' is not a number"):
        read(maria_source(configure, table="orders", watermark_columns=["id"]), {"id": "1 OR 1=1"})


def test_url_with_placeholders_and_mariadb_scheme(maria: Any) -> None:
    conn, configure, _ = maria
    insert(conn, [_row(1, 1)])
    url_config = {"url": "mariadb://{user}:{password}@{host}:{port}/{database}",
                  **{k: configure[k] for k in ("host", "port", "database", "username", "password")}}  # fmt: skip
    assert read_ok(maria_source(url_config, table="orders")).data["id"].to_list() == [1]


def test_secrets_never_in_errors_logs_or_the_recorded_query(maria: Any, caplog: pytest.LogCaptureFixture) -> None:
    conn, configure, _ = maria
    insert(conn, [_row(1, 1)])
    caplog.set_level(logging.DEBUG)
    result = read_ok(maria_source(configure, table="orders", watermark_columns=["id"]), {"id": 0})
    wrong = configure | {"password": "Sup3r-s3cret-pw"}
    with pytest.raises(SourceConnectionError, match="Access denied") as info:
        read(maria_source(wrong, table="orders"))
    for secret in (configure["password"], "Sup3r-s3cret-pw"):
        assert secret not in str(info.value)
        assert secret not in str(result.runtime.source_action)
        assert secret not in caplog.text
    with pytest.raises(SourceError, match="doesn't exist") as missing:
        read(maria_source(configure, table="no_such_table"))
    assert configure["password"] not in str(missing.value)


def test_batches_are_concatenated_and_the_session_is_read_only(maria: Any) -> None:
    conn, configure, _ = maria
    insert(conn, [_row(i, 1 + i % 20) for i in range(1, 26)])
    source = maria_source(configure | {"read_options": {"batch_size": 10}}, table="orders")
    assert read_ok(source).data["id"].to_list() == list(range(1, 26))
    misspelt = maria_source(configure | {"read_options": {"batchsize": 10}}, table="orders")
    with pytest.raises(SourceError, match=r"read option 'batchsize' is not an option.*did you mean 'batch_size'"):
        read(misspelt)
    with pytest.raises(SourceError, match="READ ONLY"):
        read(maria_source(configure, query="SELECT id FROM orders FOR UPDATE"))


def test_end_to_end_cli_runs_and_replay_into_delta(
    maria: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``datacoolie run`` twice (incremental merge) and ``replay`` from MariaDB into Delta, password from the environment."""
    conn, configure, _ = maria
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DC_TEST_MARIA_PASSWORD", configure["password"])
    insert(conn, [_row(1, 1), _row(2, 2)])
    connection = {"name": "shop", "format": "sql", "configure": configure | {"password": "DC_TEST_MARIA_PASSWORD"},
                  "secrets_ref": {"env:": ["password"]}}  # fmt: skip
    document = {
        "connections": [connection, {"name": "lake", "format": "delta", "configure": {"base_path": "./lake"}}],
        "dataflows": [{"name": "orders", "stage": "load",
                       "source": {"connection_name": "shop", "table": "orders", "watermark_columns": ["changed_at"]},
                       "destination": {"connection_name": "lake", "table": "orders", "load_type": "merge_upsert",
                                       "merge_keys": ["id"]}}],
    }  # fmt: skip
    (tmp_path / "metadata.json").write_text(json.dumps(document), encoding="utf-8")
    args = ["--metadata", "metadata.json", "--state-path", "state", "--log-path", "logs", "--json", "--no-observers"]

    def cli(*argv: str) -> dict[str, Any]:
        code = main([*argv, *args])
        out = capsys.readouterr().out
        assert code == 0, out
        return json.loads(out)

    assert cli("run")["dataflows"][0]["destination"]["rows_written"] == 2
    with conn.cursor() as cur:  # a new row and an update of row 1 past the watermark
        cur.execute("UPDATE orders SET status = 'changed', changed_at = '2024-01-01 09:00:00' WHERE id = 1")
    insert(conn, [_row(3, 3)])
    second = cli("run")["dataflows"][0]
    assert second["source"]["rows_read"] == 2
    table = pl.read_delta("lake/orders").sort("id")
    assert table.select("id", "status", "amount").rows() == [(1, "changed", Decimal("1.50")),
        (2, "ok", Decimal("2.50")), (3, "ok", Decimal("3.50"))]  # fmt: skip
    assert table.schema["changed_at"] == pl.Datetime("us", "UTC")  # a Delta timestamp, as every naive one is written

    replay = cli("replay", "--stage", "load", "--start", "2024-01-01 02:00:00", "--end", "2024-01-01 04:00:00")
    assert sum(d["source"]["rows_read"] for d in replay["dataflows"]) == 2  # rows 2 and 3
    logged = "\n".join(p.read_text(errors="replace") for p in (tmp_path / "logs").rglob("*") if p.is_file())
    assert configure["password"] not in logged
