"""The repository is a ``dg`` project: ``dg check defs`` and ``dg list defs`` work from its root.

``[tool.dg]`` in pyproject.toml points ``dg`` at the code location ``workspace.yaml`` loads for
``dagster dev`` (``datacoolie_dagster.definitions``, the bundled example by default).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).parents[2]
DG = Path(sys.executable).parent / "dg"


def dg(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``dg <args>`` from the repository root, with this checkout's packages first on the path."""
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join([str(REPOSITORY), os.environ.get("PYTHONPATH", "")]),
        "DAGSTER_HOME": str(home),
        "DATACOOLIE_HOME": str(home / "data"),  # the example's state and logs, if anything wrote them
    }
    env.pop("DATACOOLIE_METADATA", None)  # the bundled example
    return subprocess.run(
        [str(DG), *args], cwd=REPOSITORY, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.slow
def test_dg_check_defs_succeeds_from_the_repository_root(tmp_path: Path) -> None:
    checked = dg("check", "defs", home=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "All definitions loaded successfully" in checked.stdout + checked.stderr


@pytest.mark.slow
def test_dg_list_defs_lists_the_example_tables_jobs_and_sensors(tmp_path: Path) -> None:
    listed = dg("list", "defs", "--json", home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    defs = json.loads(listed.stdout)
    assets = {a["asset_key"] for a in defs["assets"]}
    assert {"bronze/crm/customers", "bronze/sales/orders"} <= assets
    assert "datacoolie_landing2bronze" in {j["name"] for j in defs["jobs"]}
    assert "datacoolie_retry_sensor" in {s["name"] for s in defs["sensors"]}
