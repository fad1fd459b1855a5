"""Hypothesis: random mutations of a valid document only ever produce MetadataErrors with a path."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from datacoolie_core import FileProvider, MetadataError
from datacoolie_core.metadata import validate_document
from tests.conftest import METADATA_FIXTURES

BASE = json.loads((METADATA_FIXTURES / "full.json").read_text())

ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["", "[", "[1, 2]", '{"a": 1}', "yes", "a,b", "delta", "scd2", "(?=x)"]),
    st.lists(st.text(max_size=4), max_size=3),
    st.dictionaries(st.text(max_size=6), st.integers(), max_size=2),
)


def _containers(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of every dict and list in the document (places a mutation can happen)."""
    found = [path] if isinstance(node, (dict, list)) else []
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in children:
        found += _containers(value, (*path, key))
    return found


CONTAINERS = _containers(BASE)


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    """The node at ``path``, or ``None`` when an earlier mutation removed it."""
    for part in path:
        try:
            doc = doc[part]
        except (KeyError, IndexError, TypeError):
            return None
    return doc


@st.composite
def mutated_documents(draw: st.DrawFn) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        container = _get(doc, draw(st.sampled_from(CONTAINERS)))
        if not isinstance(container, (dict, list)) or not container:
            continue
        keys = list(container) if isinstance(container, dict) else list(range(len(container)))
        key = draw(st.sampled_from(keys))
        action = draw(st.sampled_from(["drop", "rename", "retype"]))
        if action == "drop":
            del container[key]
        elif action == "rename" and isinstance(container, dict):
            suffix = draw(st.sampled_from(["s", "_", "x", ""]))
            new = key[:-1] if suffix == "" and len(key) > 1 else key + suffix
            container[new] = container.pop(key)
        else:
            container[key] = draw(ODD_VALUES)
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_documents())
def test_mutations_never_raise_anything_but_issues_with_paths(doc: dict[str, Any]) -> None:
    result = validate_document(doc, file="mutated.json")  # never raises for bad input
    for issue in result.issues:
        head = re.split(r"[.\[]", issue.path, maxsplit=1)[0]
        assert issue.path == "$" or head in doc or issue.path.startswith("["), issue
        assert issue.message


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated_documents())
def test_file_provider_raises_only_metadata_errors(tmp_path: Path, doc: dict[str, Any]) -> None:
    path = tmp_path / "mutated.json"
    path.write_text(json.dumps(doc, allow_nan=True))
    raised: list[MetadataError] = []
    try:
        FileProvider(path).initialize()
    except MetadataError as e:  # any other exception fails the test
        raised.append(e)
    for error in raised:
        assert error.issues
        assert all(str(i).startswith(f"{path}: ") and i.path for i in error.issues)
