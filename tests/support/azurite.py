"""A real, throw-away Azure Blob Storage emulator (Azurite, the npm package) for the ``abfss://`` tests.

:func:`start_azurite` starts ``azurite-blob`` on 127.0.0.1 and a free port, in memory (a test server
keeps nothing) and with its telemetry off (no traffic leaves the machine), waits until it accepts
connections, and stops it at exit. The binary: ``$DATACOOLIE_AZURITE_BIN``, else the one
``./make.sh test`` installs beside the virtualenv (``.venv/azurite``), else ``azurite-blob`` on PATH.
A missing binary skips the tests with the install command, except under ``CI`` where it fails.

Azurite serves the Blob API at ``http://127.0.0.1:<port>/devstoreaccount1``: delta-rs, Polars and
obstore reach it from an ``abfss://<container>@devstoreaccount1.dfs.core.windows.net/…`` URL with
the account's name and key and ``azure_endpoint`` (plus ``azure_allow_http``) in the options.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

import pytest

VERSION = "3.35.0"
INSTALL_HINT = f"npm install --prefix .venv/azurite azurite@{VERSION}"
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
"""Azurite's well-known development account (public: it is in Azurite's documentation)."""
NAME_VAR, KEY_VAR = "DC_TEST_AZURE_ACCOUNT", "DC_TEST_AZURE_KEY"
"""The environment variables the test connections' ``secrets_ref`` name (``env:`` source)."""
START_TIMEOUT = 60.0


@dataclass(frozen=True)
class AzuriteServer:
    endpoint: str
    """``http://127.0.0.1:<port>/devstoreaccount1``."""

    @property
    def storage_options(self) -> dict[str, str]:
        """Every option delta-rs, Polars and obstore need for this server (credentials included)."""
        return {
            "azure_storage_account_name": ACCOUNT,
            "azure_storage_account_key": ACCOUNT_KEY,
            "azure_endpoint": self.endpoint,
            "azure_allow_http": "true",
        }

    def container(self) -> str:
        """A new, empty container."""
        name = f"dc{uuid.uuid4().hex[:12]}"
        self._request("PUT", name, "restype:container", f"{name}?restype=container", b"", {})
        return name

    def put(self, url: str, data: bytes) -> None:
        """Write a blob at ``abfss://<container>@<account>.dfs.core.windows.net/<path>``."""
        container, path = split(url)
        self._request("PUT", f"{container}/{path}", "", f"{container}/{path}", data, {"x-ms-blob-type": "BlockBlob"})

    def _request(
        self, method: str, resource: str, query: str, target: str, body: bytes, headers: dict[str, str]
    ) -> None:
        """A request signed with the account's Shared Key (Azure Storage's documented scheme)."""
        headers = {"x-ms-date": datetime.now(UTC).strftime("%a, %d %b %Y %H:%M:%S GMT"),
                   "x-ms-version": "2021-08-06", **headers}  # fmt: skip
        ms = "".join(
            f"{k}:{v}\n" for k, v in sorted((k.lower(), v) for k, v in headers.items() if k.startswith("x-ms-"))
        )
        length = str(len(body)) if body else ""
        canonical = f"/{ACCOUNT}/{ACCOUNT}/{resource}" + (f"\n{query}" if query else "")
        content_type = "application/octet-stream"
        headers["Content-Type"] = content_type
        signed = f"{method}\n\n\n{length}\n\n{content_type}\n\n\n\n\n\n\n{ms}{canonical}"
        digest = hmac.new(base64.b64decode(ACCOUNT_KEY), signed.encode(), hashlib.sha256).digest()
        headers["Authorization"] = f"SharedKey {ACCOUNT}:{base64.b64encode(digest).decode()}"
        request = urllib.request.Request(f"{self.endpoint}/{target}", data=body, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status in (200, 201), response.status


def split(url: str) -> tuple[str, str]:
    """``abfss://container@account.dfs.core.windows.net/a/b`` -> ``("container", "a/b")``."""
    authority, _, path = url.split("://", 1)[1].partition("/")
    return authority.split("@", 1)[0], path


def abfss(container: str, path: str = "") -> str:
    return f"abfss://{container}@{ACCOUNT}.dfs.core.windows.net/{path}".rstrip("/")


def _binary() -> str | None:
    given = os.environ.get("DATACOOLIE_AZURITE_BIN")
    if given:
        return given
    beside_venv = Path(sys.prefix) / "azurite" / "node_modules" / ".bin" / "azurite-blob"
    return str(beside_venv) if beside_venv.exists() else shutil.which("azurite-blob")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def _missing(message: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@contextmanager
def start_azurite() -> Iterator[AzuriteServer]:
    """Start a private ``azurite-blob``; yield it; stop it at exit."""
    binary = _binary()
    if binary is None:
        _missing(f"azurite-blob not found; install it: {INSTALL_HINT}")
    root = Path(tempfile.mkdtemp(prefix="datacoolie-azurite-"))
    port = _free_port()
    args = [binary, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
            "--disableTelemetry", "--skipApiVersionCheck"]  # fmt: skip
    with (root / "azurite.log").open("wb") as log:
        process = subprocess.Popen(args, cwd=root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _listening(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"azurite did not start:\n{(root / 'azurite.log').read_text(errors='replace')}")
            time.sleep(0.1)
        yield AzuriteServer(f"http://127.0.0.1:{port}/{ACCOUNT}")
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(root, ignore_errors=True)
