"""System log: datacoolie records as JSON lines with the dataflow in context, redacted (DataCoolie L-04)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core.logging import SystemLogger, current_dataflow_id, dataflow_context

LOG = logging.getLogger("datacoolie.tests.system")


def lines(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in sorted(root.rglob("*.jsonl")) for line in path.read_text("utf-8").splitlines()]


@pytest.fixture
def system_log(tmp_path: Path) -> Iterator[SystemLogger]:
    logger = SystemLogger(tmp_path / "system_logs", session_id="s-1")
    yield logger
    logger.close()


def test_records_land_in_the_session_file_of_their_date(system_log: SystemLogger) -> None:
    LOG.info("loaded %d dataflows", 3)

    today = datetime.now(UTC).date().isoformat()
    path = system_log.root / f"run_date={today}" / "system_s-1.jsonl"
    (row,) = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    assert {k: row[k] for k in ("level", "logger", "msg", "dataflow_id", "module", "func", "exc_info")} == {
        "level": "INFO",
        "logger": "datacoolie.tests.system",
        "msg": "loaded 3 dataflows",
        "dataflow_id": None,
        "module": "test_system_logger",
        "func": "test_records_land_in_the_session_file_of_their_date",
        "exc_info": None,
    }
    assert isinstance(row["line"], int)
    assert datetime.fromisoformat(row["ts"]).tzinfo is not None


def test_a_record_goes_to_the_partition_of_its_creation_time(system_log: SystemLogger) -> None:
    record = LOG.makeRecord(LOG.name, logging.WARNING, __file__, 1, "late", (), None)
    record.created = datetime(2025, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()
    LOG.handle(record)

    (row,) = lines(system_log.root / "run_date=2025-12-31")
    assert (row["msg"], row["ts"]) == ("late", "2025-12-31T23:59:59+00:00")


def test_the_dataflow_id_comes_from_the_context_or_the_record(system_log: SystemLogger) -> None:
    with dataflow_context("df-1"):
        LOG.info("inside")
        with dataflow_context("df-2"):
            LOG.info("nested")
        LOG.info("explicit", extra={"dataflow_id": "df-9"})
    LOG.info("outside")

    assert [(r["msg"], r["dataflow_id"]) for r in lines(system_log.root)] == [
        ("inside", "df-1"),
        ("nested", "df-2"),
        ("explicit", "df-9"),
        ("outside", None),
    ]
    assert current_dataflow_id.get() is None


def test_level_and_namespace_decide_what_is_captured(tmp_path: Path) -> None:
    with SystemLogger(tmp_path, session_id="s", level=logging.WARNING):
        LOG.info("below the level")
        LOG.warning("kept")
        logging.getLogger("datacoolie_core.destinations.delta").error("core module")
        logging.getLogger("someone.else").error("not ours")

    assert [r["msg"] for r in lines(tmp_path)] == ["kept", "core module"]


def test_close_detaches_restores_the_level_and_is_idempotent(tmp_path: Path) -> None:
    namespace = logging.getLogger("datacoolie")
    original = namespace.level
    logger = SystemLogger(tmp_path, session_id="s", level=logging.DEBUG)
    assert namespace.level == logging.DEBUG
    LOG.debug("while open")

    logger.close()
    logger.close()
    LOG.error("after close")

    assert logger.closed
    assert namespace.level == original
    assert [r["msg"] for r in lines(tmp_path)] == ["while open"]


def test_two_sessions_each_capture_until_their_own_close(tmp_path: Path) -> None:
    first = SystemLogger(tmp_path / "a", session_id="a", level=logging.DEBUG)
    second = SystemLogger(tmp_path / "b", session_id="b", level=logging.DEBUG)
    LOG.debug("both")
    first.close()
    LOG.debug("second only")
    second.close()

    assert [r["msg"] for r in lines(tmp_path / "a")] == ["both"]
    assert [r["msg"] for r in lines(tmp_path / "b")] == ["both", "second only"]


def test_secrets_are_redacted_in_messages_and_tracebacks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("APP_DB_PASSWORD", "hunter2-pw")
    with SystemLogger(tmp_path, session_id="s", secrets=[os.environ["APP_DB_PASSWORD"]]) as system_log:
        system_log.add_secrets(["token-late"])
        LOG.info("connecting with %s / %s", "hunter2-pw", "token-late")
        try:
            raise RuntimeError("authentication failed: password=hunter2-pw")
        except RuntimeError:
            LOG.exception("read failed")

    text = "".join(p.read_text("utf-8") for p in tmp_path.rglob("*.jsonl"))
    assert "hunter2-pw" not in text
    assert "token-late" not in text
    info, error = lines(tmp_path)
    assert info["msg"] == "connecting with *** / ***"
    assert error["level"] == "ERROR"
    assert "RuntimeError: authentication failed: password=***" in error["exc_info"]


def test_concurrent_threads_produce_whole_lines(system_log: SystemLogger) -> None:
    def work(thread: int) -> None:
        with dataflow_context(f"df-{thread}"):
            for i in range(100):
                LOG.info("row %d %s", i, "y" * (i * 41))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    rows = lines(system_log.root)
    assert len(rows) == 800
    assert {r["dataflow_id"]: 0 for r in rows}.keys() == {f"df-{t}" for t in range(8)}
    for thread in range(8):
        mine = [int(r["msg"].split()[1]) for r in rows if r["dataflow_id"] == f"df-{thread}"]
        assert mine == list(range(100))


def test_storage_failures_never_raise_or_recurse(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    caplog.set_level(logging.INFO)
    with SystemLogger(blocker, session_id="s"):
        LOG.info("one")
        LOG.info("two")

    reports = [r for r in caplog.records if r.name == "datacoolie.logging"]
    assert len(reports) == 1
    assert "writing the log failed" in reports[0].getMessage()


CRASHING_SESSION = """
import logging, os, signal, sys
from datacoolie_core.logging import SystemLogger

SystemLogger(sys.argv[1], session_id="crash")
for i in range(3):
    logging.getLogger("datacoolie.crash").warning("record %d", i)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_records_logged_before_a_sigkill_survive(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CRASHING_SESSION, str(tmp_path)], check=False, timeout=60)

    assert done.returncode == -signal.SIGKILL
    assert [r["msg"] for r in lines(tmp_path)] == ["record 0", "record 1", "record 2"]
