"""A small file cannot exhaust the machine: alias bombs, deep nesting and huge files are refused.

Each refusal is a ``MetadataError`` naming the file and where in it; through the CLI it is exit 2,
no traceback, and the child's peak memory stays small (measured, not timed).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datacoolie_core import MetadataError
from datacoolie_core.input_bounds import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES, json_depth_excess, loads_bounded
from datacoolie_core.metadata import read_metadata_file, validate_document
from datacoolie_core.metadata.loader import _parse_yaml as parse_yaml
from datacoolie_core.models.coerce import describe
from tests.core.adversarial.support import CLI, REPO

BOMB = r"the document expands to more than 1,000,000 nodes through its aliases \(an alias bomb\?\)"
DEEP = rf"the document nests deeper than {MAX_DEPTH} levels"


def alias_bomb(levels: int, fanout: int = 9) -> str:
    """The adversary's document: each level lists the previous one ``fanout`` times."""
    lines = [f"a0: &a0 [{','.join(['lol'] * fanout)}]"]
    lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * fanout)}]" for i in range(1, levels)]
    return "\n".join([*lines, f"connections: [*a{levels - 1}]", ""])


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- YAML aliases ----------------------------------------------------------------------------------


def test_the_22_level_alias_bomb_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "bomb.yaml", alias_bomb(22))
    assert path.stat().st_size < 1500  # about 1 KB

    with pytest.raises(MetadataError, match=rf"bomb\.yaml: \$: invalid YAML at line \d+, column \d+: {BOMB}"):
        read_metadata_file(path)


def _chain(first: str, levels: int, body: str) -> str:
    """``first`` anchored as ``n0``, then ``levels`` levels, each ``body`` formatted with the previous anchor."""
    lines = [f"n0: &n0 {first}"]
    lines += [f"n{i}: &n{i} {body.format(prev=f'*n{i - 1}')}" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


YAML_BOMBS = {
    "mappings": _chain("{a: 1, b: 2, c: 3, d: 4}", 12, "{{p: {prev}, q: {prev}, r: {prev}, s: {prev}}}"),
    "merge-keys": _chain("{k0: 1, k1: 2, k2: 3, k3: 4}", 9, "[" + ", ".join(["{{<<: {prev}, z: 0}}"] * 8) + "]"),
    "alias-as-key": _chain(
        "[" + ", ".join("x" * 10) + "]", 7, "{{? {prev} : " + "[" + ", ".join(["{prev}"] * 9) + "]}}"
    ),
    "block-style": _chain("[1, 2, 3, 4, 5, 6, 7, 8]", 8, "\n" + "\n".join(["  - {prev}"] * 8)),
}


@pytest.mark.parametrize("text", YAML_BOMBS.values(), ids=YAML_BOMBS.keys())
def test_other_bomb_shapes_are_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(MetadataError, match=BOMB):
        read_metadata_file(_write(tmp_path, "bomb.yaml", text))


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MetadataError, match=r"an alias refers to a node that contains it \(recursive\)"):
        read_metadata_file(_write(tmp_path, "loop.yaml", "a: &a [1, *a]\n"))


def test_ordinary_anchors_still_work(tmp_path: Path) -> None:
    text = "base: &base {format: csv}\nconnections:\n  - name: one\n    <<: *base\n  - name: two\n    <<: *base\n"

    assert read_metadata_file(_write(tmp_path, "ok.yaml", text))["connections"] == [
        {"name": "one", "format": "csv"},
        {"name": "two", "format": "csv"},
    ]


@settings(max_examples=60, deadline=None)
@given(levels=st.integers(1, 12), fanout=st.integers(1, 12))
def test_aliases_are_refused_exactly_when_the_expanded_document_is_over_budget(levels: int, fanout: int) -> None:
    text = alias_bomb(levels, fanout)
    # nodes: level i is a sequence of fanout copies of level i-1; a0 holds fanout scalars
    sizes = [1 + fanout]
    for _ in range(1, levels):
        sizes.append(1 + fanout * sizes[-1])
    expanded = 1 + sum(1 + s for s in sizes) + 1 + (1 + sizes[-1])  # root + keys/values + connections list
    if expanded > MAX_NODES:
        with pytest.raises(MetadataError, match="through its aliases"):
            parse_yaml(text, "bomb.yaml")
    else:
        assert len(parse_yaml(text, "bomb.yaml")) == levels + 1


# --- nesting depth -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("deep.json", '{"connections": ' + "[" * 100_000 + "]" * 100_000 + "}", r"at line 1, column 80"),
        ("deep.yaml", "connections: " + "[" * 100_000 + "]" * 100_000 + "\n", r"invalid YAML at line 1, column 77"),
        (
            "deep-block.yaml",
            "".join(f"{'  ' * i}k{i}:\n" for i in range(200)) + f"{'  ' * 200}leaf\n",
            r"line 64, column 127",
        ),
        ("deep-objects.json", '{"a":' * 5000 + "1" + "}" * 5000, r"at line 1, column 321"),
    ],
    ids=["json-lists", "yaml-flow", "yaml-block", "json-objects"],
)
def test_a_document_nested_too_deep_is_refused(tmp_path: Path, name: str, text: str, where: str) -> None:
    with pytest.raises(MetadataError, match=rf"{DEEP}") as caught:
        read_metadata_file(_write(tmp_path, name, text))
    assert caught.value.issues[0].path == "$"
    assert re.search(where, str(caught.value)), str(caught.value)


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH])
def test_nesting_up_to_the_limit_parses(tmp_path: Path, depth: int) -> None:
    nested = "[" * (depth - 1) + "]" * (depth - 1)
    assert read_metadata_file(_write(tmp_path, "ok.json", '{"x": ' + nested + "}"))["x"] is not None
    assert read_metadata_file(_write(tmp_path, "ok.yaml", "x: " + nested + "\n"))["x"] is not None


def test_one_level_over_the_limit_is_refused(tmp_path: Path) -> None:
    nested = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    for name in ("over.json", "over.yaml"):
        text = '{"x": ' + nested + "}" if name.endswith("json") else "x: " + nested + "\n"
        with pytest.raises(MetadataError, match=DEEP):
            read_metadata_file(_write(tmp_path, name, text))


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"sql": "[" * 10_000 + "{" * 10_000, "escaped": '\\"[[[['})
    assert json_depth_excess(text) is None
    assert json.loads(text)["sql"].startswith("[[[")


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.integers() | st.text(alphabet='[]{}"\\ab'), lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\', max_size=3), kids, max_size=3), max_leaves=30))  # fmt: skip
def test_the_depth_scan_agrees_with_the_real_depth(value: object) -> None:
    def depth(v: object) -> int:
        children = list(v.values()) if isinstance(v, dict) else v if isinstance(v, list) else []
        return (1 + max((depth(c) for c in children), default=0)) if isinstance(v, (dict, list)) else 0

    text = json.dumps(value)
    real = depth(value)
    assert json_depth_excess(text, real) is None
    assert real == 0 or json_depth_excess(text, real - 1) is not None


def test_json_text_inside_fields_is_depth_checked_too() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    doc = {
        "connections": [{"name": "c", "format": "csv", "configure": '{"read_options": ' + deep + "}"}],
        "dataflows": [
            {
                "name": "x",
                "source": {"connection_name": "c", "table": "t", "watermark_columns": deep},
                "destination": {"connection_name": "c", "table": "o"},
            }
        ],
    }

    found = [(i.path, i.message) for i in validate_document(doc).errors]

    assert found == [
        ("connections[0].configure", "the JSON text nests deeper than 64 levels (at column 81)"),
        ("dataflows[0].source.watermark_columns", "the JSON text nests deeper than 64 levels (at column 65)"),
    ]
    with pytest.raises(ValueError, match="nests deeper than 64 levels"):
        loads_bounded(deep)


# --- size -----------------------------------------------------------------------------------------------


def test_a_file_over_the_size_limit_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: costs no disk

    with pytest.raises(MetadataError, match=r"huge\.json: \$: the metadata file is larger than 50 MiB"):
        read_metadata_file(path)


def test_an_endless_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MetadataError, match=r"larger than 50 MiB"):
        read_metadata_file(Path("/dev/zero"))


# --- describe never expands ------------------------------------------------------------------------------


def test_describe_of_a_huge_shared_structure_is_short() -> None:
    value: object = ["lol"] * 9
    for _ in range(30):
        value = [value] * 9  # 9**31 leaves once expanded

    text = describe(value)

    assert text.startswith("list [[[...], [...], [...], [...], ...]")
    assert len(text) <= 70


def test_an_error_about_a_big_value_is_short(tmp_path: Path) -> None:
    big = {"k": [list(range(1000))] * 1000}
    doc = {"connections": [{"name": "c", "format": "csv", "is_active": big}]}

    (issue,) = validate_document(doc).errors

    assert issue.path == "connections[0].is_active"
    assert len(issue.message) < 200


# --- the whole way: the CLI -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("bomb.yaml", alias_bomb(22)),
        ("deep.json", '{"dataflows": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        ("deep.yaml", "dataflows: " + "[" * 100_000 + "]" * 100_000 + "\n"),
    ],
    ids=["alias-bomb", "deep-json", "deep-yaml"],
)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_the_cli_refuses_with_exit_2_and_little_memory(tmp_path: Path, name: str, text: str, command: str) -> None:
    path = _write(tmp_path, name, text)
    argv = [str(path)] if command == "validate" else ["--metadata", str(path), "--state-path", str(tmp_path / "s")]

    result = subprocess.run(
        [sys.executable, "-c", _OWN_PEAK_RSS, *CLI, command, *argv],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip

    assert result.returncode == 2, result.stderr
    assert f"{path}: $: " in result.stderr
    assert "Traceback" not in result.stderr
    peak_kib = int(result.stdout.strip().splitlines()[-1])
    assert peak_kib < 600 * 1024, f"peak RSS {peak_kib} KiB"


_OWN_PEAK_RSS = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""Runs the CLI and prints its own peak RSS (KiB). RUSAGE_CHILDREN of the test process would be the
largest child of the whole session, and a child forked straight from pytest starts its peak at
pytest's size: a small launcher in between measures the CLI alone."""
