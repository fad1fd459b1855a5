"""Nothing escapes its root: names, paths and lakehouse queries, checked at validate and at run time.

Each input an adversarial user tried is here, refused with the file, the JSON path and the fix;
hypothesis then generates names mixing ``..``, separators, control characters and length.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from datacoolie_core import FileProvider, MetadataError
from datacoolie_core.metadata import validate_document
from datacoolie_core.orchestration.driver import DataCoolieDriver
from datacoolie_core.platform.paths import (
    MAX_NAME_BYTES,
    PathEscapeError,
    confined_path,
    ensure_confined,
    name_problem,
    printable,
    shown,
)
from datacoolie_core.sql.references import query_reference_problems
from tests.core.adversarial.support import document, errors, run_cli, write

ROOT = Path("/data/root")
TABLE_FUNCTION = r"table function {}\(\) is not allowed; a query may read only the connection's Delta tables by name"

# --- SQL: a lakehouse query names only tables of its own connection -----------------------------

REFUSED_QUERIES = [
    ("read_csv", "SELECT * FROM read_csv('/etc/passwd')", TABLE_FUNCTION.format("read_csv")),
    ("read_parquet", "SELECT * FROM read_parquet('/any/file.parquet')", TABLE_FUNCTION.format("read_parquet")),
    ("read_json", "SELECT * FROM read_json('/x.json')", TABLE_FUNCTION.format("read_json")),
    ("read_ipc", "SELECT * FROM read_ipc('/x.arrow')", TABLE_FUNCTION.format("read_ipc")),
    ("read_delta", "SELECT * FROM read_delta('/elsewhere')", TABLE_FUNCTION.format("read_delta")),
    ("in-join", "SELECT * FROM raw JOIN read_parquet('/x') p ON raw.id = p.id", TABLE_FUNCTION.format("read_parquet")),
    ("in-subquery", "SELECT * FROM (SELECT * FROM read_csv('/x'))", TABLE_FUNCTION.format("read_csv")),
    ("in-cte", "WITH f AS (SELECT * FROM read_csv('/x')) SELECT * FROM f", TABLE_FUNCTION.format("read_csv")),
    ("upper-case", "SELECT * FROM READ_CSV('/x')", TABLE_FUNCTION.format("read_csv")),
    ("unknown-tvf", "SELECT * FROM generate_files('/x')", TABLE_FUNCTION.format("generate_files")),
    ("scalar-call", "SELECT read_csv('/x') AS c FROM raw", r"function read_csv\(\) reads files"),
    ("in-where", "SELECT * FROM raw WHERE id IN (SELECT id FROM read_csv('/x'))", TABLE_FUNCTION.format("read_csv")),
    (
        "parent-schema",
        "SELECT * FROM `../other_folder`.tbl",
        r"schema name '\.\./other_folder' in the query: .*separator",
    ),
    ("dotdot-table", "SELECT * FROM `..`", r"table name '\.\.' in the query: '\.' and '\.\.' name no folder"),
    ("quoted-path", "SELECT * FROM `/etc/passwd`", r"table name '/etc/passwd' in the query: .*separator"),
    ("backslash", "SELECT * FROM `..\\x`", r"table name .* in the query: .*separator"),
    ("catalog", "SELECT * FROM c.s.t", r"table 'c\.s\.t' has a catalog part"),
    ("nul", "SELECT * FROM `a\x00b`", r"table name 'a\\x00b' in the query: it contains a control character"),
    ("long", f"SELECT * FROM `{'t' * 300}`", r"is 300 bytes long; names are at most 255 bytes"),
    ("two-statements", "SELECT * FROM raw; SELECT * FROM read_csv('/x')", r"holds 2 statements"),
    ("not-sql", "SELECT * FROM", r"does not parse as SQL"),
]


@pytest.mark.parametrize(("query", "message"), [c[1:] for c in REFUSED_QUERIES], ids=[c[0] for c in REFUSED_QUERIES])
def test_a_lakehouse_query_naming_anything_but_tables_is_refused_at_validate(
    tmp_path: Path, query: str, message: str
) -> None:
    found = errors(document(tmp_path, source={"table": None, "query": query}))

    assert [path for path, _ in found] == ["dataflows[0].source.query"]
    assert any(re.search(message, text) for _, text in found), found


ALLOWED_QUERIES = [
    "SELECT * FROM raw",
    "SELECT a.id, count(*) AS n FROM bronze.orders a JOIN bronze.customers b ON a.cid = b.id GROUP BY a.id",
    "WITH recent AS (SELECT * FROM raw WHERE ts > '2024-01-01') SELECT upper(name) FROM recent",
    "SELECT * FROM raw, unnest(array(1, 2)) AS u(x)",
    "SELECT coalesce(a, b), cast(c AS int), substring(d, 1, 2) FROM `my..table`",
]


@pytest.mark.parametrize("query", ALLOWED_QUERIES)
def test_queries_over_registered_tables_pass(query: str) -> None:
    assert query_reference_problems(query) == []


def test_a_database_query_is_not_the_lakehouse_allow_list(tmp_path: Path) -> None:
    doc = document(tmp_path, source={"connection_name": "db", "table": None, "query": "SELECT * FROM dbo.t"})
    doc["connections"].append({"name": "db", "connection_type": "database", "configure": {"database_type": "sqlite"}})

    assert errors(doc) == []


# --- names: one clean path component ----------------------------------------------------------------

NAME = r"{} cannot be used as a name: {}"
SEPARATOR = r"it contains a path separator \('/' or '\\'\); a name is one folder, never a path"
DOTS = r"'\.' and '\.\.' name no folder of their own"
CONTROL = r"it contains a control character"
LONG = r"it is 300 bytes long; names are at most 255 bytes \(one file name\)"

REFUSED_NAMES: list[tuple[str, dict[str, Any], str, str]] = [
    ("dest-escape", {"destination": {"table": "../../escaped"}}, "dataflows[0].destination.table", SEPARATOR),
    ("dest-schema-dots", {"destination": {"schema_name": ".."}}, "dataflows[0].destination.schema_name", DOTS),
    ("dest-schema-up", {"destination": {"schema_name": "../up"}}, "dataflows[0].destination.schema_name", SEPARATOR),
    ("dest-absolute", {"destination": {"table": "/tmp/abs"}}, "dataflows[0].destination.table", SEPARATOR),
    ("dest-backslash", {"destination": {"table": "..\\..\\win"}}, "dataflows[0].destination.table", SEPARATOR),
    ("dest-dot", {"destination": {"table": "."}}, "dataflows[0].destination.table", DOTS),
    ("src-escape", {"source": {"connection_name": "landing", "table": ".."}}, "dataflows[0].source.table", DOTS),
    (
        "src-schema",
        {"source": {"connection_name": "landing", "schema_name": "../..", "table": "x"}},
        "dataflows[0].source.schema_name",
        SEPARATOR,
    ),
    ("lake-src", {"source": {"table": "../other/t"}}, "dataflows[0].source.table", SEPARATOR),
    ("long-table", {"destination": {"table": "t" * 300}}, "dataflows[0].destination.table", LONG),
    ("long-schema", {"destination": {"schema_name": "s" * 300}}, "dataflows[0].destination.schema_name", LONG),
    ("nul", {"destination": {"table": "a\x00b"}}, "dataflows[0].destination.table", CONTROL),
    ("newline", {"destination": {"table": "a\nb"}}, "dataflows[0].destination.table", CONTROL),
    ("escape-seq", {"destination": {"table": "a\x1b[31mred"}}, "dataflows[0].destination.table", CONTROL),
    ("stage-sep", {"stage": "a/b"}, "dataflows[0].stage", SEPARATOR),
    ("name-up", {"name": "../../../../tmp/x"}, "dataflows[0].name", SEPARATOR),
    ("name-control", {"name": "x\x07"}, "dataflows[0].name", CONTROL),
    ("stage-dots", {"stage": "bronze..silver"}, "dataflows[0].stage", r"contains '\.\.', which the watermark folder"),
    (
        "watermark-folder",
        {"name": "n" * 200, "stage": "s" * 100},
        "dataflows[0].name",
        r"make a watermark folder of 338 bytes \(at most 255\)",
    ),
    (
        "query-file-up",
        {"source": {"table": None, "query": "../x.sql"}},
        "dataflows[0].source.query",
        r"'\.\.' segments are not allowed",
    ),
    (
        "artifact-up",
        {"source": {"table": None, "query": "artifact:/../../x.sql"}},
        "dataflows[0].source.query",
        r"'\.\.' segments are not allowed",
    ),
    (
        "query-file-absolute",
        {"source": {"table": None, "query": "/etc/x.sql"}},
        "dataflows[0].source.query",
        r"only root-relative \.sql references are allowed",
    ),
]


@pytest.mark.parametrize(
    ("change", "path", "message"), [c[1:] for c in REFUSED_NAMES], ids=[c[0] for c in REFUSED_NAMES]
)
def test_names_that_would_leave_the_root_are_refused_at_validate(
    tmp_path: Path, change: dict[str, Any], path: str, message: str
) -> None:
    doc = document(tmp_path, source=change.get("source"), **change.get("destination", {}))
    doc["dataflows"][0] |= {k: v for k, v in change.items() if k not in ("source", "destination")}

    found = errors(doc)

    assert [p for p, _ in found] == [path]
    assert re.search(message, found[0][1]), found
    assert not any(ch in found[0][1] for ch in "\x00\n\x1b\x07"), "control characters are shown escaped"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("name", "lake\x1b]0;pwned\x07", CONTROL),
        ("name", "c" * 300, LONG),
        ("catalog", "../cat", SEPARATOR),
        ("database", "db\x00", CONTROL),
    ],
    ids=["name-escape-seq", "name-long", "catalog-separator", "database-nul"],
)
def test_connection_names_are_checked(tmp_path: Path, key: str, value: str, message: str) -> None:
    doc = document(tmp_path)
    doc["connections"][0][key] = value
    doc["dataflows"] = []

    found = errors(doc)

    assert [p for p, _ in found] == [f"connections[0].{key}"]
    assert re.search(message, found[0][1])


def test_a_relative_root_and_an_absolute_root_are_both_roots(tmp_path: Path) -> None:
    doc = document(tmp_path, schema_name="silver", table="orders..v2")
    doc["connections"][1]["configure"]["base_path"] = "relative/landing"  # a relative root is a root too
    doc["dataflows"][0]["source"] = {"connection_name": "landing", "table": "a..b"}

    assert errors(doc) == []


# --- hypothesis: whatever the name, it is refused or it stays inside ------------------------------

NAME_CHARS = st.sampled_from(["a", "Z", "é", "表", ".", "..", "/", "\\", "\x00", "\n", "\x1b", "\x7f", " ", "-", "_"])
NAMES = st.lists(NAME_CHARS, min_size=1, max_size=12).map("".join) | st.text(min_size=1, max_size=400)


@settings(max_examples=300, deadline=None)
@given(name=NAMES, field=st.sampled_from(["table", "schema_name"]))
def test_any_destination_name_is_refused_or_stays_inside(name: str, field: str) -> None:
    result = validate_document(document(ROOT, **{field: name}), file="metadata.json")

    if result.errors:
        assert all(i.path.startswith("dataflows[0].") for i in result.errors), result.errors
        assert all(printable(str(i)) == str(i) for i in result.errors), "messages never carry raw control characters"
    else:
        (dataflow,) = result.dataflows
        target = posixpath.normpath(dataflow.destination.path or "")
        assert target.startswith(str(ROOT / "lake") + "/"), target
        assert all(len(p.encode("utf-8", "surrogatepass")) <= MAX_NAME_BYTES for p in target.split("/"))


@settings(max_examples=300, deadline=None)
@given(name=NAMES)
def test_any_query_table_name_is_refused_or_is_one_component(name: str) -> None:
    query = exp.select("*").from_(exp.Table(this=exp.to_identifier(name, quoted=True))).sql(dialect="spark")

    problems = query_reference_problems(query)

    if not problems:
        assert name_problem(name) is None
        assert "/" not in name
        assert "\\" not in name
        assert name.strip() not in (".", "..")
    assert all(printable(p) == p for p in problems)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.sampled_from(["..", ".", "a", "b", "", "../..", "a/../..", "/abs"]), max_size=6))
def test_confined_path_never_returns_a_path_outside(parts: list[str]) -> None:
    try:
        joined = confined_path("/root", *parts)
    except PathEscapeError:
        return
    assert posixpath.normpath(joined) == "/root" or posixpath.normpath(joined).startswith("/root/")


# --- helpers --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("plain", "'plain'"), ("a\x00b", "'a\\x00b'"), ("x" * 100, "'" + "x" * 80 + "'... (100 bytes)")],
    ids=["plain", "nul", "long"],
)
def test_shown_escapes_and_cuts(value: str, expected: str) -> None:
    assert shown(value) == expected


def test_printable_escapes_terminal_sequences_but_keeps_lines() -> None:
    assert printable("a\x1b[31m\nb\tc\x00") == "a\\x1b[31m\nb\tc\\x00"


# --- run time: symlinks inside a root that point outside are refused -------------------------------


def _lake(tmp_path: Path) -> tuple[Path, Path]:
    lake, outside = tmp_path / "lake", tmp_path / "outside"
    lake.mkdir()
    outside.mkdir()
    pl.DataFrame({"id": [1, 2]}).write_delta(str(lake / "raw"))
    pl.DataFrame({"secret": ["s"]}).write_delta(str(outside / "secret"))
    return lake, outside


def _run(tmp_path: Path, doc: dict[str, Any]) -> Any:
    path = write(tmp_path / "meta" / "metadata.json", doc)
    with DataCoolieDriver(metadata_base_path=str(path)) as driver:
        (runtime,) = driver.run().runtimes
    return runtime


def test_a_source_symlink_out_of_the_root_is_refused_when_reading(tmp_path: Path) -> None:
    lake, outside = _lake(tmp_path)
    (lake / "linked").symlink_to(outside / "secret", target_is_directory=True)

    runtime = _run(tmp_path, document(tmp_path, source={"table": "linked"}))

    assert (runtime.status, runtime.error_type) == ("failed", "PathEscapeError")
    assert "outside its root" in (runtime.error_message or "")
    assert not (lake / "out").exists()


def test_a_destination_symlink_out_of_the_root_is_refused_when_writing(tmp_path: Path) -> None:
    lake, outside = _lake(tmp_path)
    (outside / "target").mkdir()
    (lake / "out").symlink_to(outside / "target", target_is_directory=True)

    runtime = _run(tmp_path, document(tmp_path))

    assert (runtime.status, runtime.error_type) == ("failed", "PathEscapeError")
    assert "destination path" in (runtime.error_message or "")
    assert os.listdir(outside / "target") == []


def test_a_source_file_symlinked_out_of_the_root_is_refused(tmp_path: Path) -> None:
    (tmp_path / "landing" / "orders").mkdir(parents=True)
    (tmp_path / "landing" / "orders" / "a.csv").write_text("id\n1\n")
    (tmp_path / "secret.csv").write_text("password\nhunter2\n")
    (tmp_path / "landing" / "orders" / "b.csv").symlink_to(tmp_path / "secret.csv")

    runtime = _run(tmp_path, document(tmp_path, source={"connection_name": "landing", "table": "orders"}))

    assert (runtime.status, runtime.error_type) == ("failed", "PathEscapeError")
    assert "the source file" in (runtime.error_message or "")
    assert not (tmp_path / "lake" / "out").exists()


def test_a_query_over_a_symlinked_table_is_refused(tmp_path: Path) -> None:
    lake, outside = _lake(tmp_path)
    (lake / "linked").symlink_to(outside / "secret", target_is_directory=True)

    runtime = _run(tmp_path, document(tmp_path, source={"table": None, "query": "SELECT * FROM linked"}))

    assert (runtime.status, runtime.error_type) == ("failed", "PathEscapeError")
    assert not (lake / "out").exists()


def test_a_query_file_using_read_csv_is_refused_when_read(tmp_path: Path) -> None:
    _lake(tmp_path)
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "steal.sql").write_text("SELECT * FROM read_csv('/etc/passwd')")
    path = write(tmp_path / "meta" / "metadata.json", document(tmp_path, source={"table": None, "query": "steal.sql"}))

    with DataCoolieDriver(metadata_base_path=str(path), sql_base_path=tmp_path / "sql") as driver:
        (runtime,) = driver.run().runtimes

    assert (runtime.status, runtime.error_type) == ("failed", "QueryFileError")
    assert "table function read_csv() is not allowed" in (runtime.error_message or "")
    assert not (tmp_path / "lake" / "out").exists()


def test_a_symlinked_root_itself_is_fine(tmp_path: Path) -> None:
    lake, _ = _lake(tmp_path)
    (tmp_path / "alias").symlink_to(lake, target_is_directory=True)
    doc = document(tmp_path)
    doc["connections"][0]["configure"]["base_path"] = str(tmp_path / "alias")

    runtime = _run(tmp_path, doc)

    assert runtime.status == "succeeded", runtime.error_message
    assert sorted(pl.read_delta(str(lake / "out"))["id"].to_list()) == [1, 2]


def test_ensure_confined_follows_symlinks(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "up").symlink_to(tmp_path, target_is_directory=True)

    ensure_confined(str(tmp_path / "root"), str(tmp_path / "root" / "not_yet" / "t"), what="path")
    with pytest.raises(PathEscapeError, match=r"resolves to .* outside its root"):
        ensure_confined(str(tmp_path / "root"), str(tmp_path / "root" / "up" / "t"), what="path")


# --- the whole way: validate and run through the CLI --------------------------------------------------

CLI_CASES = [
    ("read-csv", {"source": {"table": None, "query": "SELECT * FROM read_csv('/etc/passwd')"}}, "read_csv"),
    ("escape", {"destination": {"table": "../../escaped"}}, "destination.table"),
    ("nul", {"destination": {"table": "bad\x00\x1b[2Jname"}}, "'bad\\x00\\x1b[2Jname'"),
]


@pytest.mark.parametrize(("change", "shown_text"), [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_datacoolie_validate_exits_2_with_the_path_and_no_traceback(
    tmp_path: Path, change: dict[str, Any], shown_text: str
) -> None:
    doc = document(tmp_path, source=change.get("source"), **change.get("destination", {}))
    path = write(tmp_path / "metadata.json", doc)

    result = run_cli("validate", str(path))

    assert result.returncode == 2, result.stderr
    assert f"{path}: dataflows[0]" in result.stderr
    assert shown_text in result.stderr
    assert "Traceback" not in result.stderr
    assert not any(ch in result.stderr + result.stdout for ch in "\x00\x1b")


def test_datacoolie_run_copies_nothing_from_outside(tmp_path: Path) -> None:
    _lake(tmp_path)
    doc = document(tmp_path, source={"table": None, "query": "SELECT * FROM read_csv('/etc/passwd')"})
    path = write(tmp_path / "meta" / "metadata.json", doc)

    result = run_cli("run", "--metadata", str(path))

    assert result.returncode == 2, result.stderr
    assert "table function read_csv() is not allowed" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "lake" / "out").exists()


def test_the_provider_refuses_the_document_as_validate_does(tmp_path: Path) -> None:
    path = write(tmp_path / "metadata.json", document(tmp_path, table="../../escaped"))

    with pytest.raises(MetadataError, match=r"dataflows\[0\]\.destination\.table .*path separator"):
        FileProvider(path).get_dataflows()
    assert json.loads(path.read_text())["dataflows"][0]["destination"]["table"] == "../../escaped"


def test_control_characters_are_exactly_unicode_category_cc() -> None:
    # has_control is a regex over the 65 Cc code points: it must agree with unicodedata everywhere
    import sys
    import unicodedata

    from datacoolie_core.platform.paths import has_control

    disagree = [
        hex(c)
        for c in range(sys.maxunicode + 1)
        if not 0xD800 <= c <= 0xDFFF and has_control(f"a{chr(c)}b") != (unicodedata.category(chr(c)) == "Cc")
    ]
    assert disagree == []


@pytest.mark.parametrize("name", ["%2e%2e", "%2E%2E", ".%2e", "sales%20eu", "a%2Fb"])
@pytest.mark.parametrize(
    "base", ["s3://bucket/lake", "/data/lake", "file:///data/lake"], ids=["s3", "local", "file-url"]
)
@pytest.mark.parametrize("field", ["schema_name", "table"])
def test_percent_escaped_names_are_refused_on_every_storage(name: str, base: str, field: str) -> None:
    lake = {"name": "lake", "format": "delta", "configure": {"base_path": base}}
    destination = {"connection_name": "lake", "schema_name": "sales", "table": "orders"} | {field: name}
    document = {
        "connections": [{"name": "fn", "format": "function"}, lake],
        "dataflows": [{"name": "orders", "source": {"connection_name": "fn", "python_function": "m.f"},
                       "destination": destination}],
    }  # fmt: skip
    errors = validate_document(document).errors
    assert [e.path for e in errors] == [f"dataflows[0].destination.{field}"]
    assert "contains the percent escape" in errors[0].message
