"""docs/ci.md: its GitHub Actions job is the recipe ``tests/dagster/test_ci_recipe.py`` runs."""

from __future__ import annotations

import re

import yaml

from tests.dagster.cli_support import REPOSITORY

RECIPE = REPOSITORY / "deploy" / "ci" / "launch-stage.sh"
DOCS = REPOSITORY / "docs" / "ci.md"
READ_BY_THE_COMMANDS = {"DAGSTER_TOKEN"}
"""Settings ``datacoolie-dagster`` reads itself (the recipe passes its environment on)."""


def test_the_documented_workflow_runs_the_recipe() -> None:
    """docs/ci.md's GitHub Actions job runs ``deploy/ci/launch-stage.sh`` with the settings it reads,
    and the page shows the script as it is in the repository."""
    text = DOCS.read_text()
    workflow = yaml.safe_load(re.search(r"```yaml\n(.*?)```", text, re.S)[1])  # type: ignore[index]
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    runs = [s for s in steps if "run" in s and "launch-stage.sh" in s["run"]]
    assert [s["run"].strip() for s in runs] == ["deploy/ci/launch-stage.sh"]
    read = set(re.findall(r"\$\{?([A-Z_]+)", RECIPE.read_text())) | READ_BY_THE_COMMANDS
    assert set(runs[0]["env"]) <= read
    assert {"JOB", "SHARDS", "DAGSTER_URL", "DAGSTER_TOKEN"} <= set(runs[0]["env"])
    assert RECIPE.read_text() in text
