"""A real ``dagster-daemon`` over a workspace and a given ``dagster.yaml`` (SQLite or PostgreSQL).

Every daemon test starts its daemon through :func:`prepare` and :func:`running`; the default
workspace is ``tests.dagster.retry_location``. ``instance_settings`` (a fixture in ``conftest.py``,
parametrized over ``sqlite`` and ``postgres``) gives the ``dagster.yaml`` and environment to pass.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from tests.dagster.cli_support import BIN, REPOSITORY

WORKSPACE = f"""load_from:
  - python_module:
      module_name: tests.dagster.retry_location
      location_name: retry_location
      working_directory: {REPOSITORY}
"""
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


@dataclass(frozen=True)
class Daemon:
    root: Path
    env: Mapping[str, str]

    @property
    def home(self) -> Path:
        return self.root / "dagster_home"

    @contextmanager
    def instance(self) -> Iterator[dg.DagsterInstance]:
        """The daemon's instance, opened with its environment (PostgreSQL settings are env references)."""
        with _environ(self.env), dg.DagsterInstance.from_config(str(self.home)) as instance:
            yield instance

    def launch(self, job: str, tags: Mapping[str, str] | None = None) -> None:
        """``dagster job launch`` through the queue; fails the test on a non-zero exit."""
        args = [str(BIN / "dagster"), "job", "launch", "-w", "workspace.yaml", "-j", job]
        done = subprocess.run(
            [*args, "--tags", json.dumps(dict(tags or {}))],
            cwd=self.root, env=dict(self.env), capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def prepare(root: Path, config: Path, env: Mapping[str, str] | None = None, workspace: str = WORKSPACE) -> Daemon:
    """``root/workspace.yaml`` and ``root/dagster_home/dagster.yaml``; storage created once.

    ``root`` is the daemon's working directory (a ``python_file`` workspace entry is relative to it).
    """
    home = root / "dagster_home"
    home.mkdir(parents=True)
    shutil.copyfile(config, home / "dagster.yaml")
    (root / "workspace.yaml").write_text(workspace)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DATACOOLIE_", "DAGSTER_"))}
    full = base | {"DAGSTER_HOME": str(home), "DATACOOLIE_TEST_DIR": str(root)} | dict(env or {})
    daemon = Daemon(root, full)
    with daemon.instance() as instance:
        instance.get_runs(limit=1)
    return daemon


@contextmanager
def running(daemon: Daemon, *, crash: bool = False) -> Iterator[Daemon]:
    """``dagster-daemon run`` in its own process group, stopped with its children afterwards.

    ``crash``: stop it with SIGKILL (a crash, not a shutdown) instead of SIGTERM.
    """
    log = (daemon.root / "daemon.log").open("a")
    process = subprocess.Popen(
        [str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"],
        cwd=daemon.root, env=dict(daemon.env), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        with _environ(daemon.env):
            yield daemon
    finally:
        if process.poll() is None and crash:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        elif process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        log.close()


@contextmanager
def _environ(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def wait_until(
    condition: Callable[[], bool], timeout: float, what: str, log: Path | None = None, poll: float = 0.25
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(poll)
    tail = log.read_text()[-3000:] if log is not None and log.exists() else ""
    raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{tail}")


SENSED_CODE_LOCATION = """
import dagster as dg
from datacoolie_dagster import build_definitions

defs = build_definitions(
    "metadata.json",
    state_base_path="state",
    include_jobs=False,
    sensor_interval_seconds=2,
    sensor_status=dg.DefaultSensorStatus.RUNNING,
)
"""
"""``defs.py`` of the sensor tests' code location: ``metadata.json`` beside it, every sensor running."""
SENSED_WORKSPACE = (
    "load_from:\n  - python_file: {relative_path: defs.py, location_name: sensed, working_directory: .}\n"
)
