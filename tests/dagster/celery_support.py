"""Celery worker processes for the executor tests: each a "host" of its own — its own working
directory, DAGSTER_HOME and temporary folder (``TMPDIR``), so that no two share a local path.

A worker is ``dagster-celery worker start`` (Dagster's own command: it writes the worker config
file under the worker's DAGSTER_HOME and execs ``celery -A dagster_celery.app worker``), one task
at a time, in its own session so that the test can SIGKILL the worker's whole process group — the
Celery parent and its pool child — as a lost host would.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from celery import Celery

from tests.dagster.cli_support import BIN

QUEUE = "dagster"
READY_TIMEOUT = 180.0


@dataclass
class Worker:
    name: str
    cwd: Path
    process: subprocess.Popen[bytes]

    @property
    def hostname(self) -> str:
        """The node name Celery reports (``<name>@<host>``), as in Dagster's engine events."""
        return f"{self.name}@{socket.gethostname()}"

    def kill(self) -> None:
        """SIGKILL the worker's process group: no warm shutdown, no ack, no result."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def log(self) -> str:
        path = self.cwd / "worker.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""


def _wait_ready(app: Celery, workers: list[Worker]) -> None:
    """Until every worker answers a broadcast ping (it consumes the queue by then)."""
    deadline = time.monotonic() + READY_TIMEOUT
    waiting = {w.hostname for w in workers}
    while waiting:
        for worker in workers:
            if worker.process.poll() is not None:
                raise RuntimeError(f"worker {worker.name} exited ({worker.process.returncode}):\n{worker.log()}")
        replies = app.control.ping(destination=sorted(waiting), timeout=1.0) or []
        waiting -= {name for reply in replies for name in reply}
        if waiting and time.monotonic() > deadline:
            raise TimeoutError(f"workers {sorted(waiting)} not ready after {READY_TIMEOUT} s")


def _start(
    name: str, root: Path, config: Path, dagster_yaml: Path, env: Mapping[str, str], provision: Provision
) -> Worker:
    cwd = root / name
    home, tmp = cwd / "dagster_home", cwd / "tmp"
    home.mkdir(parents=True)
    tmp.mkdir()
    shutil.copyfile(dagster_yaml, home / "dagster.yaml")
    provision(cwd)
    args = [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app", "-y", str(config),
            "-n", name, "-q", QUEUE, "--", "--concurrency=1", "--without-gossip", "--without-mingle"]  # fmt: skip
    log = (cwd / "worker.log").open("wb")
    process = subprocess.Popen(
        args, cwd=cwd, env={**env, "DAGSTER_HOME": str(home), "TMPDIR": str(tmp)}, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    log.close()
    return Worker(name, cwd, process)


Provision = Callable[[Path], None]
"""Puts on a worker's "host" (its working directory) what its image would hold, before it starts."""


def _nothing(cwd: Path) -> None:
    return None


@contextmanager
def celery_workers(
    count: int,
    root: Path,
    config: Path,
    dagster_yaml: Path,
    env: Mapping[str, str],
    broker: str,
    provision: Provision = _nothing,
) -> Iterator[list[Worker]]:
    """``count`` ready workers under ``root/worker_<i>``; each stopped (process group) at exit."""
    workers: list[Worker] = []
    with ExitStack() as stack:
        for index in range(count):
            worker = _start(f"worker_{index}", root, config, dagster_yaml, env, provision)
            workers.append(worker)
            stack.callback(_stop, worker)
        app = Celery(broker=broker)
        try:
            _wait_ready(app, workers)
        finally:
            app.close()
        yield workers


def _stop(worker: Worker) -> None:
    """SIGKILL whatever is left of the worker's process group (the test's run is over by then)."""
    try:
        os.killpg(worker.process.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    worker.process.wait(timeout=30)
