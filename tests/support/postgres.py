"""A real, throw-away PostgreSQL server for tests.

``DATACOOLIE_TEST_POSTGRES_URL`` (``postgresql://user:password@host:port/db``) points the tests at an
existing server. Otherwise :func:`start_postgres` starts a private cluster from the Debian package's
binaries (``/usr/lib/postgresql/<version>/bin``) through the server harness
(:mod:`tests.support.servers`): password authentication over TCP on 127.0.0.1 and a free port, the
unix socket inside the cluster's folder, ``fsync`` off, stopped by a fast shutdown. ``initdb`` and
``postgres`` refuse to run as root, so as root the cluster is created and run as the ``postgres`` user.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.servers import Server, ServerSpec, given_or_started, running

ENV_URL = "DATACOOLIE_TEST_POSTGRES_URL"
USER = "postgres"
PASSWORD = "dc-test-secret"
INSTALL_HINT = "apt-get update && apt-get install -y postgresql"


def find_bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding ``initdb`` and ``postgres``."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    found = [d for d in found if (d / "postgres").exists() and (d / "pg_isready").exists()]
    return max(found, key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0, default=None)


def _binaries() -> dict[str, str] | None:
    bin_dir = find_bin_dir()
    return None if bin_dir is None else {name: str(bin_dir / name) for name in ("initdb", "postgres", "pg_isready")}


def _initdb(server: Server) -> None:
    pwfile = server.root / "pwfile"
    pwfile.write_text(PASSWORD + "\n")
    if server.user is not None:
        shutil.chown(pwfile, user=server.user)
    server.run([server.binaries["initdb"], "-D", str(server.root / "data"), "-U", USER, f"--pwfile={pwfile}",
                "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--no-sync"])  # fmt: skip


def _command(server: Server) -> list[str]:
    return [server.binaries["postgres"], "-D", str(server.root / "data"), "-p", str(server.port),
            "-k", str(server.root), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
            "-c", "full_page_writes=off"]  # fmt: skip


def _ready(server: Server) -> bool:
    ping = [server.binaries["pg_isready"], "-q", "-h", "127.0.0.1", "-p", str(server.port), "-U", USER]
    return subprocess.run(ping, capture_output=True, check=False).returncode == 0


POSTGRES = ServerSpec(
    name="postgres",
    install_hint=INSTALL_HINT,
    binaries=_binaries,
    prepare=_initdb,
    command=_command,
    ready=_ready,
    user=lambda: USER if os.geteuid() == 0 else None,
    stop_signal=signal.SIGINT,  # fast shutdown: open test connections do not hold it up
)


@contextmanager
def start_postgres() -> Iterator[str]:
    """Start a private cluster; yield its URL; stop and delete it on exit.

    Skips (or fails under ``CI``) when the server binaries are not installed.
    """
    with running(POSTGRES) as server:
        yield f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{server.port}/postgres"


@contextmanager
def postgres_url() -> Iterator[str]:
    """The server to test against: ``DATACOOLIE_TEST_POSTGRES_URL`` if set, else a private cluster."""
    with given_or_started(ENV_URL, start_postgres) as url:
        yield url
