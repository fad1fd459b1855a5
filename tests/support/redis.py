"""A real, throw-away Redis server for tests (the Celery broker and result backend).

``DATACOOLIE_TEST_REDIS_URL`` (``redis://host:port``) points the tests at an existing server.
Otherwise :func:`start_redis` starts Debian's ``redis-server`` on 127.0.0.1 and a free port, with
its files in a temporary directory and no persistence (a test server keeps nothing), waits until
it answers PING, and stops it at exit.

A missing binary skips the tests with the install command, except under ``CI`` where it fails: a
CI run must never pass by skipping its broker tests.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ENV_URL = "DATACOOLIE_TEST_REDIS_URL"
INSTALL_HINT = "apt-get update && apt-get install -y redis-server"
START_TIMEOUT = 30.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ping(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a Redis server answers ``PING`` on ``host:port`` (inline protocol, no client library)."""
    try:
        with socket.create_connection((host, port), timeout=1.0) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _missing(message: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@contextmanager
def start_redis() -> Iterator[str]:
    """Start a private ``redis-server``; yield its URL; stop it and delete its folder on exit."""
    binary = shutil.which("redis-server")
    if binary is None:
        _missing(f"redis-server not found; install it: {INSTALL_HINT}")
    root = Path(tempfile.mkdtemp(prefix="datacoolie-redis-"))
    port = _free_port()
    args = [str(binary), "--bind", "127.0.0.1", "--port", str(port), "--dir", str(root), "--save", "",
            "--appendonly", "no", "--protected-mode", "no", "--logfile", str(root / "server.log")]  # fmt: skip
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not ping(port):
            if server.poll() is not None or time.monotonic() > deadline:
                log = (root / "server.log").read_text(errors="replace") if (root / "server.log").exists() else ""
                raise RuntimeError(f"redis-server did not answer PING on 127.0.0.1:{port}:\n{log}")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def redis_url() -> Iterator[str]:
    """The server to test against: ``DATACOOLIE_TEST_REDIS_URL`` if set, else a private server."""
    url = os.environ.get(ENV_URL)
    if url:
        yield url
        return
    with start_redis() as started:
        yield started
