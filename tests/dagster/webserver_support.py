"""A real ``dagster-webserver`` over a :class:`~tests.dagster.daemon_support.Daemon`'s deployment.

The daemon (``daemon_support.running``) and the webserver are separate processes on one instance, as
in a deployment: the CI recipe reaches the webserver only, and the tests can stop the daemon alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from tests.dagster.cli_support import BIN
from tests.dagster.daemon_support import Daemon, wait_until
from tests.support.servers import free_port

LOCATION_QUERY = "{ workspaceOrError { ... on Workspace { locationEntries { loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"


def graphql(url: str, query: str) -> dict[str, Any]:
    body = json.dumps({"query": query}).encode()
    request = urllib.request.Request(f"{url}/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        answer: dict[str, Any] = json.load(response)
    return answer


def _loaded(url: str, process: subprocess.Popen[bytes]) -> bool:
    assert process.poll() is None, f"dagster-webserver exited with {process.returncode}"
    try:
        entries = graphql(url, LOCATION_QUERY)["data"]["workspaceOrError"]["locationEntries"]
    except (urllib.error.URLError, ConnectionError, TimeoutError, KeyError, TypeError):
        return False
    for entry in entries:
        loaded = entry["locationOrLoadError"] or {}
        assert loaded.get("__typename") != "PythonError", f"the code location failed to load: {loaded}"
    return bool(entries) and all(e["loadStatus"] == "LOADED" and e["locationOrLoadError"] for e in entries)


@contextmanager
def webserver(daemon: Daemon, timeout: float = 240) -> Iterator[str]:
    """``dagster-webserver -w workspace.yaml`` on a free port; yields its URL once the location is loaded."""
    port = free_port()
    log = (daemon.root / "webserver.log").open("ab")
    process = subprocess.Popen(
        [str(BIN / "dagster-webserver"), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=daemon.root, env=dict(daemon.env), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: _loaded(url, process),
            timeout,
            "the webserver to load the code location",
            daemon.root / "webserver.log",
        )
        yield url
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            with suppress(subprocess.TimeoutExpired):
                process.wait(timeout=20)
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        log.close()
