"""A real, throw-away PostgreSQL server for tests.

``DATACOOLIE_TEST_POSTGRES_URL`` (``postgresql://user:password@host:port/db``) points the tests at an
existing server. Otherwise :func:`start_postgres` starts a private cluster from the Debian package's
binaries (``/usr/lib/postgresql/<version>/bin``): password authentication over TCP on 127.0.0.1 and a
free port, the unix socket inside the cluster's temporary directory, ``fsync`` off. ``initdb``
refuses to run as root, so as root the cluster is created and run as the ``postgres`` user.

Missing binaries skip the tests with the install command, except under ``CI`` where they fail: a CI
run must never pass by skipping its database tests.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ENV_URL = "DATACOOLIE_TEST_POSTGRES_URL"
USER = "postgres"
PASSWORD = "dc-test-secret"
INSTALL_HINT = "apt-get update && apt-get install -y postgresql"


def find_bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding ``initdb`` and ``pg_ctl``."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    found = [d for d in found if (d / "pg_ctl").exists()]
    return max(found, key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0, default=None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_server_user(args: list[str]) -> list[str]:
    return ["runuser", "-u", USER, "--", *args] if os.geteuid() == 0 else args


def _run(args: list[str]) -> None:
    done = subprocess.run(_as_server_user(args), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")


def _prepare_dir(root: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(root, user=USER)
    (root / "pwfile").write_text(PASSWORD + "\n")
    if os.geteuid() == 0:
        shutil.chown(root / "pwfile", user=USER)


@contextmanager
def start_postgres() -> Iterator[str]:
    """Start a private cluster; yield its URL; stop and delete it on exit.

    Skips (or fails under ``CI``) when the server binaries are not installed.
    """
    bin_dir = find_bin_dir()
    if bin_dir is None:
        message = f"PostgreSQL server binaries not found under /usr/lib/postgresql; install them: {INSTALL_HINT}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    root = Path(tempfile.mkdtemp(prefix="datacoolie-pg-"))
    data, port = root / "data", _free_port()
    try:
        _prepare_dir(root)
        _run([str(bin_dir / "initdb"), "-D", str(data), "-U", USER, f"--pwfile={root / 'pwfile'}",
              "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--no-sync"])  # fmt: skip
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "server.log"), "-w", "start"])
        try:
            yield f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{port}/postgres"
        finally:
            _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def postgres_url() -> Iterator[str]:
    """The server to test against: ``DATACOOLIE_TEST_POSTGRES_URL`` if set, else a private cluster."""
    url = os.environ.get(ENV_URL)
    if url:
        yield url
        return
    with start_postgres() as started:
        yield started
