"""Execution log: JSON lines per dataflow, an atomic job snapshot, redaction, crash and thread safety (L-05 … L-10)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core.logging import LOG_SCHEMA_VERSION, ExecutionLogger
from datacoolie_core.models import Connection, DataFlow
from datacoolie_core.models.runtime import DataFlowRuntimeInfo
from datacoolie_core.orchestration.preparation import QueryRoots, prepare_dataflow
from datacoolie_core.platform import LocalPlatform
from datacoolie_core.secrets import secret_values

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def dataflow() -> DataFlow:
    connections = {
        "warehouse": Connection.model_validate(
            {
                "name": "warehouse",
                "connection_type": "database",
                "configure": {"database_type": "postgresql", "host": "db", "password": "WAREHOUSE_PASSWORD"},
                "secrets_ref": {"env:APP_": ["password"]},
            }
        ),
        "lake": Connection.model_validate({"name": "lake", "format": "delta", "configure": {"base_path": "/lake"}}),
    }
    return DataFlow.model_validate(
        {
            "name": "orders",
            "stage": "bronze2silver",
            "group_number": 2,
            "execution_order": 10,
            "source": {"connection_name": "warehouse", "query": "SELECT * FROM orders"},
            "destination": {
                "connection_name": "lake",
                "schema_name": "silver",
                "table": "orders",
                "load_type": "merge_upsert",
                "merge_keys": ["id"],
            },
        },
        context={"connections": connections},
    )


def runtime(status: str = "succeeded", **fields: Any) -> DataFlowRuntimeInfo:
    record = DataFlowRuntimeInfo(dataflow_id="df-1", dataflow_name="orders", **fields)
    record.finish(status)  # type: ignore[arg-type]
    return record


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


class Clock:
    def __init__(self, *times: datetime) -> None:
        self.times = list(times)

    def __call__(self) -> datetime:
        return self.times.pop(0) if len(self.times) > 1 else self.times[0]


def test_a_dataflow_row_lands_in_its_date_partition_with_the_authored_identity(tmp_path: Path) -> None:
    flow = dataflow()
    with ExecutionLogger(tmp_path, job_id="job-1", clock=Clock(T0)) as log:
        log.log_dataflow(runtime(), flow)
        log.log_dataflow(runtime("failed"))

    (first, second) = read_lines(tmp_path / "dataflow_run_log" / "run_date=2026-03-01" / "job_job-1.jsonl")
    assert first["_type"] == "dataflow_run_log"
    assert (first["log_schema_version"], first["job_id"], first["logged_at"]) == (
        LOG_SCHEMA_VERSION,
        "job-1",
        "2026-03-01T12:00:00+00:00",
    )
    assert {k: first[k] for k in ("dataflow_id", "dataflow_name", "status", "operation_type")} == {
        "dataflow_id": "df-1",
        "dataflow_name": "orders",
        "status": "succeeded",
        "operation_type": "etl",
    }
    assert {k: first[k] for k in ("stage", "group_number", "execution_order")} == {
        "stage": "bronze2silver",
        "group_number": 2,
        "execution_order": 10,
    }
    assert (first["source_connection"], first["source_query"]) == ("warehouse", "SELECT * FROM orders")
    assert (first["destination_connection"], first["destination_schema"], first["destination_table"]) == (
        "lake",
        "silver",
        "orders",
    )
    assert first["destination_load_type"] == "merge_upsert"
    assert second["status"] == "failed"
    assert "source_query" not in second


def test_the_log_keeps_the_query_reference_not_the_file_content(tmp_path: Path) -> None:
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "orders.sql").write_text("SELECT 42", encoding="utf-8")
    authored = dataflow().model_copy(deep=True)
    authored.source.query = "orders.sql"
    prepared = prepare_dataflow(authored, roots=QueryRoots(sql_base_paths=(tmp_path / "sql",)), secrets=None)
    record = runtime()
    record.source.source_action = {"query": prepared.source.query}

    with ExecutionLogger(tmp_path / "logs", job_id="j", clock=Clock(T0)) as log:
        log.log_dataflow(record, authored)

    (row,) = read_lines(log.dataflow_log_path(T0))
    assert (row["source_query"], row["source"]["source_action"]["query"]) == ("orders.sql", "SELECT 42")


def test_rows_are_partitioned_by_the_utc_date_they_are_written(tmp_path: Path) -> None:
    before_midnight = datetime(2025, 12, 31, 23, 59, 59, tzinfo=UTC)
    after_midnight_local = datetime(2026, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=2)))  # still 2025 in UTC
    after_midnight = datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)
    with ExecutionLogger(
        tmp_path, job_id="j", clock=Clock(before_midnight, before_midnight, after_midnight_local, after_midnight)
    ) as log:
        for _ in range(3):
            log.log_dataflow(runtime())

    folder = tmp_path / "dataflow_run_log"
    assert sorted(p.name for p in folder.iterdir()) == ["run_date=2025-12-31", "run_date=2026-01-01"]
    assert len(read_lines(folder / "run_date=2025-12-31" / "job_j.jsonl")) == 2
    assert len(read_lines(folder / "run_date=2026-01-01" / "job_j.jsonl")) == 1


def test_values_are_json_encoded(tmp_path: Path) -> None:
    record = runtime()
    record.source.watermark_after = {
        "updated_at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        "day": date(2026, 1, 2),
        "amount": Decimal("12.50"),
        "file": Path("/landing/a.parquet"),
    }
    with ExecutionLogger(tmp_path, job_id="a/b c", clock=Clock(T0)) as log:
        log.log_dataflow(record)

    (row,) = read_lines(tmp_path / "dataflow_run_log" / "run_date=2026-03-01" / "job_a%2Fb%20c.jsonl")
    assert row["source"]["watermark_after"] == {
        "updated_at": "2026-01-02T03:04:05+00:00",
        "day": "2026-01-02",
        "amount": "12.50",
        "file": "/landing/a.parquet",
    }
    assert row["start_time"] == record.start_time.isoformat()


def test_secrets_from_the_environment_are_redacted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("APP_WAREHOUSE_PASSWORD", "hunter2-pw")
    monkeypatch.setenv("OTHER_SECRET", "late-added-secret")
    prepared = prepare_dataflow(dataflow(), roots=QueryRoots(), secrets=LocalPlatform())
    record = runtime()
    record.finish("failed", error=RuntimeError("login failed for password hunter2-pw"))
    record.source.source_action = {"hunter2-pw": ["late-added-secret"]}

    with ExecutionLogger(tmp_path, job_id="j", secrets=secret_values(prepared.source.connection)) as log:
        log.add_secrets([os.environ["OTHER_SECRET"]])
        log.log_dataflow(record, dataflow())
        log.log_job({"error_message": "orders: hunter2-pw"})

    text = "".join(p.read_text(encoding="utf-8") for p in tmp_path.rglob("job_j.json*"))
    assert "hunter2-pw" not in text
    assert "late-added-secret" not in text
    (row,) = read_lines(next(tmp_path.rglob("job_j.jsonl")))
    assert row["error_message"] == "login failed for password ***"
    assert row["source"]["source_action"] == {"***": ["***"]}


def test_the_job_snapshot_is_rewritten_atomically(tmp_path: Path) -> None:
    log = ExecutionLogger(tmp_path, job_id="job-9", clock=Clock(T0))
    log.log_job({"status": "running", "total_dataflows": 2})
    log.log_job({"status": "succeeded", "total_dataflows": 2, "end_time": T0 + timedelta(minutes=5)})
    log.close()

    folder = tmp_path / "job_run_log" / "run_date=2026-03-01"
    assert [p.name for p in folder.iterdir()] == ["job_job-9.json"]  # no temp file left behind
    document = json.loads((folder / "job_job-9.json").read_text(encoding="utf-8"))
    assert document == {
        "_type": "job_run_log",
        "log_schema_version": LOG_SCHEMA_VERSION,
        "job_id": "job-9",
        "logged_at": "2026-03-01T12:00:00+00:00",
        "status": "succeeded",
        "total_dataflows": 2,
        "end_time": "2026-03-01T12:05:00+00:00",
    }


def test_close_is_idempotent_and_logging_after_close_raises(tmp_path: Path) -> None:
    log = ExecutionLogger(tmp_path, job_id="j")
    log.close()
    log.close()
    assert log.closed
    with pytest.raises(RuntimeError, match="closed"):
        log.log_dataflow(runtime())
    with pytest.raises(RuntimeError, match="closed"):
        log.log_job({})


def test_storage_failures_are_reported_once_and_never_raised(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    caplog.set_level(logging.WARNING, logger="datacoolie.logging")

    with ExecutionLogger(blocker, job_id="j") as log:
        log.log_dataflow(runtime())
        log.log_dataflow(runtime())
        log.log_job({"status": "succeeded"})

    reports = [r for r in caplog.records if r.name == "datacoolie.logging"]
    assert len(reports) == 1
    assert "writing the log failed" in reports[0].getMessage()


def test_concurrent_writers_produce_whole_lines(tmp_path: Path) -> None:
    log = ExecutionLogger(tmp_path, job_id="j")

    def work(thread: int) -> None:
        for i in range(100):
            log.log_dataflow(DataFlowRuntimeInfo(dataflow_id=f"{thread}-{i}", dataflow_name="x" * (i * 37)))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()

    rows = [row for path in tmp_path.rglob("*.jsonl") for row in read_lines(path)]
    assert sorted(r["dataflow_id"] for r in rows) == sorted(f"{t}-{i}" for t in range(8) for i in range(100))


CRASHING_JOB = """
import os, signal, sys
from datacoolie_core.logging import ExecutionLogger
from datacoolie_core.models.runtime import DataFlowRuntimeInfo

log = ExecutionLogger(sys.argv[1], job_id="crash")
for i in range(3):
    log.log_dataflow(DataFlowRuntimeInfo(dataflow_id=f"df-{i}", dataflow_name="orders"))
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_rows_logged_before_a_sigkill_survive(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CRASHING_JOB, str(tmp_path)], check=False, timeout=60)

    assert done.returncode == -signal.SIGKILL
    rows = [row for path in tmp_path.rglob("job_crash.jsonl") for row in read_lines(path)]
    assert [r["dataflow_id"] for r in rows] == ["df-0", "df-1", "df-2"]
