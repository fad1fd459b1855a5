"""A real, throw-away MariaDB server for tests.

``DATACOOLIE_TEST_MARIADB_URL`` (``mysql://user:password@host:port/db``) points the tests at an
existing server. Otherwise :func:`start_mariadb` starts a private server from Debian's
``mariadb-server`` binaries: ``mariadb-install-db`` into a temporary directory, ``mariadbd`` on
127.0.0.1 and a free port with its socket in that directory (as root: ``--user=root``, which
mariadbd requires to run as root), then a password user for the tests over TCP. The start waits
until the server answers, never a fixed time; teardown stops the server and deletes the directory.

Missing binaries skip the tests with the install command, except under ``CI`` where they fail: a CI
run must never pass by skipping its database tests.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

ENV_URL = "DATACOOLIE_TEST_MARIADB_URL"
USER = "datacoolie"
PASSWORD = "dc-maria-secret"
DATABASE = "datacoolie"
INSTALL_HINT = "apt-get update && apt-get install -y mariadb-server"
START_TIMEOUT = 120.0


def find_binaries() -> tuple[str, str, str] | None:
    """``(install-db, server, client)`` paths, or ``None`` when mariadb-server is not installed."""
    found = (
        shutil.which("mariadb-install-db") or shutil.which("mysql_install_db"),
        shutil.which("mariadbd") or _sbin("mariadbd") or _sbin("mysqld"),
        shutil.which("mariadb") or shutil.which("mysql"),
    )
    return (found[0], found[1], found[2]) if all(found) else None  # type: ignore[return-value]


def _sbin(name: str) -> str | None:
    path = Path("/usr/sbin") / name
    return str(path) if path.exists() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _user_args() -> list[str]:
    return ["--user=root"] if os.geteuid() == 0 else []


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=START_TIMEOUT, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


def _wait_ready(server: subprocess.Popen[bytes], client: str, sock: Path, log: Path) -> None:
    """Until the server answers on its socket; fails with its log if it exits or never answers."""
    deadline = time.monotonic() + START_TIMEOUT
    ping = [client, "--no-defaults", f"--socket={sock}", "-uroot", "-e", "SELECT 1"]
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"mariadbd exited ({server.returncode}):\n{log.read_text(errors='replace')}")
        if sock.exists() and subprocess.run(ping, capture_output=True, check=False).returncode == 0:
            return
        time.sleep(0.2)  # a poll interval, not a guess at the start time
    raise RuntimeError(f"mariadbd did not answer within {START_TIMEOUT:.0f}s:\n{log.read_text(errors='replace')}")


@contextmanager
def start_mariadb() -> Iterator[str]:
    """Start a private server; yield its URL; stop it and delete its files on exit.

    Skips (or fails under ``CI``) when the server binaries are not installed.
    """
    binaries = find_binaries()
    if binaries is None:
        message = f"MariaDB server binaries (mariadb-install-db, mariadbd) not found; install them: {INSTALL_HINT}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    install_db, mariadbd, client = binaries
    root = Path(tempfile.mkdtemp(prefix="datacoolie-maria-"))
    data, sock, log, port = root / "data", root / "mysqld.sock", root / "server.log", _free_port()
    try:
        _run([install_db, "--no-defaults", f"--datadir={data}", "--auth-root-authentication-method=normal",
              "--skip-test-db", *_user_args()])  # fmt: skip
        server = subprocess.Popen(
            [mariadbd, "--no-defaults", f"--datadir={data}", f"--socket={sock}", f"--port={port}",
             "--bind-address=127.0.0.1", f"--pid-file={root / 'mysqld.pid'}", f"--log-error={log}",
             "--skip-log-bin", "--skip-name-resolve", "--innodb-buffer-pool-size=32M",
             "--innodb-flush-log-at-trx-commit=0", "--character-set-server=utf8mb4",
             "--collation-server=utf8mb4_unicode_ci", "--default-time-zone=+00:00", *_user_args()],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            _wait_ready(server, client, sock, log)
            setup = (f"CREATE DATABASE {DATABASE} CHARACTER SET utf8mb4; "
                     f"CREATE USER '{USER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}'; "
                     f"GRANT ALL ON *.* TO '{USER}'@'127.0.0.1';")  # fmt: skip
            _run([client, "--no-defaults", f"--socket={sock}", "-uroot", "-e", setup])
            yield f"mysql://{USER}:{PASSWORD}@127.0.0.1:{port}/{DATABASE}"
        finally:
            server.terminate()
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def mariadb_url() -> Iterator[str]:
    """The server to test against: ``DATACOOLIE_TEST_MARIADB_URL`` if set, else a private server."""
    url = os.environ.get(ENV_URL)
    if url:
        yield url
        return
    with start_mariadb() as started:
        yield started


@contextmanager
def fresh_database(url: str) -> Iterator[tuple[Any, dict[str, Any]]]:
    """A new database on the server at ``url``: (autocommit pymysql connection to it, connection configure)."""
    import pymysql

    parts = urlsplit(url)
    name = f"d_{uuid.uuid4().hex[:10]}"
    conn = pymysql.connect(host=parts.hostname, port=parts.port, user=parts.username, password=parts.password,
                           charset="utf8mb4", autocommit=True)  # fmt: skip
    try:
        conn.cursor().execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        conn.select_db(name)
        yield conn, {"database_type": "mysql", "host": parts.hostname, "port": parts.port, "database": name,
                     "username": parts.username, "password": parts.password}  # fmt: skip
    finally:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
        conn.close()
