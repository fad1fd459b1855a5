"""A small code location for the retry daemon tests (SQLite and PostgreSQL).

``flaky`` fails until it has been attempted ``DATACOOLIE_TEST_FAILURES`` times (attempts are counted
in a file under ``DATACOOLIE_TEST_DIR``); ``killed_once`` SIGKILLs its own run worker on the first
attempt of each chain of retries (keyed by the root run) and succeeds afterwards. The retry sensor uses
``DATACOOLIE_TEST_BASE_DELAY`` seconds as its base delay.
"""

# No ``from __future__ import annotations``: Dagster introspects the ops' signatures at load time.

import os
import signal
from pathlib import Path

import dagster as dg

from datacoolie_dagster.automation.retries import build_retry_sensor
from datacoolie_dagster.automation.retry_policy import ROOT_RUN_ID

JITTER = 0.1


@dg.op
def flaky_op() -> None:
    attempts = Path(os.environ["DATACOOLIE_TEST_DIR"]) / "attempts"
    with attempts.open("a") as f:
        f.write("x\n")
    if len(attempts.read_text().splitlines()) <= int(os.environ.get("DATACOOLIE_TEST_FAILURES", "2")):
        raise dg.Failure("flaky: failing on purpose")


@dg.op
def killed_once_op(context: dg.OpExecutionContext) -> None:
    """SIGKILL this process (the run worker: the job runs in process) unless the chain already tried."""
    root = context.run.tags.get(ROOT_RUN_ID, context.run_id)
    marker = Path(os.environ["DATACOOLIE_TEST_DIR"]) / f"killed-{root}"
    if not marker.exists():
        marker.touch()
        os.kill(os.getpid(), signal.SIGKILL)


# In process: one process per run starts faster, and the op's process is the run worker itself.
@dg.job(executor_def=dg.in_process_executor)
def flaky() -> None:
    flaky_op()


@dg.job(executor_def=dg.in_process_executor)
def killed_once() -> None:
    killed_once_op()


defs = dg.Definitions(
    jobs=[flaky, killed_once],
    sensors=[
        build_retry_sensor(
            base_delay_seconds=float(os.environ.get("DATACOOLIE_TEST_BASE_DELAY", "1")),
            jitter=JITTER,
            jobs=[flaky, killed_once],
            minimum_interval_seconds=1,
        )
    ],
)
