"""A real, throw-away Redis server for tests (the Celery broker and result backend).

``DATACOOLIE_TEST_REDIS_URL`` (``redis://host:port``) points the tests at an existing server.
Otherwise :func:`start_redis` starts Debian's ``redis-server`` through the server harness
(:mod:`tests.support.servers`) on 127.0.0.1 and a free port, with its files in its own folder and no
persistence (a test server keeps nothing), and waits until it answers PING.
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.servers import Server, ServerSpec, given_or_started, running

ENV_URL = "DATACOOLIE_TEST_REDIS_URL"
INSTALL_HINT = "apt-get update && apt-get install -y redis-server"


def ping(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a Redis server answers ``PING`` on ``host:port`` (inline protocol, no client library)."""
    try:
        with socket.create_connection((host, port), timeout=1.0) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _binaries() -> dict[str, str] | None:
    binary = shutil.which("redis-server")
    return None if binary is None else {"server": binary}


def _command(server: Server) -> list[str]:
    return [server.binaries["server"], "--bind", "127.0.0.1", "--port", str(server.port), "--dir", str(server.root),
            "--save", "", "--appendonly", "no", "--protected-mode", "no"]  # fmt: skip


REDIS = ServerSpec(
    name="redis",
    install_hint=INSTALL_HINT,
    binaries=_binaries,
    command=_command,
    ready=lambda server: ping(server.port),
    stop_timeout=10.0,
    poll=0.05,
)


@contextmanager
def start_redis() -> Iterator[str]:
    """Start a private ``redis-server``; yield its URL; stop it and delete its folder on exit."""
    with running(REDIS) as server:
        yield f"redis://127.0.0.1:{server.port}"


@contextmanager
def redis_url() -> Iterator[str]:
    """The server to test against: ``DATACOOLIE_TEST_REDIS_URL`` if set, else a private server."""
    with given_or_started(ENV_URL, start_redis) as url:
        yield url
