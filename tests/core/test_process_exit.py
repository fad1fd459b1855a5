"""A process that ran a driver or a command skips the exit's last full collection, and loses nothing by it.

:mod:`datacoolie_core.process_exit`: the objects alive at exit are frozen by an ``atexit`` hook.
Each probe runs in a fresh interpreter and registers its own hook first, which therefore runs
after ours (``atexit`` is last in, first out) and reports what the exit sees.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPORT_AT_EXIT = """
import atexit, gc, logging, weakref
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count(), flush=True))
logging.basicConfig(filename="run.log", level=logging.INFO)
"""

STILL_RUN_AT_EXIT = """
class Kept:
    pass
kept = Kept()
weakref.finalize(kept, print, "finalize callback ran", flush=True)
logging.getLogger("probe").info("logged after the run")
"""


def run_probe(code: str, cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, check=True)
    return done.stdout


def frozen_at_exit(stdout: str) -> int:
    line = next(line for line in stdout.splitlines() if line.startswith("frozen at exit:"))
    return int(line.split(":")[1])


def write_metadata(folder: Path) -> None:
    connections = [{"name": "lake", "format": "delta", "configure": {"base_path": "./lake"}}]
    (folder / "metadata.json").write_text(json.dumps({"connections": connections, "dataflows": []}))


def test_a_driver_process_exits_with_its_objects_frozen_and_still_flushes_logs_and_finalizers(tmp_path: Path) -> None:
    write_metadata(tmp_path)
    driver = (
        "from datacoolie_core.orchestration.driver import DataCoolieDriver\n"
        "with DataCoolieDriver(metadata_base_path='metadata.json', state_base_path='state'):\n"
        "    pass\n"
    )
    stdout = run_probe(REPORT_AT_EXIT + driver + STILL_RUN_AT_EXIT, tmp_path)

    assert frozen_at_exit(stdout) > 10_000  # the imports' objects at least: the last collection skips them
    assert "finalize callback ran" in stdout
    assert "logged after the run" in (tmp_path / "run.log").read_text()


def test_a_command_process_exits_with_its_objects_frozen(tmp_path: Path) -> None:
    write_metadata(tmp_path)
    command = "from datacoolie_core.cli import main\nassert main(['validate', 'metadata.json']) == 0\n"

    assert frozen_at_exit(run_probe(REPORT_AT_EXIT + command, tmp_path)) > 10_000


def test_a_process_that_only_imports_the_engine_keeps_the_last_collection(tmp_path: Path) -> None:
    # importing is no reason to change a process's exit: only running a driver or a command is
    code = "import datacoolie_core.orchestration.driver, datacoolie_core.cli\n"

    assert frozen_at_exit(run_probe(REPORT_AT_EXIT + code, tmp_path)) == 0
