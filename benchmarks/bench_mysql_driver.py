"""Reading a MariaDB table: pymysql (the driver the reader uses) against connectorx, and what each returns.

    .venv/bin/python benchmarks/bench_mysql_driver.py [--rows 100000] [--rounds 3]

Starts a private MariaDB server (tests/support/mariadb.py, Debian's mariadb-server), fills a table
of ``--rows`` rows (BIGINT, DATETIME(6), TIMESTAMP(3), DECIMAL(18,4), TINYINT(1), utf8mb4
VARCHAR, DATE) and reports the best of ``--rounds`` wall times of: the DatabaseReader end to end
(pymysql, typed frames), a bare pymysql ``fetchall``, and ``polars.read_database_uri`` with
connectorx (skipped when connectorx is not installed; it is not a dependency). Then it reads back
the values connectorx gets wrong: a DECIMAL(30,15), a DECIMAL(38,0) and a zero date.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from datacoolie_core.sources import ReadRequest, get_reader
from tests.core.sources.helpers import make_source
from tests.support.mariadb import fresh_database, start_mariadb


def best(rounds: int, read: Callable[[], Any]) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        read()
        times.append(time.perf_counter() - start)
    return min(times)


def fill(conn: Any, rows: int) -> None:
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, changed_at DATETIME(6), ts TIMESTAMP(3) NULL, "
                    "amount DECIMAL(18,4), flag TINYINT(1), name VARCHAR(64), day DATE) CHARACTER SET utf8mb4")  # fmt: skip
        cur.execute(
            "INSERT INTO t SELECT seq, TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND + INTERVAL 123456 "
            "MICROSECOND, TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND, seq * 1.2345, seq % 2, "
            f"CONCAT('naïve 😀 ', seq), DATE'2024-01-01' + INTERVAL (seq % 300) DAY FROM seq_1_to_{rows}"
        )


def connectorx_errors(uri: str, conn: Any) -> None:
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")
        cur.execute("CREATE TABLE odd (a DECIMAL(30,15), b DECIMAL(38,0), z DATETIME)")
        cur.execute("INSERT INTO odd VALUES (123456789012345.123456789012345, 1234567890123456789012345678901234567, "
                    "'0000-00-00 00:00:00')")  # fmt: skip
    for column in ("a", "b", "z"):
        try:
            got: Any = pl.read_database_uri(f"SELECT {column} FROM odd", uri, engine="connectorx").item()
        except BaseException as e:  # connectorx panics (pyo3 PanicException derives from BaseException)
            got = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
        print(f"  connectorx {column}: {got}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with start_mariadb() as url, fresh_database(url) as (conn, configure):
        fill(conn, args.rows)
        source = make_source({"format": "sql", "configure": configure}, table="t")
        reader = get_reader("sql")
        ours = best(args.rounds, lambda: reader.read(source, ReadRequest()))

        def bare() -> None:
            with conn.cursor() as cur:
                cur.execute("SELECT * FROM t")
                cur.fetchall()

        print(f"rows={args.rows} best of {args.rounds}")
        print(f"  DatabaseReader (pymysql, typed frames): {ours:.2f}s")
        print(f"  bare pymysql fetchall:                  {best(args.rounds, bare):.2f}s")
        parts = urlsplit(url)
        uri = f"mysql://{parts.username}:{parts.password}@{parts.hostname}:{parts.port}/{configure['database']}"
        try:
            import connectorx  # noqa: F401
        except ImportError:
            print("  connectorx: not installed (pip install connectorx to compare)")
            return
        cx = best(args.rounds, lambda: pl.read_database_uri("SELECT * FROM t", uri, engine="connectorx"))
        print(f"  connectorx read_database_uri:           {cx:.2f}s ({ours / cx:.1f}x faster than the reader)")
        connectorx_errors(uri, conn)


if __name__ == "__main__":
    main()
