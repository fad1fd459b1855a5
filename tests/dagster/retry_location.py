"""A small code location for the retry, limit and PostgreSQL daemon tests.

``flaky`` fails until it has been attempted ``DATACOOLIE_TEST_FAILURES`` times (attempts are counted
in a file under ``DATACOOLIE_TEST_DIR``); ``pooled`` holds the pool of pipeline ``p`` for a second;
``hello`` succeeds. The retry sensor uses ``DATACOOLIE_TEST_BASE_DELAY`` seconds as its base delay.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import dagster as dg

from datacoolie_dagster.limits import pool_for
from datacoolie_dagster.retries import build_retry_sensor

JITTER = 0.1


@dg.op
def flaky_op() -> None:
    attempts = Path(os.environ["DATACOOLIE_TEST_DIR"]) / "attempts"
    with attempts.open("a") as f:
        f.write("x\n")
    if len(attempts.read_text().splitlines()) <= int(os.environ.get("DATACOOLIE_TEST_FAILURES", "2")):
        raise dg.Failure("flaky: failing on purpose")


@dg.op(pool=pool_for("p"))
def pooled_op() -> None:
    time.sleep(1.0)


@dg.op
def hello_op() -> None:
    pass


@dg.job
def flaky() -> None:
    flaky_op()


@dg.job
def pooled() -> None:
    pooled_op()


@dg.job
def hello() -> None:
    hello_op()


defs = dg.Definitions(
    jobs=[flaky, pooled, hello],
    sensors=[
        build_retry_sensor(
            base_delay_seconds=float(os.environ.get("DATACOOLIE_TEST_BASE_DELAY", "1")),
            jitter=JITTER,
            jobs=[flaky],
            minimum_interval_seconds=1,
        )
    ],
)
