"""A real S3-compatible server for tests: moto in server mode, on 127.0.0.1 and a free port.

:func:`start_moto` runs ``moto_server`` (the ``moto[server]`` dev dependency) through the server
harness (:mod:`tests.support.servers`), waits until it answers HTTP, and stops it at exit. Each test gets its own bucket (:class:`S3Server.bucket`),
so one server serves every test of a process (the ``s3_server`` and ``s3`` fixtures of
``tests/conftest.py``). moto checks SigV4 signatures' shape but accepts any key pair;
the tests still pass credentials the way a connection does (``secrets_ref`` from the environment)
and grep the logs for them.
"""

from __future__ import annotations

import json
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.servers import Server, ServerSpec, running

REGION = "us-east-1"
ACCESS_KEY_ID = "AKIADATACOOLIETEST01"
SECRET_ACCESS_KEY = "s3-secret-Vq7ZpX2mWk9LtR4n"
"""The secret the redaction tests grep every log for."""
START_TIMEOUT = 60.0
KEY_ID_VAR, SECRET_VAR = "DC_TEST_S3_KEY_ID", "DC_TEST_S3_SECRET"
"""The environment variables the test connections' ``secrets_ref`` name (``env:`` source)."""


@dataclass(frozen=True)
class S3Server:
    """A running moto server."""

    endpoint: str

    @property
    def storage_options(self) -> dict[str, str]:
        """Every option delta-rs, Polars and obstore need for this server (credentials included)."""
        return {
            "aws_endpoint_url": self.endpoint,
            "aws_region": REGION,
            "aws_allow_http": "true",
            "aws_access_key_id": ACCESS_KEY_ID,
            "aws_secret_access_key": SECRET_ACCESS_KEY,
        }

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=ACCESS_KEY_ID,
            aws_secret_access_key=SECRET_ACCESS_KEY,
        )

    def bucket(self) -> str:
        """A new, empty bucket."""
        name = f"dc-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def put(self, url: str, data: bytes) -> None:
        bucket, _, key = url.removeprefix("s3://").partition("/")
        self.client().put_object(Bucket=bucket, Key=key, Body=data)

    @contextmanager
    def recording(self) -> Iterator[list[dict[str, Any]]]:
        """Record every request the server gets inside the block (moto's recorder): method, url, headers.

        The list is filled when the block ends.
        """
        self._recorder("reset-recording")
        self._recorder("start-recording")
        requests: list[dict[str, Any]] = []
        try:
            yield requests
        finally:
            self._recorder("stop-recording")
            lines = self._recorder("download-recording", post=False).decode().splitlines()
            requests.extend(json.loads(line) for line in lines if line.strip())

    def _recorder(self, action: str, *, post: bool = True) -> bytes:
        request = urllib.request.Request(
            f"{self.endpoint}/moto-api/recorder/{action}", method="POST" if post else "GET", data=b"" if post else None
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return bytes(response.read())

    def keys(self, url: str) -> list[str]:
        bucket, _, prefix = url.removeprefix("s3://").partition("/")
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def _binaries() -> dict[str, str] | None:
    server = Path(sys.executable).with_name("moto_server")
    return {"server": str(server)} if server.exists() else None


def _answers(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2):
            return True
    except OSError:
        return False


MOTO = ServerSpec(
    name="moto",
    install_hint="pip install -c constraints.txt -e '.[dev]' (moto[server])",
    binaries=_binaries,
    command=lambda server: [server.binaries["server"], "-H", "127.0.0.1", "-p", str(server.port)],
    ready=lambda server: _answers(_endpoint(server)),
    env={"MOTO_ALLOW_NONEXISTENT_REGION": "true", "MOTO_RECORDER_FILEPATH": "recording.jsonl"},
    stop_timeout=20.0,
)
"""moto's recorder writes ``recording.jsonl`` in the server's folder (its working directory)."""


def _endpoint(server: Server) -> str:
    return f"http://127.0.0.1:{server.port}"


@contextmanager
def start_moto() -> Iterator[S3Server]:
    """Start ``moto_server`` on a free port; yield it once it answers; stop it at exit."""
    with running(MOTO) as server:
        yield S3Server(_endpoint(server))
