"""``configure.<name>`` sections checked by plug-ins: real paths, file and object named, loaded lazily."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core import FileProvider, MetadataError, MetadataIssue
from datacoolie_core.metadata import validate_document
from datacoolie_core.metadata.sections import (
    SECTIONS_GROUP,
    Owner,
    SectionRegistry,
    check_sections,
    section_path,
)
from tests.conftest import write_json

Doc = dict[str, Any]


def audit(value: Any, *, owner: Owner) -> Iterable[MetadataIssue]:
    """A plug-in reading ``configure.audit``: ``{"level": "low" | "high"}`` on dataflows only."""
    if owner != "dataflow":
        return [MetadataIssue("", "audit settings belong on a dataflow", "warning")]
    if not isinstance(value, dict):
        return [MetadataIssue("", "expected an object")]
    unknown = [k for k in value if k != "level"]
    issues = [MetadataIssue(k, f"unknown key '{k}'; did you mean 'level'?") for k in unknown]
    if value.get("level", "low") not in ("low", "high"):
        issues.append(MetadataIssue("level", "expected 'low' or 'high'", "warning"))
    return issues


SECTIONS = {"audit": audit}


def test_a_section_error_has_the_real_path_and_makes_the_dataflow_invalid(document: Doc) -> None:
    document["dataflows"][0]["configure"] = {"audit": {"levl": "high"}}
    result = validate_document(document, file="meta.json", sections=SECTIONS)
    assert [str(i) for i in result.errors] == [
        "meta.json: dataflows[0].configure.audit.levl (dataflow 'orders'): unknown key 'levl'; did you mean 'level'?"
    ]
    assert [d.name for d in result.dataflows] == ["customers"]
    assert result.invalid_dataflows == ("dataflows[0] (dataflow 'orders')",)


def test_a_section_warning_keeps_the_dataflow(document: Doc) -> None:
    document["dataflows"][0]["configure"] = {"audit": {"level": "extreme"}}
    result = validate_document(document, file="meta.json", sections=SECTIONS)
    assert [str(i) for i in result.warnings] == [
        "meta.json: warning: dataflows[0].configure.audit.level (dataflow 'orders'): expected 'low' or 'high'"
    ]
    assert [d.name for d in result.dataflows] == ["orders", "customers"]


def test_a_connection_section_is_checked_with_its_owner(document: Doc) -> None:
    document["connections"][0].setdefault("configure", {})["audit"] = {"level": "low"}
    result = validate_document(document, sections=SECTIONS)
    assert [(i.path, i.message) for i in result.warnings] == [
        ("connections[0].configure.audit", "audit settings belong on a dataflow")
    ]


def test_check_sections_gives_full_paths_and_an_unregistered_section_still_loads(tmp_path: Path, document: Doc) -> None:
    document["dataflows"][0]["configure"] = {"audit": []}
    path = write_json(tmp_path / "pipeline.json", document)
    registry = SectionRegistry(SECTIONS)
    issues = check_sections(document["dataflows"][0]["configure"], owner="dataflow", path="x", registry=registry)
    assert [(i.path, i.message) for i in issues] == [("x.audit", "expected an object")]
    # FileProvider sees only installed plug-ins: without one for 'audit' the file loads, as in DataCoolie
    assert [d.name for d in FileProvider(path).get_dataflows()] == ["orders", "customers"]


def test_without_a_plug_in_a_section_is_not_checked(document: Doc) -> None:
    document["dataflows"][0]["configure"] = {"audit": {"anything": 1}, "notes": "free text"}
    assert (
        check_sections(document["dataflows"][0]["configure"], owner="dataflow", path="p", registry=SectionRegistry({}))
        == []
    )
    assert validate_document(document).issues == ()  # fmt: skip


def test_a_section_name_close_to_a_plug_in_is_a_warning() -> None:
    issues = check_sections(
        {"audt": {}}, owner="dataflow", path="dataflows[2].configure", registry=SectionRegistry(SECTIONS)
    )
    assert [(i.path, i.severity, i.message) for i in issues] == [
        ("dataflows[2].configure.audt", "warning", "unknown configure key 'audt' is read by no plug-in; did you mean 'audit'?")
    ]  # fmt: skip


def test_a_plug_in_that_cannot_load_leaves_its_section_unchecked_and_says_so() -> None:
    entry = EntryPoint(name="audit", value="no_such_module_xyz:check", group=SECTIONS_GROUP)
    (issue,) = check_sections({"audit": {}}, owner="dataflow", path="c", registry=SectionRegistry({"audit": entry}))
    assert (issue.path, issue.severity) == ("c.audit", "warning")
    assert issue.message.startswith(
        "not checked: plug-in no_such_module_xyz:check cannot be loaded: ModuleNotFoundError"
    )


@pytest.mark.parametrize(
    ("relative", "path"),
    [("", "b"), ("$", "b"), ("a.c", "b.a.c"), ("[0]", "b[0]"), ("['x y']", "b['x y']")],
    ids=["empty", "root", "nested", "index", "quoted"],
)
def test_section_paths_join(relative: str, path: str) -> None:
    assert section_path("b", relative) == path


def test_a_plug_in_is_imported_only_for_a_document_that_has_its_section(tmp_path: Path, document: Doc) -> None:
    plain = write_json(tmp_path / "plain.json", document)
    document["dataflows"][0]["configure"] = {"dagster": {"sensor": False}}
    with_section = write_json(tmp_path / "dagster.json", document)
    code = (
        "import sys\n"
        "from datacoolie_core.cli import main\n"
        "code = main(['validate', sys.argv[1], '--strict'])\n"
        "print(code, 'datacoolie_dagster.location.dataflow_settings' in sys.modules, 'dagster' in sys.modules)\n"
    )

    def run(path: Path) -> str:
        done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
        return done.stdout.strip().splitlines()[-1]

    assert run(plain) == "0 False False"
    assert run(with_section) == "0 True False"  # the check is pure pydantic: no Dagster import either


def test_a_metadata_error_from_a_section_pickles(document: Doc) -> None:
    document["dataflows"][0]["configure"] = {"audit": {"levl": 1}}
    result = validate_document(document, file="meta.json", sections=SECTIONS)
    with pytest.raises(MetadataError, match=r"dataflows\[0\]\.configure\.audit\.levl"):
        result.raise_on_errors()
