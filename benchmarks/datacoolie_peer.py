"""DataCoolie 0.2.0 in a benchmark-only virtualenv: a peer to measure, never a dependency of ours.

The venv (default ``benchmarks/.venv-datacoolie``, git-ignored) gets ``datacoolie[polars]==0.2.0``
plus deltalake and pyarrow, all pinned by our ``constraints.txt``, so both engines run on the same
Polars, deltalake and pyarrow builds. DataCoolie is driven only through its documented interface
(the metadata file, ``PolarsEngine``/``LocalPlatform``/``DataCoolieDriver`` as in its README's quick
start); its source (AGPL) is not read or copied. When it cannot be installed or its libraries differ
from ours, the column is skipped with the reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REQUIREMENT = "datacoolie[polars]==0.2.0"
SHARED = ("polars", "deltalake", "pyarrow")
"""Installed beside DataCoolie at our pinned versions (its ``polars`` extra does not bring deltalake)."""
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_VENV = Path(__file__).resolve().parent / ".venv-datacoolie"


class PeerUnavailable(RuntimeError):
    """Why the DataCoolie column is skipped."""


def ensure_peer(venv: Path) -> Path:
    """The venv's python, created and installed on first use; raises :class:`PeerUnavailable`."""
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    wanted = json.dumps([REQUIREMENT, _versions(Path(sys.executable))])
    if not (stamp.exists() and stamp.read_text() == wanted):
        print(f"installing {REQUIREMENT} into {venv} (benchmark-only) ...", flush=True)
        _run([sys.executable, "-m", "venv", "--clear", str(venv)], "create the venv")
        install = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        _run([*install, "-c", str(ROOT / "constraints.txt"), REQUIREMENT, *SHARED], f"pip install {REQUIREMENT}")
        stamp.write_text(wanted)
    ours, theirs = _versions(Path(sys.executable)), _versions(python)
    if ours != theirs:
        raise PeerUnavailable(f"library versions differ: ours {ours}, DataCoolie's venv {theirs}")
    return python


def _versions(python: Path) -> dict[str, str]:
    code = f"import importlib.metadata as m, json; print(json.dumps({{p: m.version(p) for p in {SHARED!r}}}))"
    return dict(json.loads(_run([str(python), "-c", code], "read library versions")))


def _run(argv: list[str], what: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PeerUnavailable(f"could not {what}: exit {done.returncode}: {done.stderr.strip()[-1500:]}")
    return done.stdout
