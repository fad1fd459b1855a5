"""A real, throw-away Azure Blob Storage emulator (Azurite, the npm package) for the ``abfss://`` tests.

:func:`start_azurite` starts ``azurite-blob`` on 127.0.0.1 and a free port, in memory (a test server
keeps nothing) and with its telemetry off (no traffic leaves the machine), waits until it accepts
connections, and stops it at exit. The binary: ``$DATACOOLIE_AZURITE_BIN``, else the one
``./make.sh test`` installs beside the virtualenv (``.venv/azurite``), else ``azurite-blob`` on PATH. Started through the server harness
(:mod:`tests.support.servers`).

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
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tests.support.servers import Server, ServerSpec, listening, running

VERSION = "3.35.0"
INSTALL_HINT = f"npm install --prefix .venv/azurite azurite@{VERSION}"
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
"""Azurite's well-known development account (public: it is in Azurite's documentation)."""
NAME_VAR, KEY_VAR = "DC_TEST_AZURE_ACCOUNT", "DC_TEST_AZURE_KEY"
"""The environment variables the test connections' ``secrets_ref`` name (``env:`` source)."""


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


def _binaries() -> dict[str, str] | None:
    given = os.environ.get("DATACOOLIE_AZURITE_BIN")
    beside_venv = Path(sys.prefix) / "azurite" / "node_modules" / ".bin" / "azurite-blob"
    found = given or (str(beside_venv) if beside_venv.exists() else shutil.which("azurite-blob"))
    return None if found is None else {"server": found}


def _command(server: Server) -> list[str]:
    return [server.binaries["server"], "--blobHost", "127.0.0.1", "--blobPort", str(server.port),
            "--inMemoryPersistence", "--disableTelemetry", "--skipApiVersionCheck"]  # fmt: skip


AZURITE = ServerSpec(
    name="azurite",
    install_hint=INSTALL_HINT,
    binaries=_binaries,
    command=_command,
    ready=lambda server: listening(server.port),
    new_session=True,  # node, and whatever it starts, stop together
    stop_timeout=10.0,
)


@contextmanager
def start_azurite() -> Iterator[AzuriteServer]:
    """Start a private ``azurite-blob``; yield it; stop it at exit."""
    with running(AZURITE) as server:
        yield AzuriteServer(f"http://127.0.0.1:{server.port}/{ACCOUNT}")
