"""``./make.sh ui``: ``dagster dev`` on the project's own instance, and the variables the docs name."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from tests.support.servers import free_port

REPOSITORY = Path(__file__).parents[2]
VENV = Path(sys.executable).parent.parent
PROJECT_FILES = ("make.sh", "dagster.yaml", "workspace.yaml", "pyproject.toml", "constraints.txt")
UI_QUERY = """{ instance { info runQueueConfig { maxConcurrentRuns } poolConfig { poolGranularity defaultPoolLimit } }
  workspaceOrError { ... on Workspace { locationEntries { name loadStatus
    locationOrLoadError { __typename ... on PythonError { message } } } } } }"""


def test_every_variable_the_docs_name_is_one_the_code_reads() -> None:
    documents = [REPOSITORY / name for name in ("README.md", "workspace.yaml", "make.sh", "Dockerfile")]
    documents += sorted((REPOSITORY / "docs").rglob("*.md"))
    # a trailing `_` is a prefix (DATACOOLIE_PG_*), spelled out where it is read
    named = {v for doc in documents for v in re.findall(r"\bDATACOOLIE_[A-Z_]*[A-Z]\b", doc.read_text())}
    sources = [*(REPOSITORY / "datacoolie_core").rglob("*.py"), *(REPOSITORY / "datacoolie_dagster").rglob("*.py")]
    code = "\n".join(path.read_text() for path in sources)
    configs = [*REPOSITORY.glob("dagster*.yaml"), *REPOSITORY.glob("deploy/**/*.yaml")]  # deploy/: docs/deployment.md
    instance_configs = "\n".join(path.read_text() for path in configs)
    read = set(re.findall(r"""(?:environ\.get|environ\[|getenv)\(?\s*["'](DATACOOLIE_[A-Z_]+)["']""", code))
    read |= set(re.findall(r"""^\w+ = ["'](DATACOOLIE_[A-Z_]+)["']""", code, re.M))  # ENV_VAR = "..." constants
    read |= set(re.findall(r"\benv: (DATACOOLIE_[A-Z_]+)", instance_configs))  # read by Dagster
    assert {"DATACOOLIE_METADATA", "DATACOOLIE_HOME"} <= named
    assert named - read == set()


def query(port: int) -> dict[str, Any] | None:
    """The instance and code locations as the UI's GraphQL serves them, ``None`` until the location has loaded."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": UI_QUERY}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            data = json.loads(response.read())["data"]
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None
    entries = data["workspaceOrError"].get("locationEntries", [])
    return data if entries and all(e["loadStatus"] == "LOADED" for e in entries) else None


@pytest.mark.slow
def test_make_ui_serves_the_project_instance_with_our_settings(tmp_path: Path) -> None:
    # with a stale install make.sh would reinstall, the clone below as the editable package: refuse
    stamps = [p.stat().st_mtime for p in VENV.glob(".installed-*")]
    sources = max((REPOSITORY / name).stat().st_mtime for name in ("pyproject.toml", "constraints.txt"))
    if not stamps or max(stamps) <= sources:
        pytest.fail(f"{VENV} is older than pyproject.toml/constraints.txt: run ./make.sh install first")
    project = tmp_path / "clone"
    project.mkdir()
    for name in PROJECT_FILES:  # copy2 keeps the times: the venv's install stamp stays newer, no reinstall
        shutil.copy2(REPOSITORY / name, project / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "DATACOOLIE_"))}
    env |= {"VENV": str(VENV), "DATACOOLIE_HOME": str(tmp_path / "data")}
    port = free_port()
    log = (tmp_path / "ui.log").open("w")
    process = subprocess.Popen(
        ["bash", "make.sh", "ui", "-p", str(port)], cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        served = None
        while served is None and process.poll() is None and time.monotonic() < deadline:
            served = query(port)
            time.sleep(0.5) if served is None else None
        output = (tmp_path / "ui.log").read_text()
        assert served is not None, f"the UI never served (exit {process.poll()}):\n{output[-3000:]}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()

    home = project / ".dagster"
    instance = served["instance"]
    (location,) = served["workspaceOrError"]["locationEntries"]
    assert (location["name"], location["locationOrLoadError"]["__typename"]) == ("datacoolie", "RepositoryLocation")
    # the settings of our dagster.yaml, as the running webserver reports them
    assert instance["runQueueConfig"] == {"maxConcurrentRuns": 4}
    assert instance["poolConfig"] == {"poolGranularity": "run", "defaultPoolLimit": 1}
    assert str(home) in instance["info"]
    assert f"Dagster instance: {home}" in output
    assert ".tmp_dagster_home" not in output  # not dagster dev's temporary instance
    # no noise: Dagster's `owners` BetaWarning (a sensor rebuilt at load), alembic's INFO lines
    assert "BetaWarning" not in output
    assert "alembic" not in output
    # the instance is the project's .dagster, seeded with the repository's dagster.yaml, and persists
    assert (home / "dagster.yaml").read_text() == (REPOSITORY / "dagster.yaml").read_text()
    assert (home / "history" / "runs.db").exists()
    with dg.DagsterInstance.from_config(str(home)) as persisted:
        assert persisted.run_monitoring_enabled
        assert persisted.run_monitoring_max_runtime_seconds == 86400
        assert not persisted.run_retries_enabled
