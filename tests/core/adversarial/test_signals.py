"""SIGTERM and SIGINT stop ``datacoolie validate`` and ``datacoolie run`` promptly: exit 128 + signum.

Real subprocesses, real signals. A signal is sent once the command has installed its handlers
(read from ``/proc/<pid>/status``), while it is busy: validating a large legal document, or running
a dataflow whose read takes two minutes. No timing is asserted; ``communicate(timeout=...)`` only
keeps a broken build from hanging the suite.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.core.adversarial.support import CLI, REPO
from tests.core.orchestration.driver_support import Lake, function_source


def large_document(dataflows: int) -> dict[str, Any]:
    """A legal document that takes seconds to validate (pure-Python YAML parsing)."""
    return {
        "connections": [{"name": "lake", "connection_type": "lakehouse", "configure": {"base_path": "lake"}}],
        "dataflows": [
            {
                "name": f"flow_{i}",
                "stage": "bronze",
                "source": {"connection_name": "lake", "table": f"t{i}", "watermark_columns": "a,b"},
                "destination": {"connection_name": "lake", "table": f"o{i}", "load_type": "merge_upsert", "merge_keys": ["id"]},
            }
            for i in range(dataflows)
        ],
    }  # fmt: skip


def start(*argv: str) -> subprocess.Popen[str]:
    process = subprocess.Popen([*CLI, *argv], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_handlers(process)
    return process


def _wait_for_handlers(process: subprocess.Popen[str], limit: float = 120) -> None:
    """Until the child catches SIGTERM (bit 15 of SigCgt): the command has entered ``main``."""
    deadline = time.monotonic() + limit
    status = Path(f"/proc/{process.pid}/status")
    while time.monotonic() < deadline and process.poll() is None:
        caught = next((line.split()[1] for line in status.read_text().splitlines() if line.startswith("SigCgt")), "0")
        if int(caught, 16) & (1 << (signal.SIGTERM - 1)):
            return
        time.sleep(0.02)
    raise AssertionError(f"the command never installed its handlers: {process.communicate()}")


def stop(process: subprocess.Popen[str], signum: int) -> tuple[str, str]:
    try:
        process.send_signal(signum)
        return process.communicate(timeout=60)
    finally:
        process.kill()


@pytest.fixture(scope="module")
def large_yaml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("signals") / "large.yaml"
    path.write_text(yaml.safe_dump(large_document(8_000)), encoding="utf-8")
    return path


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_a_long_validate(large_yaml: Path, signum: int) -> None:
    process = start("validate", str(large_yaml))
    time.sleep(0.5)  # well inside the parse, which takes seconds
    assert process.poll() is None, "the document must take longer to validate than this"

    out, err = stop(process, signum)

    assert process.returncode == 128 + signum, err
    assert f"interrupted (stopped by {signal.Signals(signum).name})" in err
    assert "Traceback" not in err
    assert "OK:" not in out


def test_sigterm_stops_a_run_whose_dataflow_does_not_finish(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    started = tmp_path / "started"
    lake.add("stuck", source=function_source("slow_orders", started_file=str(started), seconds=120)).write()
    process = start("run", "--metadata", str(lake.metadata_path))
    deadline = time.monotonic() + 120
    while not started.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert started.exists(), process.communicate()

    _out, err = stop(process, signal.SIGTERM)

    # the driver is closed cleanly, then the read still in flight is cut off by the watchdog
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "SIGTERM received: stopping (at most 3s; again to stop now)" in err
    assert "stopped by SIGTERM: the command did not stop cleanly within 3s" in err
    assert "Traceback" not in err
    assert not lake.has_table("stuck")


def test_a_second_signal_stops_at_once(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    started = tmp_path / "started"
    lake.add("stuck", source=function_source("slow_orders", started_file=str(started), seconds=120)).write()
    process = start("run", "--metadata", str(lake.metadata_path))
    while not started.exists() and process.poll() is None:
        time.sleep(0.02)

    process.send_signal(signal.SIGINT)
    time.sleep(0.2)
    _out, err = stop(process, signal.SIGTERM)

    assert process.returncode in (128 + signal.SIGTERM, 128 + signal.SIGINT), err
    assert "Traceback" not in err
