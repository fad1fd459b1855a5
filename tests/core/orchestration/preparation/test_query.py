"""``source.query`` references: shape classification and root-confined file reads (DataCoolie O-20, O-21)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from datacoolie_core.errors import MetadataError, TerminalError
from datacoolie_core.orchestration.preparation import QueryFileError, QueryRoots, classify_query, resolve_query


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        (None, "inline"),
        ("", "inline"),
        ("   ", "inline"),
        ("SELECT * FROM orders", "inline"),
        ("-- orders.sql\nSELECT 1", "inline"),
        ("/* orders.sql */ SELECT 1", "inline"),
        ("select * from t where f = 'x.sql'", "inline"),
        ("orders.sql", "shorthand"),
        ("orders/incremental.sql", "shorthand"),
        ("sql\\orders\\incremental.SQL", "shorthand"),
        ("sql/orders-v2.0/daily_load.sql", "shorthand"),
        ("artifact:/sql/orders.sql", "artifact"),
        ("artifact:/queries/my orders.txt", "artifact"),
    ],
    ids=[
        "none", "empty", "blank", "sql", "line-comment", "block-comment", "sql-mentioning-file",
        "file", "nested", "backslashes-upper-case", "dots-and-dashes", "artifact", "artifact-any-name",
    ],
)  # fmt: skip
def test_classify(query: str | None, kind: str) -> None:
    assert classify_query(query) == kind


@pytest.mark.parametrize(
    "query",
    [
        "/etc/orders.sql",
        "C:\\sql\\orders.sql",
        "C:/sql/orders.sql",
        "\\\\server\\share\\orders.sql",
        "s3://bucket/sql/orders.sql",
        "file:///sql/orders.sql",
        "orders.sql?version=2",
        "orders.sql#latest",
    ],
    ids=["posix-absolute", "drive", "drive-slash", "unc", "s3-uri", "file-uri", "query-string", "fragment"],
)
def test_classify_rejects_non_relative_file_references(query: str) -> None:
    with pytest.raises(QueryFileError, match=r"only root-relative \.sql references are allowed"):
        classify_query(query)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_inline_sql_is_returned_unchanged(tmp_path: Path) -> None:
    query = "SELECT *\nFROM orders  -- trailing"
    assert resolve_query(query, QueryRoots(sql_base_paths=(tmp_path,))) is query


@pytest.mark.parametrize(
    "reference", ["orders/incremental.sql", "sql/orders/incremental.sql"], ids=["root-relative", "qualified"]
)
def test_single_root_accepts_relative_and_qualified_forms(tmp_path: Path, reference: str) -> None:
    write(tmp_path / "sql" / "orders" / "incremental.sql", "SELECT 1 AS one")
    assert resolve_query(reference, QueryRoots(sql_base_paths=(tmp_path / "sql",))) == "SELECT 1 AS one"


def test_single_root_refuses_to_guess_between_two_existing_files(tmp_path: Path) -> None:
    write(tmp_path / "sql" / "orders.sql", "SELECT 'qualified'")
    write(tmp_path / "sql" / "sql" / "orders.sql", "SELECT 'nested'")
    with pytest.raises(QueryFileError, match="ambiguous"):
        resolve_query("sql/orders.sql", QueryRoots(sql_base_paths=(tmp_path / "sql",)))


def test_several_roots_are_selected_by_their_folder_name(tmp_path: Path) -> None:
    write(tmp_path / "a" / "sql1" / "orders.sql", "SELECT 'one'")
    write(tmp_path / "b" / "sql2" / "orders.sql", "SELECT 'two'")
    roots = QueryRoots(sql_base_paths=(tmp_path / "a" / "sql1", tmp_path / "b" / "sql2"))

    assert resolve_query("sql1/orders.sql", roots) == "SELECT 'one'"
    assert resolve_query("sql2/orders.sql", roots) == "SELECT 'two'"
    with pytest.raises(QueryFileError, match=r"must name one of them \(sql1, sql2\)"):
        resolve_query("orders.sql", roots)
    with pytest.raises(QueryFileError, match=r"must name one of them"):
        resolve_query("sql3/orders.sql", roots)


def test_several_roots_with_the_same_folder_name_are_ambiguous(tmp_path: Path) -> None:
    write(tmp_path / "a" / "sql" / "orders.sql", "SELECT 1")
    roots = QueryRoots(sql_base_paths=(tmp_path / "a" / "sql", tmp_path / "b" / "sql"))
    with pytest.raises(QueryFileError, match="several SQL roots end in folder 'sql'"):
        resolve_query("sql/orders.sql", roots)


def test_without_sql_roots_a_shorthand_is_the_full_path_under_the_artifact(tmp_path: Path) -> None:
    write(tmp_path / "artifact" / "sql" / "orders.sql", "SELECT 'artifact'")
    assert resolve_query("sql/orders.sql", QueryRoots(artifact_base_path=tmp_path / "artifact")) == "SELECT 'artifact'"


def test_artifact_form_reads_any_file_name_under_the_artifact_root(tmp_path: Path) -> None:
    write(tmp_path / "artifact" / "queries" / "my orders.txt", "SELECT 'spaces'")
    write(tmp_path / "sql" / "queries" / "my orders.txt", "SELECT 'wrong root'")
    roots = QueryRoots(sql_base_paths=(tmp_path / "sql",), artifact_base_path=tmp_path / "artifact")
    assert resolve_query("artifact:/queries/my orders.txt", roots) == "SELECT 'spaces'"


def test_artifact_form_needs_the_artifact_root(tmp_path: Path) -> None:
    with pytest.raises(QueryFileError, match="artifact:/ references need artifact_base_path"):
        resolve_query("artifact:/sql/orders.sql", QueryRoots(sql_base_paths=(tmp_path,)))


def test_no_root_at_all_is_an_error() -> None:
    with pytest.raises(QueryFileError, match="no sql_base_path or artifact_base_path is configured"):
        resolve_query("orders.sql", QueryRoots())


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("../outside.sql", "'..' segments are not allowed"),
        ("sql/../../outside.sql", "'..' segments are not allowed"),
        ("orders\\..\\..\\outside.sql", "'..' segments are not allowed"),
        ("artifact:/../outside.sql", "'..' segments are not allowed"),
        ("artifact://outside.sql", "must be relative"),
        ("artifact:/C:/outside.sql", "must be relative"),
        ("artifact:/", "must be relative"),
    ],
    ids=["parent", "nested-parent", "backslash-parent", "artifact-parent", "artifact-absolute", "artifact-drive",
         "artifact-empty"],
)  # fmt: skip
def test_references_never_escape_their_root(tmp_path: Path, reference: str, message: str) -> None:
    write(tmp_path / "outside.sql", "SELECT 'escaped'")
    roots = QueryRoots(sql_base_paths=(tmp_path / "root" / "sql",), artifact_base_path=tmp_path / "root")
    (tmp_path / "root" / "sql").mkdir(parents=True)
    with pytest.raises(QueryFileError, match=message):
        resolve_query(reference, roots)


def test_a_symlink_out_of_the_root_is_rejected(tmp_path: Path) -> None:
    outside = write(tmp_path / "private" / "secret.sql", "SELECT 'escaped'")
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "orders.sql").symlink_to(outside)
    (tmp_path / "sql" / "linked").symlink_to(outside.parent, target_is_directory=True)
    roots = QueryRoots(sql_base_paths=(tmp_path / "sql",))

    for reference in ("orders.sql", "linked/secret.sql"):
        with pytest.raises(QueryFileError, match="resolves outside its root"):
            resolve_query(reference, roots)


def test_a_symlink_inside_the_root_is_followed(tmp_path: Path) -> None:
    target = write(tmp_path / "sql" / "v2" / "orders.sql", "SELECT 'v2'")
    (tmp_path / "sql" / "orders.sql").symlink_to(target)
    assert resolve_query("orders.sql", QueryRoots(sql_base_paths=(tmp_path / "sql",))) == "SELECT 'v2'"


def test_a_missing_file_lists_the_roots_searched(tmp_path: Path) -> None:
    roots = QueryRoots(sql_base_paths=(tmp_path / "a" / "sql1", tmp_path / "b" / "sql2"))
    with pytest.raises(QueryFileError, match="file not found") as caught:
        resolve_query("sql2/orders.sql", roots)
    assert str(tmp_path / "a" / "sql1") in str(caught.value)
    assert str(tmp_path / "b" / "sql2") in str(caught.value)


@pytest.mark.parametrize("content", ["", "  \n\t\n"], ids=["empty", "whitespace"])
def test_an_empty_file_is_an_error(tmp_path: Path, content: str) -> None:
    write(tmp_path / "sql" / "orders.sql", content)
    with pytest.raises(QueryFileError, match="is empty"):
        resolve_query("orders.sql", QueryRoots(sql_base_paths=(tmp_path / "sql",)))


def test_query_file_error_is_terminal_metadata_and_pickles() -> None:
    error = QueryFileError("file not found", reference="orders.sql", dataflow="orders")
    assert isinstance(error, MetadataError)
    assert isinstance(error, TerminalError)
    assert "source.query (dataflow 'orders'): query file reference 'orders.sql': file not found" in str(error)
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy)) == (QueryFileError, str(error))
