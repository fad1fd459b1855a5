"""Every ``datacoolie/`` key the Dagster layer writes is defined once, in ``constants.py``."""

from __future__ import annotations

import ast
from pathlib import Path

import datacoolie_dagster
from datacoolie_dagster import constants

PACKAGE = Path(datacoolie_dagster.__file__).parent


def _namespaced_literals(path: Path) -> list[str]:
    """``file:line: 'datacoolie/…'`` for each string literal (f-string parts too) in the namespace."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(constants.NAMESPACE)
    ]


def test_no_module_but_constants_spells_a_datacoolie_key() -> None:
    modules = [p for p in sorted(PACKAGE.rglob("*.py")) if p != PACKAGE / "constants.py"]
    assert len(modules) > 30  # the walk reaches the subpackages
    found = [hit for path in modules for hit in _namespaced_literals(path)]
    assert found == [], "define these in datacoolie_dagster/constants.py and import them:\n" + "\n".join(found)


def test_the_keys_are_distinct() -> None:
    keys = {name: value for name, value in vars(constants).items() if name.isupper() and isinstance(value, str)}
    namespaced = [v for v in keys.values() if v.startswith(constants.NAMESPACE) and v != constants.NAMESPACE]
    assert len(namespaced) == len(set(namespaced))
