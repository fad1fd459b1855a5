"""A real, throw-away MariaDB server for tests.

``DATACOOLIE_TEST_MARIADB_URL`` (``mysql://user:password@host:port/db``) points the tests at an
existing server. Otherwise :func:`start_mariadb` starts a private server from Debian's
``mariadb-server`` binaries through the server harness (:mod:`tests.support.servers`):
``mariadb-install-db`` into the server's folder, ``mariadbd`` on 127.0.0.1 and a free port with its
socket in that folder (as root: ``--user=root``, which mariadbd requires to run as root), then a
password user for the tests over TCP.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.support.servers import Server, ServerSpec, given_or_started, running

ENV_URL = "DATACOOLIE_TEST_MARIADB_URL"
USER = "datacoolie"
PASSWORD = "dc-maria-secret"
DATABASE = "datacoolie"
INSTALL_HINT = "apt-get update && apt-get install -y mariadb-server"


def find_binaries() -> dict[str, str] | None:
    """The ``install-db``, ``server`` and ``client`` paths, or ``None`` when mariadb-server is not installed."""
    found = {
        "install-db": shutil.which("mariadb-install-db") or shutil.which("mysql_install_db"),
        "server": shutil.which("mariadbd") or _sbin("mariadbd") or _sbin("mysqld"),
        "client": shutil.which("mariadb") or shutil.which("mysql"),
    }
    return {name: path for name, path in found.items() if path} if all(found.values()) else None


def _sbin(name: str) -> str | None:
    path = Path("/usr/sbin") / name
    return str(path) if path.exists() else None


def _user_args() -> list[str]:
    return ["--user=root"] if os.geteuid() == 0 else []


def _install_db(server: Server) -> None:
    server.run([server.binaries["install-db"], "--no-defaults", f"--datadir={server.root / 'data'}",
                "--auth-root-authentication-method=normal", "--skip-test-db", *_user_args()])  # fmt: skip


def _command(server: Server) -> list[str]:
    root = server.root
    return [server.binaries["server"], "--no-defaults", f"--datadir={root / 'data'}", f"--socket={root / 'mysqld.sock'}",
            f"--port={server.port}", "--bind-address=127.0.0.1", f"--pid-file={root / 'mysqld.pid'}",
            f"--log-error={server.log}", "--skip-log-bin", "--skip-name-resolve", "--innodb-buffer-pool-size=32M",
            "--innodb-flush-log-at-trx-commit=0", "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_unicode_ci", "--default-time-zone=+00:00", *_user_args()]  # fmt: skip


def _as_root(server: Server) -> list[str]:
    return [server.binaries["client"], "--no-defaults", f"--socket={server.root / 'mysqld.sock'}", "-uroot"]


def _ready(server: Server) -> bool:
    if not (server.root / "mysqld.sock").exists():
        return False
    return subprocess.run([*_as_root(server), "-e", "SELECT 1"], capture_output=True, check=False).returncode == 0


def _create_user(server: Server) -> None:
    setup = (f"CREATE DATABASE {DATABASE} CHARACTER SET utf8mb4; "
             f"CREATE USER '{USER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}'; "
             f"GRANT ALL ON *.* TO '{USER}'@'127.0.0.1';")  # fmt: skip
    server.run([*_as_root(server), "-e", setup])


MARIADB = ServerSpec(
    name="mariadb",
    install_hint=INSTALL_HINT,
    binaries=find_binaries,
    prepare=_install_db,
    command=_command,
    ready=_ready,
    set_up=_create_user,
    start_timeout=120.0,
    stop_timeout=60.0,
    poll=0.2,
)


@contextmanager
def start_mariadb() -> Iterator[str]:
    """Start a private server; yield its URL; stop it and delete its files on exit.

    Skips (or fails under ``CI``) when the server binaries are not installed.
    """
    with running(MARIADB) as server:
        yield f"mysql://{USER}:{PASSWORD}@127.0.0.1:{server.port}/{DATABASE}"


@contextmanager
def mariadb_url() -> Iterator[str]:
    """The server to test against: ``DATACOOLIE_TEST_MARIADB_URL`` if set, else a private server."""
    with given_or_started(ENV_URL, start_mariadb) as url:
        yield url


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
