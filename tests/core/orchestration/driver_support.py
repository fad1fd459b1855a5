"""Shared pieces of the driver tests: a metadata builder, python-function sources, log readers.

The functions below are named by ``source.python_function`` in the test metadata
(``tests.core.orchestration.driver_support.<name>``); the function reader imports this module, so
the tests and the worker threads share its module-level events.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from datacoolie_core.errors import MetadataError, SourceError, TransientError
from datacoolie_core.models.dataflow import Source
from datacoolie_core.sources.base import ReadRange

HERE = "tests.core.orchestration.driver_support"
T0 = datetime(2025, 1, 1, tzinfo=UTC)

# --- python-function sources -----------------------------------------------------------------

STARTED = threading.Event()
"""Set by :func:`blocking_orders` once it is running."""
RELEASE = threading.Event()
""":func:`blocking_orders` returns once this is set."""


def orders_frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "order_id": [1, 2, 3],
            "amount": [10.0, 20.0, 30.0],
            "updated_at": [datetime(2025, 1, 5), datetime(2025, 2, 10), datetime(2025, 3, 15)],
        },
        schema_overrides={"updated_at": pl.Datetime("us")},
    )


def orders(*, source: Source, watermark: Any, read_range: ReadRange | None) -> pl.DataFrame:
    """Three orders in January, February and March 2025."""
    return orders_frame()


def blocking_orders(*, source: Source, watermark: Any, read_range: ReadRange | None) -> pl.DataFrame:
    """Orders, once the test sets :data:`RELEASE` (a dataflow that is 'inside' its run)."""
    STARTED.set()
    if not RELEASE.wait(timeout=20):
        raise SourceError("blocking_orders was never released")
    return orders_frame()


def flaky_orders(*, source: Source, watermark: Any, read_range: ReadRange | None) -> pl.DataFrame:
    """Fails transiently ``configure.failures`` times (counted in ``configure.counter_file``), then reads."""
    extras = source.configure.extras
    counter = Path(extras["counter_file"])
    calls = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(calls + 1))
    if calls < int(extras.get("failures", 2)):
        raise TransientError(f"attempt {calls + 1}: the orders service is busy")
    return orders_frame()


def counted_orders(*, source: Source, watermark: Any, read_range: ReadRange | None) -> pl.DataFrame:
    """Orders; every call appends a line to ``configure.counter_file`` (did the source run?)."""
    with open(source.configure.extras["counter_file"], "a", encoding="utf-8") as f:
        f.write("called\n")
    return orders_frame()


def broken_metadata_orders(*, source: Source, watermark: Any, read_range: ReadRange | None) -> pl.DataFrame:
    """Counts its calls in ``configure.counter_file``, then fails with a metadata-class (terminal) error."""
    counted_orders(source=source, watermark=watermark, read_range=read_range)
    raise MetadataError("the orders mapping names no key column")


GAUGE_LOCK = threading.Lock()
GAUGE = {"running": 0, "peak": 0}
"""How many :func:`gauged_orders` calls run at once, and the most there ever were."""


def gauged_orders(*, source: Source, watermark: Any, read_range: ReadRange | None) -> pl.DataFrame:
    """Orders, after holding a worker for a moment while the gauge counts concurrent calls."""
    with GAUGE_LOCK:
        GAUGE["running"] += 1
        GAUGE["peak"] = max(GAUGE["peak"], GAUGE["running"])
    try:
        time.sleep(0.15)
    finally:
        with GAUGE_LOCK:
            GAUGE["running"] -= 1
    return orders_frame()


def leaky_orders(*, source: Source, watermark: Any, read_range: ReadRange | None) -> pl.DataFrame:
    """Fails with an error message that carries the connection's resolved password."""
    raise SourceError(f"login refused for password {source.connection.configure.password}")


def failing_in_march(*, source: Source, watermark: Any, read_range: ReadRange | None) -> pl.DataFrame:
    """Orders, except that a read range reaching into March fails (a broken chunk)."""
    if read_range is not None and str(read_range.start) >= "2025-03-01":
        raise SourceError("the March extract is corrupt")
    return orders_frame()


def slow_orders(*, source: Source, watermark: Any, read_range: ReadRange | None) -> pl.DataFrame:
    """Touches ``configure.started_file``, then takes ``configure.seconds`` (a long-running read)."""
    extras = source.configure.extras
    Path(extras["started_file"]).write_text("started")
    time.sleep(float(extras.get("seconds", 2)))
    return orders_frame()


# --- metadata -------------------------------------------------------------------------------


@dataclass
class Lake:
    """A test's metadata document, written to ``<root>/meta/metadata.json``, and its storage roots."""

    root: Path
    connections: list[dict[str, Any]] = field(default_factory=list)
    dataflows: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.connections:
            self.connections = [
                {"name": "landing", "format": "parquet", "configure": {"base_path": str(self.root / "landing")}},
                {"name": "lake", "format": "delta", "configure": {"base_path": str(self.root / "lake")}},
                {"name": "fn", "format": "function"},
            ]

    @property
    def metadata_path(self) -> Path:
        return self.root / "meta" / "metadata.json"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def add(self, name: str, *, table: str | None = None, stage: str = "bronze2silver", **extra: Any) -> Lake:
        """A dataflow from ``fn`` (function ``orders`` unless ``source`` is given) to ``lake.<table>``."""
        source = extra.pop("source", {"connection_name": "fn", "python_function": f"{HERE}.orders"})
        destination = {"connection_name": "lake", "table": table or name} | extra.pop("destination", {})
        self.dataflows.append({"name": name, "stage": stage, "source": source, "destination": destination, **extra})
        return self

    def write(self) -> Path:
        self.metadata_path.parent.mkdir(parents=True, exist_ok=True)
        self.metadata_path.write_text(
            json.dumps({"connections": self.connections, "dataflows": self.dataflows}, indent=2), encoding="utf-8"
        )
        return self.metadata_path

    def table(self, name: str, *, sort: str = "order_id") -> pl.DataFrame:
        return pl.read_delta(str(self.root / "lake" / name)).sort(sort)

    def has_table(self, name: str) -> bool:
        return (self.root / "lake" / name / "_delta_log").is_dir()


def function_source(function: str, **configure: Any) -> dict[str, Any]:
    """A ``source`` block calling ``driver_support.<function>``."""
    source: dict[str, Any] = {"connection_name": "fn", "python_function": f"{HERE}.{function}"}
    if configure:
        source["configure"] = configure
    return source


# --- logs -----------------------------------------------------------------------------------


def log_lines(folder: Path) -> list[dict[str, Any]]:
    """Every JSON line (or JSON document) under ``folder``, parsed, in file then line order."""
    rows: list[dict[str, Any]] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json")):
        rows.extend(json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return rows


def job_rows(logs: Path) -> list[dict[str, Any]]:
    return log_lines(logs / "execution_logs" / "job_run_log")


def dataflow_rows(logs: Path) -> list[dict[str, Any]]:
    return log_lines(logs / "execution_logs" / "dataflow_run_log")


def system_rows(logs: Path) -> list[dict[str, Any]]:
    return log_lines(logs / "system_logs")


def all_log_text(logs: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(logs.rglob("*")) if p.is_file())


def orders_from_file(*, source: Source, watermark: Any, read_range: ReadRange | None) -> pl.DataFrame:
    """The orders in the parquet file ``configure.orders_file`` (a test rewrites it between loads)."""
    return pl.read_parquet(source.configure.extras["orders_file"])
