from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.errors import SourceError
from datacoolie_core.models.dataflow import Source
from datacoolie_core.sources import ReadRange
from datacoolie_core.watermark import deserialize_watermark, serialize_watermark
from tests.core.sources.helpers import make_source, read, read_ok

psycopg2 = pytest.importorskip("psycopg2")


def stored(after: dict[str, Any] | None) -> dict[str, Any] | None:
    return deserialize_watermark(serialize_watermark(after)) if after else None


# --- SQLite ------------------------------------------------------------------------------------------


def sqlite_db(tmp_path: Path, *rows: tuple[Any, ...]) -> Path:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS orders (id INTEGER, changed_at TIMESTAMP, day DATE, status TEXT, amount REAL)"
        )
        conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", rows)
    conn.close()
    return path


def sqlite_source(path: Path | str, **source: Any) -> Source:
    return make_source({"format": "sql", "configure": {"database_type": "sqlite", "database": str(path)}}, **source)


def test_sqlite_table_mode_two_incremental_runs(tmp_path: Path) -> None:
    path = sqlite_db(tmp_path, (1, "2024-01-01 10:00:00", "2024-01-01", "ok", 1.5),
                     (2, "2024-01-01T11:00:00.500", "2024-01-02", "ok", 2.0))  # fmt: skip
    source = sqlite_source(path, table="orders", watermark_columns=["CHANGED_AT"])

    # load 1 — everything; declared TIMESTAMP/DATE text becomes Datetime/Date
    run1 = read_ok(source)
    expected = pl.DataFrame(
        {"id": [1, 2], "changed_at": [datetime(2024, 1, 1, 10), datetime(2024, 1, 1, 11, 0, 0, 500000)],
         "day": [date(2024, 1, 1), date(2024, 1, 2)], "status": ["ok", "ok"], "amount": [1.5, 2.0]}
    )  # fmt: skip
    assert_frame_equal(run1.data, expected)
    assert run1.runtime.source_action["query"] == 'SELECT * FROM "orders"'
    assert run1.runtime.watermark_after == {"CHANGED_AT": datetime(2024, 1, 1, 11, 0, 0, 500000)}

    # load 2 — a row at the stored max (not re-read) and two newer ones in both ISO spellings
    sqlite_db(tmp_path, (3, "2024-01-01 11:00:00.5", None, "ok", 0.0), (4, "2024-01-01T12:00:00", None, "ok", 0.0),
              (5, "2024-01-01 13:00:00", None, "ok", 0.0))  # fmt: skip
    run2 = read_ok(source, stored(run1.runtime.watermark_after))
    assert run2.data["id"].to_list() == [4, 5]
    assert run2.runtime.source_action["query"] == (
        """SELECT * FROM "orders" WHERE ("changed_at" > '2024-01-01 11:00:00.500000')"""
    )
    assert run2.runtime.watermark_after == {"CHANGED_AT": datetime(2024, 1, 1, 13)}


def test_sqlite_query_mode_window_and_filter_precedence(tmp_path: Path) -> None:
    # F-21: without parentheses "id > 2 OR day > … AND status = 'ok'" would also return row 3 (status 'void')
    path = sqlite_db(tmp_path, (1, None, "2024-01-01", "ok", 1.0), (2, None, "2024-01-09", "ok", 1.0),
                     (3, None, "2024-01-01", "void", 1.0), (4, None, "2024-01-01", "ok", 1.0))  # fmt: skip
    query = "SELECT id, day, status FROM orders WHERE amount > 0"
    source = sqlite_source(path, query=query, watermark_columns=["id", "day"], filter_expression="status = 'ok'")
    result = read_ok(source, {"id": 2, "day": date(2024, 1, 5)})
    assert result.data["id"].to_list() == [2, 4]
    assert result.runtime.source_action["query"] == (
        'SELECT * FROM (SELECT id, day, status FROM orders WHERE amount > 0) AS "t1" '
        """WHERE ("id" > 2 OR "day" > '2024-01-05') AND ("status" = 'ok')"""
    )
    assert result.runtime.watermark_after == {"id": 4, "day": date(2024, 1, 9)}


def test_sqlite_query_without_window_is_submitted_verbatim(tmp_path: Path) -> None:
    path = sqlite_db(tmp_path, (1, None, None, "ok", 1.0))
    query = "select id, status from orders"
    result = read_ok(sqlite_source(path, query=query))
    assert result.runtime.source_action["query"] == query
    assert_frame_equal(result.data, pl.DataFrame({"id": [1], "status": ["ok"]}))


def test_sqlite_injection_through_a_stored_watermark_reads_nothing_extra(tmp_path: Path) -> None:
    path = sqlite_db(tmp_path, (1, None, None, "alpha", 1.0), (2, None, None, "beta", 1.0))
    source = sqlite_source(path, table="orders", watermark_columns=["status"])
    assert read(source, {"status": "x' OR '1'='1"}) is None
    assert read_ok(source, {"status": "alpha"}).data["id"].to_list() == [2]


def test_sqlite_missing_file_is_an_error_and_not_created(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"SQLite database file '.*missing.db' does not exist"):
        read(sqlite_source(tmp_path / "missing.db", table="orders"))
    assert not (tmp_path / "missing.db").exists()


def test_sqlite_relative_path_and_driver_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sqlite_db(tmp_path, (1, None, None, "ok", 1.0))
    monkeypatch.chdir(tmp_path)
    assert read_ok(sqlite_source("shop.db", table="orders")).data["id"].to_list() == [1]
    with pytest.raises(SourceError, match="no such table"):
        read(sqlite_source("shop.db", table="order"))


def test_unsupported_database_type(tmp_path: Path) -> None:
    source = make_source({"format": "sql", "configure": {"url": "db2://h:50000/shop"}}, table="t")
    with pytest.raises(
        SourceError,
        match=r"database_type unset \(url scheme 'db2'\) is not supported.*postgresql, sqlite, mysql, mssql",
    ):
        read(source)


# --- PostgreSQL (a real server, see tests/support/postgres.py) -------------------------------------------


@pytest.fixture
def pg(postgres_url: str) -> Iterator[tuple[Any, dict[str, Any], str]]:
    """(autocommit connection, connection configure, a fresh schema name)."""
    schema = f"s_{uuid.uuid4().hex[:8]}"
    conn = psycopg2.connect(postgres_url)
    conn.autocommit = True
    conn.cursor().execute(f'CREATE SCHEMA "{schema}"')
    url = urlsplit(postgres_url)
    configure = {"database_type": "postgresql", "host": url.hostname, "port": url.port,
                 "database": url.path.lstrip("/"), "username": url.username, "password": url.password}  # fmt: skip
    yield conn, configure, schema
    conn.cursor().execute(f'DROP SCHEMA "{schema}" CASCADE')
    conn.close()


def pg_source(configure: dict[str, Any], **source: Any) -> Source:
    return make_source({"format": "sql", "configure": configure}, **source)


def insert(conn: Any, schema: str, rows: list[tuple[Any, ...]]) -> None:
    with conn.cursor() as cur:
        cur.execute(
            f'CREATE TABLE IF NOT EXISTS "{schema}".orders (id int, ChangedAt timestamptz, local_ts timestamp, '
            "day date, amount numeric(12,2), status text)"
        )
        cur.executemany(f'INSERT INTO "{schema}".orders VALUES (%s, %s, %s, %s, %s, %s)', rows)


def _row(i: int, hour: int, status: str = "ok") -> tuple[Any, ...]:
    return (i, datetime(2024, 1, 1, hour, tzinfo=UTC), datetime(2024, 1, 1, hour), date(2024, 1, hour),
            Decimal(f"{i}.50"), status)  # fmt: skip


@pytest.mark.parametrize(
    ("column", "after1", "pushed"),
    [
        ("changedat", datetime(2024, 1, 1, 2, tzinfo=UTC), "\"changedat\" > CAST('2024-01-01 02:00:00+00:00' AS TIMESTAMPTZ)"),
        ("local_ts", datetime(2024, 1, 1, 2), "\"local_ts\" > CAST('2024-01-01 02:00:00' AS TIMESTAMP)"),
        ("day", date(2024, 1, 2), "\"day\" > CAST('2024-01-02' AS DATE)"),
        ("amount", Decimal("2.50"), '"amount" > 2.50'),
        ("ID", 2, '"id" > 2'),
    ],
    ids=["timestamptz", "timestamp", "date", "numeric", "int-case-insensitive"],
)  # fmt: skip
def test_postgres_table_mode_two_incremental_runs(pg: Any, column: str, after1: Any, pushed: str) -> None:
    conn, configure, schema = pg
    source = pg_source(configure, schema_name=schema, table="orders", watermark_columns=[column])

    # load 1 — everything, with the database's types
    insert(conn, schema, [_row(1, 1), _row(2, 2)])
    run1 = read_ok(source)
    assert run1.data.schema == pl.Schema({"id": pl.Int64, "changedat": pl.Datetime("us", "UTC"),
        "local_ts": pl.Datetime("us"), "day": pl.Date, "amount": pl.Decimal(38, 2), "status": pl.String})  # fmt: skip
    assert run1.runtime.watermark_after == {column: after1}
    assert run1.runtime.source_action == {"database_type": "postgresql", "query": f'SELECT * FROM "{schema}"."orders"'}

    # load 2 — the window is pushed down, typed like the column
    insert(conn, schema, [_row(3, 3)])
    run2 = read_ok(source, stored(run1.runtime.watermark_after))
    assert run2.data["id"].to_list() == [3]
    assert run2.runtime.source_action["query"] == f'SELECT * FROM "{schema}"."orders" WHERE ({pushed})'
    assert "dc-test-secret" not in str(run2.runtime.source_action)


def test_postgres_query_mode_with_spark_filter_and_range(pg: Any) -> None:
    conn, configure, schema = pg
    insert(conn, schema, [_row(1, 1), _row(2, 2, "void"), _row(3, 3), _row(4, 4)])
    source = pg_source(configure, schema_name=schema, query=f'SELECT id, day, status FROM "{schema}".orders',
                       watermark_columns=["day"], filter_expression="upper(status) = 'OK' AND year(day) = 2024")  # fmt: skip
    result = read_ok(source, {"day": date(2099, 1, 1)}, read_range=ReadRange("day", "2024-01-02", date(2024, 1, 4)))
    assert result.data["id"].to_list() == [3]
    sql = result.runtime.source_action["query"]
    assert sql.startswith(f'SELECT * FROM (SELECT id, day, status FROM "{schema}".orders) AS "t1" WHERE (')
    assert "CAST('2024-01-02' AS DATE)" in sql
    assert result.runtime.watermark_after == {"day": date(2024, 1, 3)}


def test_postgres_injection_through_a_stored_watermark_reads_nothing_extra(pg: Any) -> None:
    conn, configure, schema = pg
    insert(conn, schema, [_row(1, 1, "alpha"), _row(2, 2, "beta")])
    source = pg_source(configure, schema_name=schema, table="orders", watermark_columns=["status"])
    assert read(source, {"status": "x' OR '1'='1"}) is None
    # typed like the column before it reaches the database
    with pytest.raises(SourceError, match=r"watermark value '1 OR 1=1' with column 'id' .*'1 OR 1=1' is not a number"):
        read(pg_source(configure, schema_name=schema, table="orders", watermark_columns=["id"]), {"id": "1 OR 1=1"})


def test_postgres_url_with_placeholders(pg: Any) -> None:
    conn, configure, schema = pg
    insert(conn, schema, [_row(1, 1)])
    url_config = {"database_type": "postgresql", "url": "postgresql://{user}:{password}@{host}:{port}/{database}",
                  **{k: configure[k] for k in ("host", "port", "database", "username", "password")}}  # fmt: skip
    result = read_ok(pg_source(url_config, schema_name=schema, table="orders"))
    assert result.data["id"].to_list() == [1]


def test_postgres_wrong_password_never_shows_a_password(pg: Any) -> None:
    _, configure, schema = pg
    wrong = configure | {"password": "Sup3r-s3cret"}
    with pytest.raises(SourceError, match="password authentication failed") as info:
        read(pg_source(wrong, schema_name=schema, table="orders"))
    assert "Sup3r-s3cret" not in str(info.value)
    assert configure["password"] not in str(info.value)


def test_postgres_session_is_read_only(pg: Any) -> None:
    conn, configure, schema = pg
    insert(conn, schema, [_row(1, 1)])
    query = f'SELECT id FROM "{schema}".orders FOR UPDATE'
    with pytest.raises(SourceError, match="read-only transaction"):
        read(pg_source(configure, query=query))


def test_sqlite_watermark_in_the_sanitized_spelling_is_pushed_down_on_the_raw_column(tmp_path: Path) -> None:
    path = tmp_path / "raw.db"
    with sqlite3.connect(path) as conn:
        conn.execute('CREATE TABLE orders ("Order ID" INTEGER, "Changed At" TEXT)')
        conn.executemany("INSERT INTO orders VALUES (?, ?)", [(1, "2024-01-01"), (2, "2024-01-02")])
    conn.close()
    source = sqlite_source(path, table="orders", watermark_columns=["changed_at"])

    run1 = read_ok(source)
    assert run1.runtime.watermark_after == {"changed_at": "2024-01-02"}
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO orders VALUES (3, '2024-01-03')")
    conn.close()
    run2 = read_ok(source, stored({"Changed At": "2024-01-01"}))  # a watermark saved under the raw spelling

    assert "\"Changed At\" > '2024-01-01'" in run2.runtime.source_action["query"]
    assert run2.data["Order ID"].to_list() == [2, 3]
    assert run2.runtime.watermark_after == {"Changed At": "2024-01-03"}
