"""A throwaway deployment of the bundled example for the CLI and daemon tests.

The layout mirrors the repository: ``workspace.yaml`` (its ``working_directory: .`` is the project
folder), ``$DAGSTER_HOME/dagster.yaml`` copied from the repository, and the example's ``./data``
(landing files, then Delta tables, state and logs under ``DATACOOLIE_HOME``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from datacoolie_dagster.example.generate import land_batch

REPOSITORY = Path(__file__).parents[2]
BIN = Path(sys.executable).parent
CODE_LOCATION = ["-m", "datacoolie_dagster.definitions"]


@dataclass(frozen=True)
class Deployment:
    project: Path
    """The working directory: ``workspace.yaml`` and the example's ``./data``."""
    home: Path
    """``DAGSTER_HOME``."""

    @property
    def data(self) -> Path:
        return self.project / "data"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DATACOOLIE_", "DAGSTER_"))}
        return env | {"DAGSTER_HOME": str(self.home), "DATACOOLIE_HOME": str(self.data)}

    def run(self, command: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run a Dagster CLI command in the project folder; never raises on a non-zero exit."""
        return subprocess.run(
            [str(BIN / command), *args],
            cwd=self.project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def deploy(root: Path) -> Deployment:
    """Lay out the example deployment under ``root`` with batch 1 landed."""
    project, home = root / "project", root / "dagster_home"
    project.mkdir()
    home.mkdir()
    shutil.copyfile(REPOSITORY / "workspace.yaml", project / "workspace.yaml")
    shutil.copyfile(REPOSITORY / "dagster.yaml", home / "dagster.yaml")
    # create the SQLite storages once: processes starting side by side on an empty DAGSTER_HOME race
    # on its schema ("alembic_version has more than one head")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.get_runs(limit=1)
    land_batch(project / "data", 1)
    return Deployment(project, home)


def explain(result: subprocess.CompletedProcess[str]) -> str:
    """The tail of a command's output, for an assertion message."""
    return f"exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
