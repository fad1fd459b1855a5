"""Documents and a CLI runner shared by the adversarial tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from datacoolie_core.metadata import validate_document

REPO = Path(__file__).parents[3]
CLI = [sys.executable, "-c", "import sys; from datacoolie_core.cli import main; sys.exit(main(sys.argv[1:]))"]


def document(root: Path, *, source: dict[str, Any] | None = None, **destination: Any) -> dict[str, Any]:
    """One dataflow from lakehouse ``lake`` (``<root>/lake``) to itself; ``source``/``destination`` override."""
    return {
        "connections": [
            {
                "name": "lake",
                "connection_type": "lakehouse",
                "format": "delta",
                "configure": {"base_path": str(root / "lake")},
            },
            {"name": "landing", "format": "csv", "configure": {"base_path": str(root / "landing")}},
        ],
        "dataflows": [
            {
                "name": "flow",
                "source": {"connection_name": "lake", "table": "raw"} | (source or {}),
                "destination": {"connection_name": "lake", "table": "out"} | destination,
            }
        ],
    }


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def errors(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """``(JSON path, message)`` of every validation error of ``doc``."""
    return [(i.path, i.message) for i in validate_document(doc, file="metadata.json").errors]


def run_cli(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *argv], cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False)
