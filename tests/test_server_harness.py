"""The server harness the real-server tests share (tests/support/servers.py), on a small real server:
Python's own HTTP server, started, waited for, stopped and cleaned up as PostgreSQL or Redis are."""

from __future__ import annotations

import glob
import sys
import tempfile
import urllib.request
from pathlib import Path

import pytest

from tests.support.servers import ATTEMPTS, PORT_BASE, PORTS_PER_WORKER, Server, ServerSpec, free_port, running


def http_answers(server: Server) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/", timeout=2):
            return True
    except OSError:
        return False


HTTP = ServerSpec(
    name="harness-http",
    install_hint="(Python's standard library)",
    binaries=lambda: {"python": sys.executable},
    command=lambda server: [server.binaries["python"], "-m", "http.server", "-b", "127.0.0.1", str(server.port)],
    ready=http_answers,
)


def folders(name: str) -> set[str]:
    return set(glob.glob(str(Path(tempfile.gettempdir()) / f"datacoolie-{name}-*")))


def test_each_worker_picks_ports_in_its_own_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    gw3 = {free_port() for _ in range(20)}
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw4")
    gw4 = {free_port() for _ in range(20)}

    assert all(PORT_BASE + 3 * PORTS_PER_WORKER <= port < PORT_BASE + 4 * PORTS_PER_WORKER for port in gw3)
    assert all(PORT_BASE + 4 * PORTS_PER_WORKER <= port < PORT_BASE + 5 * PORTS_PER_WORKER for port in gw4)


def test_a_server_answers_inside_the_block_and_is_gone_with_its_folder_after() -> None:
    before = folders(HTTP.name)
    with running(HTTP) as server:
        assert http_answers(server)
        assert server.root.is_dir()
    assert not http_answers(server)
    assert not server.root.exists()
    assert folders(HTTP.name) == before


def test_a_server_that_exits_before_answering_is_retried_then_fails_with_its_log() -> None:
    starts: list[int] = []

    def command(server: Server) -> list[str]:
        starts.append(server.port)
        return [sys.executable, "-c", "import sys; print('cannot bind, giving up'); sys.exit(3)"]

    before = folders("harness-exits")
    spec = ServerSpec("harness-exits", "-", dict, command, ready=lambda server: False)
    exited = r"(?s)harness-exits exited \(3\).*cannot bind, giving up"
    with pytest.raises(RuntimeError, match=exited), running(spec):
        pass  # never reached
    assert len(starts) == ATTEMPTS
    assert folders("harness-exits") == before


def test_missing_binaries_skip_with_the_install_command_but_fail_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = ServerSpec("harness-missing", "apt-get install -y harness", lambda: None, lambda s: [], lambda s: True)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y harness"), running(spec):
        pass
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y harness"), running(spec):
        pass
