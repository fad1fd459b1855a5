"""Peers in benchmark-only virtualenvs: DataCoolie 0.2.0 and dlt, measured, never dependencies of ours.

Each venv (default ``benchmarks/.venv-datacoolie`` and ``benchmarks/.venv-dlt``, git-ignored) gets
the peer plus polars, deltalake and pyarrow, all pinned by our ``constraints.txt``, so every
implementation runs on the same Polars, deltalake and pyarrow builds. DataCoolie is driven only
through its documented interface (the metadata file, ``PolarsEngine``/``LocalPlatform``/
``DataCoolieDriver`` as in its README's quick start); its source (AGPL) is not read or copied. dlt
is driven through its documented Arrow path (``dlt.pipeline`` on the ``filesystem`` destination
with ``table_format="delta"``). When a peer cannot be installed or its libraries differ from ours,
its column is skipped with the reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REQUIREMENT = "datacoolie[polars]==0.2.0"
DLT_REQUIREMENT = "dlt[deltalake,filesystem]==1.31.0"
SHARED = ("polars", "deltalake", "pyarrow")
"""Installed beside DataCoolie at our pinned versions (its ``polars`` extra does not bring deltalake)."""
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_VENV = Path(__file__).resolve().parent / ".venv-datacoolie"
DLT_VENV = Path(__file__).resolve().parent / ".venv-dlt"


class PeerUnavailable(RuntimeError):
    """Why the DataCoolie column is skipped."""


def ensure_peer(venv: Path, requirement: str = REQUIREMENT) -> Path:
    """The venv's python, created and installed on first use; raises :class:`PeerUnavailable`."""
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    wanted = json.dumps([requirement, _versions(Path(sys.executable))])
    if not (stamp.exists() and stamp.read_text() == wanted):
        print(f"installing {requirement} into {venv} (benchmark-only) ...", flush=True)
        _run([sys.executable, "-m", "venv", "--clear", str(venv)], "create the venv")
        install = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        _run([*install, *_pins(requirement), requirement, *SHARED], f"pip install {requirement}")
        stamp.write_text(wanted)
    ours, theirs = _versions(Path(sys.executable)), _versions(python)
    if ours != theirs:
        raise PeerUnavailable(f"library versions differ: ours {ours}, {requirement}'s venv {theirs}")
    return python


def _pins(requirement: str) -> list[str]:
    """Our whole ``constraints.txt`` for DataCoolie; only the shared libraries' versions for dlt.

    dlt's own dependencies (botocore, sqlglot, ...) conflict with some of our pins that it does
    not share with us; what must match is the data path: polars, deltalake, pyarrow.
    """
    if requirement == REQUIREMENT:
        return ["-c", str(ROOT / "constraints.txt")]
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.split("==")[0].strip() in (*SHARED, "polars-runtime-32")]


def _versions(python: Path) -> dict[str, str]:
    code = f"import importlib.metadata as m, json; print(json.dumps({{p: m.version(p) for p in {SHARED!r}}}))"
    return dict(json.loads(_run([str(python), "-c", code], "read library versions")))


def _run(argv: list[str], what: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PeerUnavailable(f"could not {what}: exit {done.returncode}: {done.stderr.strip()[-1500:]}")
    return done.stdout
