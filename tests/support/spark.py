"""Apache Spark in local mode: the oracle our SQL compiler and file readers are checked against.

One ``SparkSession`` per test process (a JVM start costs seconds; each pytest-xdist worker that
runs a Spark test starts its own). Spark runs with the defaults of the Spark 3.5 runtimes
DataCoolie's users run (``spark.sql.ansi.enabled=false``), in UTC, so a difference between Spark
and us is a difference in semantics, never in the machine's settings.

A missing ``pyspark`` or Java skips the oracle tests with the install command, except under ``CI``
where they fail: a CI run must never pass by skipping its oracle.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

import pytest

INSTALL_HINT = "apt-get install -y openjdk-17-jre-headless && pip install -c constraints.txt -e '.[dev,oracle]'"
SPARK_CONF = {
    "spark.sql.ansi.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC -XX:+UseSerialGC",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
}


def missing() -> str | None:
    """Why Spark cannot start here, or ``None``."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "java is not installed"
    return None


def start_spark() -> Any:
    """A local-mode SparkSession with :data:`SPARK_CONF` (skips or, under CI, fails when impossible)."""
    reason = missing()
    if reason is not None:
        message = f"Spark oracle unavailable: {reason} ({INSTALL_HINT})"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    os.environ.setdefault("TZ", "UTC")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[1]").appName("datacoolie-oracle")
    for key, value in SPARK_CONF.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
