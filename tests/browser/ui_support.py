"""``dagster dev`` on the bundled example, a headless Chromium driven by Selenium, and step screenshots.

Chromium and chromedriver come from Debian's packages (``./make.sh test`` installs them as root); the
driver path is given to Selenium, so Selenium Manager never downloads a browser or a driver. Without
them the browser tests skip with the install command, except under ``CI`` where they fail: a CI run
must never pass by skipping its browser test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver

from tests.dagster.cli_support import BIN, CODE_LOCATION, REPOSITORY
from tests.support.servers import free_port

CHROMEDRIVER = Path("/usr/bin/chromedriver")
INSTALL_HINT = "apt-get update && apt-get install -y chromium chromium-driver"
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
    "--disable-gpu",
    "--disable-dev-shm-usage",  # containers have a small /dev/shm
    "--disable-background-networking",
    "--window-size=1600,1000",
)
ARTIFACTS = Path(os.environ.get("BROWSER_ARTIFACTS", Path(__file__).parent / "artifacts"))
LOCATION_QUERY = (
    "{ workspaceOrError { __typename ... on Workspace { locationEntries { name loadStatus"
    " locationOrLoadError { __typename ... on PythonError { message } } } } } }"
)


def chromium_binary() -> str:
    """The system Chromium; skips (fails under ``CI``) when it or its driver is not installed."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None or not CHROMEDRIVER.is_file():
        message = f"Chromium or {CHROMEDRIVER} not found; install them: {INSTALL_HINT}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return binary


@contextmanager
def chromium() -> Iterator[WebDriver]:
    """A headless Chromium through the system chromedriver, quit afterwards."""
    options = webdriver.ChromeOptions()
    options.binary_location = chromium_binary()
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait_until(condition: Callable[[], Any], timeout: float, what: str, poll: float = 0.5) -> Any:
    """Poll ``condition`` until it returns a truthy value (returned); fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@dataclass
class DagsterDev:
    """A running ``dagster dev`` (webserver + daemon) in its own process group."""

    root: Path
    port: int
    process: subprocess.Popen[bytes]
    env: dict[str, str] = field(repr=False)
    started: float = field(default_factory=time.monotonic)
    """``time.monotonic()`` when ``dagster dev`` was started."""
    home_name: str = "dagster_home"
    """The instance's folder under ``root``."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def home(self) -> Path:
        return self.root / self.home_name

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "dagster-dev.log"

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def graphql(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(f"{self.url}/graphql", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            answer: dict[str, Any] = json.load(response)
        assert "errors" not in answer, answer["errors"]
        return answer["data"]

    def location_loaded(self) -> bool:
        """The code location is loaded (a load error fails at once, with Dagster's message)."""
        assert self.process.poll() is None, f"dagster dev exited ({self.process.returncode}):\n{self.log_tail()}"
        try:
            workspace = self.graphql(LOCATION_QUERY)["workspaceOrError"]
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False  # the webserver is not answering yet
        entries = workspace.get("locationEntries") or []
        for entry in entries:
            loaded = entry["locationOrLoadError"] or {}
            assert loaded.get("__typename") != "PythonError", f"code location failed to load: {loaded['message']}"
        return bool(entries) and all(e["loadStatus"] == "LOADED" and e["locationOrLoadError"] for e in entries)

    def backfill_status(self, backfill_id: str) -> str:
        query = (
            "query($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill { status } } }"
        )
        return str(self.graphql(query, {"id": backfill_id})["partitionBackfillOrError"]["status"])


@contextmanager
def dagster_dev(root: Path, startup_timeout: float = 240) -> Iterator[DagsterDev]:
    """``dagster dev -m datacoolie_dagster.definitions`` with ``root`` as working directory.

    ``root/dagster_home`` gets the repository's ``dagster.yaml``; the example's relative paths
    (``./data/...``) and ``DATACOOLIE_HOME`` resolve under ``root``. Yields once the code location
    is loaded; stops the whole process group afterwards (interrupt, then kill).
    """
    home = root / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPOSITORY / "dagster.yaml", home / "dagster.yaml")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DATACOOLIE_", "DAGSTER_"))}
    env = base | {"DAGSTER_HOME": str(home), "DATACOOLIE_HOME": str(root / "data")}
    port = free_port()
    args = [str(BIN / "dagster"), "dev", *CODE_LOCATION, "-d", str(root), "-h", "127.0.0.1", "-p", str(port)]
    with _serving(root, args, env, port, "dagster_home", startup_timeout) as dev:
        yield dev


@contextmanager
def make_ui(root: Path, env: dict[str, str], startup_timeout: float = 240) -> Iterator[DagsterDev]:
    """``./make.sh ui -h 127.0.0.1 -p PORT`` in ``root`` (a clone), as the README has a user run it:
    the instance in ``root/.dagster``; yields once the code location is loaded."""
    port = free_port()
    args = ["./make.sh", "ui", "-h", "127.0.0.1", "-p", str(port)]
    with _serving(root, args, env, port, ".dagster", startup_timeout) as dev:
        yield dev


@contextmanager
def _serving(
    root: Path, args: list[str], env: dict[str, str], port: int, home_name: str, startup_timeout: float
) -> Iterator[DagsterDev]:
    with (root / "dagster-dev.log").open("ab") as log:
        process = subprocess.Popen(
            args, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )  # fmt: skip
    dev = DagsterDev(root, port, process, env, home_name=home_name)
    try:
        wait_until(dev.location_loaded, startup_timeout, f"dagster dev on port {port} to load the code location")
        yield dev
    finally:
        _stop_group(process)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """Ctrl-C for the whole group (webserver, daemon, code servers, runs); SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGINT)
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=15)
    try:
        os.killpg(process.pid, signal.SIGKILL)  # children outlive the leader on an interrupt
    except ProcessLookupError:
        return
    process.wait(timeout=10)


class Shots:
    """Numbered screenshots and page sources of every step, in one folder (rewritten per run)."""

    def __init__(self, driver: WebDriver, folder: Path) -> None:
        self.driver, self.folder, self.count = driver, folder, 0
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        ignore = folder.parent / ".gitignore"  # screenshots are never committed
        if not ignore.exists():
            ignore.write_text("*\n")

    def take(self, step: str) -> Path:
        self.count += 1
        stem = self.folder / f"{self.count:02d}-{re.sub(r'[^a-z0-9]+', '-', step.lower()).strip('-')}"
        self.driver.save_screenshot(str(stem.with_suffix(".png")))
        stem.with_suffix(".html").write_text(self.driver.page_source, encoding="utf-8")
        return stem.with_suffix(".png")
