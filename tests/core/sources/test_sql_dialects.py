"""The SQL generated for MySQL/MariaDB, SQL Server and Oracle, checked per dialect with sqlglot.

No SQL Server or Oracle server runs here: their SQL is checked as text, parsed back with the target
dialect (same tree, same text), and — in the PostgreSQL tier — transpiled from that dialect and run on
a real PostgreSQL holding the same rows, so the window selects the same rows it would there. The
drivers' error paths (missing driver, unreachable server) run for real.
"""

from __future__ import annotations

import socket
import sys
import uuid
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import polars as pl
import pytest
import sqlglot
from sqlglot import exp

from datacoolie_core.errors import SourceConnectionError, SourceError
from datacoolie_core.metadata.validation import validate_document
from datacoolie_core.sources.database import base_query, final_sql
from datacoolie_core.sources.pushdown import probe, where_condition
from datacoolie_core.sources.window import Comparison, Window
from tests.core.sources.helpers import make_source, read

DIALECTS = {"mysql": "mysql", "mssql": "tsql", "oracle": "oracle"}
COLUMNS: dict[str, pl.DataType | None] = {
    "id": pl.Int64(), "changed_at": pl.Datetime("us"), "zoned": pl.Datetime("us", "UTC"), "day": pl.Date(),
    "amount": pl.Decimal(12, 2), "flag": pl.Boolean(), "status": pl.String(),
}  # fmt: skip
ORACLE_COLUMNS = {name.upper(): dtype for name, dtype in COLUMNS.items()}  # Oracle describes unquoted names upper case


def generated(database_type: str, window: Window | None, filter_sql: str | None = None, **source: Any) -> str:
    """The SQL the reader submits for ``source`` (table ``sales.orders`` unless a query is given)."""
    dialect = DIALECTS[database_type]
    src = make_source({"format": "sql", "configure": {"database_type": database_type, "host": "db"}},
                      **({"schema_name": "sales", "table": "orders"} | source))  # fmt: skip
    columns = ORACLE_COLUMNS if dialect == "oracle" else COLUMNS
    base = base_query(src, dialect, "s")
    condition = where_condition(window, filter_sql, columns, dialect, label="s")
    return final_sql(src.query, base, condition, dialect)


def one(column: str, op: str, value: Any) -> Window:
    return Window(((Comparison(column, op, value),),))


CASES = {
    "timestamp": (one("changed_at", ">", datetime(2024, 1, 2, 3, 4, 5, 6)), {
        "mysql": "`changed_at` > CAST('2024-01-02 03:04:05.000006' AS DATETIME(6))",
        "mssql": "[changed_at] > CAST('2024-01-02 03:04:05.000006' AS DATETIME2)",
        "oracle": "\"CHANGED_AT\" > TO_TIMESTAMP('2024-01-02 03:04:05.000006', 'YYYY-MM-DD HH24:MI:SS.FF6')"}),
    "aware": (one("zoned", ">", datetime(2024, 1, 2, 5, tzinfo=timezone(timedelta(hours=2)))), {
        "mysql": "`zoned` > CAST('2024-01-02 03:00:00.000000' AS DATETIME(6))",
        "mssql": "[zoned] > CAST('2024-01-02 03:00:00+00:00' AS DATETIMEOFFSET)",
        "oracle": "\"ZONED\" > TO_TIMESTAMP('2024-01-02 03:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.FF6')"}),
    "date": (one("day", ">", "2024-01-02"), {
        "mysql": "`day` > CAST('2024-01-02' AS DATE)",
        "mssql": "[day] > CAST('2024-01-02' AS DATE)",
        "oracle": "\"DAY\" > TO_DATE('2024-01-02', 'YYYY-MM-DD')"}),
    "decimal": (one("amount", ">", 2.5), {
        "mysql": "`amount` > 2.50", "mssql": "[amount] > 2.50", "oracle": "\"AMOUNT\" > 2.50"}),
    "bool": (one("flag", ">=", True), {
        "mysql": "`flag` >= TRUE", "mssql": "[flag] >= 1", "oracle": "\"FLAG\" >= 1"}),
    "quoted-string": (one("status", ">", "x' OR '1'='1"), {
        "mysql": "`status` > 'x'' OR ''1''=''1'", "mssql": "[status] > 'x'' OR ''1''=''1'",
        "oracle": "\"STATUS\" > 'x'' OR ''1''=''1'"}),
}  # fmt: skip


@pytest.mark.parametrize("database_type", DIALECTS)
@pytest.mark.parametrize("case", CASES)
def test_table_mode_window_literal_per_dialect(database_type: str, case: str) -> None:
    window, expected = CASES[case]
    table = {"mysql": "`sales`.`orders`", "mssql": "[sales].[orders]", "oracle": '"SALES"."ORDERS"'}[database_type]
    sql = generated(database_type, window)
    assert sql == f"SELECT * FROM {table} WHERE ({expected[database_type]})"
    _assert_parses_back(sql, DIALECTS[database_type])


@pytest.mark.parametrize("database_type", DIALECTS)
def test_query_mode_two_columns_and_filter_parenthesised(database_type: str) -> None:
    dialect = DIALECTS[database_type]
    window = Window(((Comparison("id", ">", 5),), (Comparison("day", ">", date(2024, 1, 2)),)))
    sql = generated(database_type, window, "status = 'ok' AND year(day) = 2024", query="SELECT * FROM sales.orders")
    tree = _assert_parses_back(sql, dialect)
    where = tree.args["where"].this
    # (window) AND (filter): the OR never binds the filter's first term (DataCoolie F-21)
    assert isinstance(where, exp.And)
    assert isinstance(where.this, exp.Paren)
    assert isinstance(where.this.this, exp.Or)
    assert isinstance(where.expression, exp.Paren)
    assert isinstance(where.expression.this, exp.And)
    subquery = tree.args["from_"].this
    assert isinstance(subquery, exp.Subquery)
    assert subquery.alias == "t1"


@pytest.mark.parametrize(
    ("database_type", "expected"),
    [("mysql", "SELECT * FROM (SELECT * FROM `sales`.`orders`) AS `t1` LIMIT 0"),
     ("mssql", "SELECT TOP 0 * FROM (SELECT * FROM [sales].[orders]) AS [t1]"),
     ("oracle", 'SELECT * FROM (SELECT * FROM "SALES"."ORDERS") "t1" FETCH FIRST 0 ROWS ONLY')],
)  # fmt: skip
def test_the_describe_probe_returns_no_row_in_each_dialect(database_type: str, expected: str) -> None:
    dialect = DIALECTS[database_type]
    src = make_source(
        {"format": "sql", "configure": {"database_type": database_type}}, schema_name="sales", table="orders"
    )
    sql = probe(base_query(src, dialect, "s")).sql(dialect=dialect)
    assert sql == expected
    limit = _assert_parses_back(sql, dialect).args["limit"]  # LIMIT / TOP (exp.Limit) or FETCH FIRST (exp.Fetch)
    count = limit.expression if isinstance(limit, exp.Limit) else limit.args["count"]
    assert count.to_py() == 0


def test_oracle_folds_plain_names_as_datacoolie_unquoted_sql_does_and_quotes_the_rest() -> None:
    assert generated("oracle", None, schema_name="sales", table="orders") == 'SELECT * FROM "SALES"."ORDERS"'
    assert generated("oracle", None, schema_name=None, table="Order Lines") == 'SELECT * FROM "Order Lines"'
    assert generated("mysql", None, schema_name=None, table="Orders") == "SELECT * FROM `Orders`"


def _assert_parses_back(sql: str, dialect: str) -> exp.Select:
    """``sql`` parses in ``dialect`` to a single SELECT whose text is ``sql`` again."""
    tree = sqlglot.parse_one(sql, read=dialect)
    assert isinstance(tree, exp.Select)
    assert tree.sql(dialect=dialect) == sql
    return tree


# --- the generated SQL run on a real database ---------------------------------------------------------


def test_generated_sql_selects_the_same_rows_on_postgresql(postgres_url: str) -> None:
    """Each dialect's SQL, parsed back in that dialect and transpiled, returns the exact window's rows."""
    psycopg2 = pytest.importorskip("psycopg2")
    rows = [(i, datetime(2024, 1, 1, i, 0, 0, 500), datetime(2024, 1, 1, i, tzinfo=UTC), date(2024, 1, i),
             Decimal(f"{i}.25"), i % 2 == 0, "ok" if i != 4 else "void") for i in range(1, 8)]  # fmt: skip
    window = Window(((Comparison("changed_at", ">", datetime(2024, 1, 1, 2, 0, 0, 500)),
                      Comparison("zoned", "<", datetime(2024, 1, 1, 8, tzinfo=timezone(timedelta(hours=2)))),),
                     (Comparison("day", ">=", date(2024, 1, 7)), Comparison("amount", ">=", Decimal("7.25"))),))  # fmt: skip
    expected = [3, 5, 7]  # 3..5 by time (6 is past 06:00 UTC), 7 by day/amount; 4 is void
    conn = psycopg2.connect(postgres_url)
    conn.autocommit = True
    schema = f"d_{uuid.uuid4().hex[:8]}"
    try:
        with conn.cursor() as cur:
            cur.execute("SET TIME ZONE 'UTC'")
            for table, names in (("orders", list(COLUMNS)), ("ORDERS", list(ORACLE_COLUMNS))):
                cur.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                ddl = ", ".join(f'"{n}" {t}' for n, t in zip(names, ("int", "timestamp", "timestamptz", "date",
                                "numeric(12,2)", "boolean", "text"), strict=True))  # fmt: skip
                cur.execute(f'CREATE TABLE "{schema}"."{table}" ({ddl})')
                cur.executemany(f'INSERT INTO "{schema}"."{table}" VALUES (%s, %s, %s, %s, %s, %s, %s)', rows)
            cur.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema.upper()}"')
            cur.execute(f'CREATE VIEW "{schema.upper()}"."ORDERS" AS SELECT * FROM "{schema}"."ORDERS"')
            for database_type, dialect in DIALECTS.items():
                sql = generated(database_type, window, "status = 'ok'", schema_name=schema)
                cur.execute(sqlglot.transpile(sql, read=dialect, write="postgres")[0])
                assert sorted(r[0] for r in cur.fetchall()) == expected, (database_type, sql)
    finally:
        with conn.cursor() as cur:
            cur.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            cur.execute(f'DROP SCHEMA IF EXISTS "{schema.upper()}" CASCADE')
        conn.close()


# --- error paths: a missing driver, an unreachable server ---------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again on exit: nothing listens there


@pytest.mark.parametrize(
    ("database_type", "driver", "extra"),
    [("mysql", "pymysql", "mysql"), ("mssql", "pymssql", "mssql"), ("oracle", "oracledb", "oracledb")],
)
def test_missing_driver_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, database_type: str, driver: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, driver, None)  # what `import` sees when the package is not installed
    source = make_source({"format": "sql", "configure": {"database_type": database_type, "host": "127.0.0.1"}},
                         table="orders")  # fmt: skip
    with pytest.raises(SourceError, match=rf"needs the {driver} driver.*pip install 'datacoolie-dagster\[{extra}\]'"):
        read(source)


@pytest.mark.parametrize(
    ("database_type", "message"),
    [("mysql", "cannot connect to MySQL/MariaDB at 127.0.0.1:"), ("mssql", "cannot connect to SQL Server at 127.0.0.1:"),
     ("oracle", "cannot connect to Oracle at 127.0.0.1:")],
)  # fmt: skip
def test_unreachable_server_is_a_connection_error_without_the_password(database_type: str, message: str) -> None:
    port = _closed_port()
    configure = {"database_type": database_type, "host": "127.0.0.1", "port": port, "database": "shop",
                 "username": "etl", "password": "Sup3r-s3cret-pw"}  # fmt: skip
    with pytest.raises(SourceConnectionError, match=f"{message}{port}") as info:
        read(
            make_source({"format": "sql", "configure": configure}, table="orders", watermark_columns=["id"]), {"id": 1}
        )
    assert "Sup3r-s3cret-pw" not in str(info.value)


def test_sql_server_entra_auth_is_refused_clearly() -> None:
    configure = {"database_type": "mssql", "host": "127.0.0.1", "auth_type": "access_token", "token": "t"}
    with pytest.raises(SourceError, match="auth_type 'access_token' needs Entra ID"):
        read(make_source({"format": "sql", "configure": configure}, table="orders"))


def test_unknown_read_option_of_a_dbapi_database(monkeypatch: pytest.MonkeyPatch) -> None:
    document = {
        "connections": [
            {"name": "maria", "format": "sql", "configure": {"database_type": "mysql", "read_options": {"batchsize": 5}}},
            {"name": "other", "format": "sql", "configure": {"url": "mysqll://h/db"}},
        ]
    }  # fmt: skip
    issues = {i.path: i.message for i in validate_document(document).issues}
    assert "did you mean 'batch_size'?" in issues["connections[0].configure.read_options.batchsize"]
    assert "did you mean 'mysql'?" in issues["connections[1].configure.url"]


def test_a_document_reading_every_database_validates() -> None:
    databases = {
        "sqlite": {"database_type": "sqlite", "database": "./crm.db"},
        "postgresql": {"database_type": "postgresql", "host": "pg", "database": "shop", "username": "etl",
                       "password": "PG_PASSWORD"},
        "mysql": {"database_type": "mysql", "host": "maria", "database": "shop", "username": "etl",
                  "password": "MYSQL_PASSWORD", "read_options": {"batch_size": 10000}},
        "mariadb_url": {"url": "mariadb://{user}:{password}@maria:3306/shop", "username": "etl",
                        "password": "MYSQL_PASSWORD"},
        "mssql": {"database_type": "mssql", "host": "sqlserver", "database": "shop", "username": "etl",
                  "password": "MSSQL_PASSWORD"},
        "oracle": {"database_type": "oracle", "host": "ora", "port": 1521, "database": "ORCLPDB1",
                   "username": "etl", "password": "ORACLE_PASSWORD"},
    }  # fmt: skip
    connections = [
        {"name": name, "format": "sql", "configure": configure}
        | ({"secrets_ref": {"env:": ["password"]}} if "password" in configure else {})
        for name, configure in databases.items()
    ]
    connections.append({"name": "lake", "format": "delta", "configure": {"base_path": "./lake"}})
    dataflows = [
        {"name": f"{name}_orders", "stage": "load",
         "source": {"connection_name": name, "schema_name": "sales", "table": "orders", "watermark_columns": ["updated_at"]},
         "destination": {"connection_name": "lake", "table": f"{name}_orders", "load_type": "append"}}
        for name in databases
    ]  # fmt: skip
    result = validate_document({"connections": connections, "dataflows": dataflows})
    assert [i for i in result.issues if i.severity == "error"] == []
    assert len(result.dataflows) == len(databases)
