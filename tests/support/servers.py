"""One harness for the real servers the tests start (PostgreSQL, MariaDB, Redis, moto S3, Azurite).

Each server is a :class:`ServerSpec`: how to find its binaries, the command that runs it in the
foreground, how to tell it answers, and what to prepare before and set up after. :func:`running`
owns the rest, the same for all of them: a private folder, a free port, the process, waiting until it
answers (never a fixed time), and stopping it and deleting its folder at exit.

Safe under pytest-xdist: every server gets a folder of its own (``datacoolie-<name>-<worker>-…``
under the system's temporary directory, not under pytest's per-user ``0700`` base folder, which a
server running as another user cannot enter) and a port from its worker's own range
(:func:`free_port`), so two workers never pick the same one. A server that exits before it answers
(a port taken by another program between the pick and the bind) is started again on another port.

Missing binaries skip the tests with the install command, except under ``CI`` where they fail: a CI
run must never pass by skipping its server tests.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import pytest

PORT_BASE, PORTS_PER_WORKER, WORKER_RANGES = 20000, 1000, 12
"""Worker ``gwN`` picks its ports in ``20000 + 1000 * (N % 12)`` and the next 999: below Linux's
ephemeral range (32768+), where the kernel picks the local ports of outgoing connections."""
ATTEMPTS = 3
"""Starts on a fresh port before giving up."""


@dataclass(frozen=True)
class Server:
    """A server being started or running: where it lives and what it was started with."""

    port: int
    root: Path
    """The server's private folder (data, socket, log); deleted at exit."""
    binaries: Mapping[str, str]
    log: Path
    """The server's stdout and stderr."""
    user: str | None = None
    """The account the server runs as (``None``: the test process's own)."""

    def run(self, args: list[str], timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """A set-up command as the server's account; a failure raises with its output."""
        done = subprocess.run(
            args, cwd=self.root, user=self.user, capture_output=True, text=True, check=False, timeout=timeout
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""


def _nothing(server: Server) -> None:
    """The default of :attr:`ServerSpec.prepare` and :attr:`ServerSpec.set_up`: nothing to do."""


@dataclass(frozen=True)
class ServerSpec:
    """What differs from one server to another; :func:`running` does the rest."""

    name: str
    """Short name for folders and messages (``postgres``, ``redis``...)."""
    install_hint: str
    binaries: Callable[[], Mapping[str, str] | None]
    """The paths of the programs it needs, or ``None`` when they are not installed."""
    command: Callable[[Server], list[str]]
    """The server in the foreground, on ``server.port`` with its files in ``server.root``."""
    ready: Callable[[Server], bool]
    """Whether it answers now (called every :attr:`poll` seconds until it does)."""
    prepare: Callable[[Server], None] = _nothing
    """Before the start (``initdb``...)."""
    set_up: Callable[[Server], None] = _nothing
    """Once it answers (users, databases...)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Added to the test process's environment."""
    user: Callable[[], str | None] = lambda: None
    """The account to run as (``initdb`` and ``postgres`` refuse root)."""
    stop_signal: signal.Signals = signal.SIGTERM
    new_session: bool = False
    """Its own process group (a launcher with children); the stop signal goes to the whole group."""
    start_timeout: float = 60.0
    stop_timeout: float = 30.0
    poll: float = 0.1


def worker_id() -> str:
    """The pytest-xdist worker (``gw0``, ``gw1``...), ``main`` without xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def free_port() -> int:
    """A port free now on 127.0.0.1, from this worker's own range (other workers never pick it)."""
    worker = worker_id()
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else WORKER_RANGES - 1
    first = PORT_BASE + PORTS_PER_WORKER * (index % WORKER_RANGES)
    for port in random.sample(range(first, first + PORTS_PER_WORKER), 50):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as probe:  # the whole sample taken: any port the kernel gives
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def missing(message: str) -> NoReturn:
    """Skip the test, or fail it under ``CI``."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


class _Exited(RuntimeError):
    """The server exited before it answered (worth another port)."""


@contextmanager
def running(spec: ServerSpec) -> Iterator[Server]:
    """Start ``spec``'s server on a free port; yield it once it answers; stop it and delete its folder at exit."""
    binaries = spec.binaries()
    if binaries is None:
        missing(f"{spec.name} server binaries not found; install them: {spec.install_hint}")
    for attempt in range(1, ATTEMPTS + 1):
        server = _new_server(spec, binaries)
        try:
            with _started(spec, server):
                yield server
                return
        except _Exited:
            if attempt == ATTEMPTS:
                raise
        finally:
            shutil.rmtree(server.root, ignore_errors=True)


def _new_server(spec: ServerSpec, binaries: Mapping[str, str]) -> Server:
    root = Path(tempfile.mkdtemp(prefix=f"datacoolie-{spec.name}-{worker_id()}-"))
    user = spec.user()
    if user is not None:
        shutil.chown(root, user=user)
    return Server(free_port(), root, binaries, root / "server.log", user)


@contextmanager
def _started(spec: ServerSpec, server: Server) -> Iterator[None]:
    spec.prepare(server)
    with server.log.open("ab") as log:
        process = subprocess.Popen(
            spec.command(server),
            cwd=server.root,
            env=os.environ | dict(spec.env),
            user=server.user,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=spec.new_session,
        )
    try:
        _wait_ready(spec, server, process)
        spec.set_up(server)
        yield
    finally:
        _stop(spec, process)


def _wait_ready(spec: ServerSpec, server: Server, process: subprocess.Popen[bytes]) -> None:
    """Until the server answers; raises with its log when it exits first or never answers."""
    deadline = time.monotonic() + spec.start_timeout
    while not spec.ready(server):
        if process.poll() is not None:
            raise _Exited(f"{spec.name} exited ({process.returncode}) before answering:\n{server.log_tail()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{spec.name} did not answer within {spec.start_timeout:.0f}s:\n{server.log_tail()}")
        time.sleep(spec.poll)  # a poll interval, not a guess at the start time


def _stop(spec: ServerSpec, process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        _signal(spec, process, spec.stop_signal)
    try:
        process.wait(timeout=spec.stop_timeout)
    except subprocess.TimeoutExpired:
        _signal(spec, process, signal.SIGKILL)
        process.wait()


def _signal(spec: ServerSpec, process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    try:
        if spec.new_session:
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)
    except ProcessLookupError:
        pass


@contextmanager
def given_or_started(variable: str, start: Callable[[], AbstractContextManager[str]]) -> Iterator[str]:
    """The URL in the environment ``variable`` when set (a server already running), else ``start()``'s."""
    url = os.environ.get(variable)
    if url:
        yield url
        return
    with start() as started:
        yield started
