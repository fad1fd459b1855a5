"""datacoolie_core never imports dagster, directly or through a dependency."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).parents[1] / "datacoolie_core"


def test_no_dagster_import_statement_in_core() -> None:
    offenders = []
    for file in CORE.rglob("*.py"):
        for node in ast.walk(ast.parse(file.read_text(), str(file))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{file.relative_to(CORE)}: {n}" for n in names if n.split(".")[0].startswith("dagster")]
    assert offenders == []


def test_importing_every_core_module_loads_no_dagster() -> None:
    modules = sorted(
        ".".join(("datacoolie_core", *f.relative_to(CORE).with_suffix("").parts)).removesuffix(".__init__")
        for f in CORE.rglob("*.py")
    )
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0].startswith('dagster')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
