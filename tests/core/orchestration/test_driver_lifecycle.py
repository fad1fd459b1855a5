"""The driver's lifecycle, one test per "Key behaviours" bullet of the seed (``000_…txt``).

Real metadata files, real Delta tables under ``tmp_path``, real loggers read back from disk.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core import DataCoolieRunConfig, DataFlow, FileProvider, MetadataError, WatermarkManager
from datacoolie_core.engine import PolarsEngine
from datacoolie_core.errors import DataCoolieError
from datacoolie_core.logging import ExecutionLogger, SystemLogger
from datacoolie_core.models import Connection
from datacoolie_core.orchestration.driver import DataCoolieDriver, DriverBusyError, DriverClosedError, create_driver
from datacoolie_core.platform import LocalPlatform
from tests.core.orchestration import driver_support
from tests.core.orchestration.driver_support import (
    Lake,
    dataflow_rows,
    function_source,
    job_rows,
    system_rows,
)

Factory = Callable[..., DataCoolieDriver]
FACTORIES = [DataCoolieDriver, create_driver]
FACTORY_IDS = ["constructor", "create_driver"]


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    lake = Lake(tmp_path)
    lake.add("orders", source=function_source("orders") | {"watermark_columns": ["updated_at"]})
    lake.write()
    return lake


@pytest.fixture
def released() -> Any:
    """Reset :func:`driver_support.blocking_orders`; always release it at the end (no hung thread)."""
    driver_support.STARTED.clear()
    driver_support.RELEASE.clear()
    yield
    driver_support.RELEASE.set()


def messages(logs: Path) -> list[str]:
    return [row["msg"] for row in system_rows(logs)]


def index_of(lines: list[str], fragment: str) -> int:
    return next(i for i, line in enumerate(lines) if fragment in line)


# --- constructor injection and auto-creation ------------------------------------------------


def test_watermark_manager_is_auto_created_over_the_resolved_provider(lake: Lake) -> None:
    with DataCoolieDriver(metadata_base_path=lake.metadata_path) as driver:
        assert isinstance(driver.watermark_manager, WatermarkManager)
        result = driver.run(stage="bronze2silver")
        (orders,) = driver.load_dataflows()
        stored = driver.watermark_manager.get_watermark(str(orders.dataflow_id))

    assert (result.total, result.succeeded) == (1, 1)
    assert stored is not None
    assert stored["updated_at"].replace(tzinfo=None).isoformat() == "2025-03-15T00:00:00"
    assert list((lake.metadata_path.parent / "watermarks").glob("*/watermark_value.json"))


def test_an_injected_watermark_manager_is_used_as_given(lake: Lake) -> None:
    provider = FileProvider(lake.metadata_path, state_base_path=lake.root / "state")
    manager = WatermarkManager(provider)
    with DataCoolieDriver(metadata_provider=provider, watermark_manager=manager) as driver:
        assert driver.watermark_manager is manager
        assert driver.metadata_provider is provider
        driver.run()
    assert list((lake.root / "state" / "watermarks").glob("*/watermark_value.json"))


class VaultSecrets:
    """An injected secret provider: a store the platform knows nothing about."""

    def __init__(self, secrets: dict[str, str]) -> None:
        self.secrets = secrets
        self.fetched: list[tuple[str, str]] = []

    def fetch_secret(self, source: str, key: str) -> str:
        self.fetched.append((source, key))
        return self.secrets[key]


def test_an_injected_secret_provider_resolves_connection_secrets(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.connections[2] |= {"configure": {"password": "orders-db"}, "secrets_ref": {"vault": ["password"]}}
    lake.add("orders", source=function_source("leaky_orders")).write()
    vault = VaultSecrets({"orders-db": "from-the-vault-123"})

    with DataCoolieDriver(metadata_base_path=lake.metadata_path, secret_provider=vault, log_base_path=lake.logs) as d:
        (runtime,) = d.run().runtimes

    assert vault.fetched == [("vault", "orders-db")]
    assert runtime.exception is not None
    assert runtime.exception.args[0].endswith("login refused for password from-the-vault-123")  # resolved
    assert (runtime.error_message or "").endswith("login refused for password ***")  # and never shown
    assert dataflow_rows(lake.logs)[0]["error_message"].endswith("login refused for password ***")


@pytest.mark.parametrize("as_folder", [True, False], ids=["metadata-folder", "metadata-file"])
def test_metadata_base_path_infers_a_file_provider(lake: Lake, as_folder: bool) -> None:
    given = lake.metadata_path.parent if as_folder else lake.metadata_path

    with DataCoolieDriver(metadata_base_path=given) as driver:
        provider = driver.metadata_provider
        names = [d.name for d in driver.load_dataflows()]

    assert isinstance(provider, FileProvider)
    assert provider.config_path == lake.metadata_path
    assert names == ["orders"]


def test_artifact_base_path_alone_infers_its_metadata_folder(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "artifact")
    lake.add("orders").write()  # <artifact>/meta/metadata.json: move it to <artifact>/metadata/
    (tmp_path / "artifact" / "metadata").mkdir()
    lake.metadata_path.rename(tmp_path / "artifact" / "metadata" / "metadata.json")

    with DataCoolieDriver(artifact_base_path=tmp_path / "artifact") as driver:
        provider = driver.metadata_provider
        result = driver.run()

    assert provider.config_path == tmp_path / "artifact" / "metadata" / "metadata.json"
    assert (result.total, result.succeeded) == (1, 1)


def test_without_any_metadata_path_only_explicit_dataflows_run(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    connections = {c["name"]: Connection.model_validate(c) for c in lake.connections}
    dataflow = DataFlow.model_validate(
        {
            "name": "orders",
            "source": function_source("orders"),
            "destination": {"connection_name": "lake", "table": "o"},
        },
        context={"connections": connections},
    )

    with DataCoolieDriver() as driver:
        assert driver.metadata_provider is None
        result = driver.run(dataflows=[dataflow])
        with pytest.raises(DataCoolieError, match=r"no metadata provider.*call run\(dataflows="):
            driver.run(stage="bronze2silver")
        with pytest.raises(DataCoolieError, match="no metadata provider"):
            driver.load_dataflows()

    assert (result.total, result.succeeded) == (1, 1)
    assert lake.table("o")["order_id"].to_list() == [1, 2, 3]


@pytest.mark.parametrize("factory", FACTORIES, ids=FACTORY_IDS)
@pytest.mark.parametrize(
    ("provider_args", "driver_args", "message"),
    [
        ({}, {"metadata_base_path": "other/metadata.json"}, "contradicts the provider's metadata file"),
        ({"sql_base_path": "sql"}, {"sql_base_path": "queries"}, "contradicts the provider's"),
        ({"state_base_path": "state"}, {"state_base_path": "elsewhere"}, "contradicts the provider's"),
    ],
    ids=["metadata-root", "sql-root", "state-root"],
)
def test_explicit_path_conflicts_fail_before_anything_is_read(
    tmp_path: Path, factory: Factory, provider_args: dict[str, str], driver_args: dict[str, str], message: str
) -> None:
    broken = tmp_path / "metadata.json"
    broken.write_text("{ this is not JSON")  # reading it would raise a MetadataError instead
    provider = FileProvider(broken, **{k: tmp_path / v for k, v in provider_args.items()})

    with pytest.raises(DataCoolieError, match=message) as raised:
        factory(
            metadata_provider=provider,
            log_base_path=tmp_path / "logs",
            **{k: tmp_path / v for k, v in driver_args.items()},
        )

    assert not isinstance(raised.value, MetadataError)
    assert not (tmp_path / "logs").exists()


@pytest.mark.parametrize("factory", FACTORIES, ids=FACTORY_IDS)
def test_equal_explicit_roots_are_accepted(lake: Lake, factory: Factory) -> None:
    provider = FileProvider(lake.metadata_path, sql_base_path=lake.root / "sql")
    with factory(
        metadata_provider=provider, metadata_base_path=lake.metadata_path.parent, sql_base_path=lake.root / "sql"
    ) as driver:
        assert [d.name for d in driver.load_dataflows()] == ["orders"]


def test_an_injected_provider_must_serve_dataflows(tmp_path: Path) -> None:
    with pytest.raises(DataCoolieError, match=r"metadata_provider .* lacks get_dataflows"):
        DataCoolieDriver(metadata_provider=object())


@pytest.mark.parametrize("which", ["execution_logger", "system_logger"])
def test_an_invalid_injected_logger_is_rejected_before_metadata_is_read(tmp_path: Path, which: str) -> None:
    broken = tmp_path / "metadata.json"
    broken.write_text("{ not JSON")

    with pytest.raises(DataCoolieError, match=f"{which} .* lacks"):
        DataCoolieDriver(metadata_base_path=broken, **{which: object()})


def test_loggers_are_auto_created_under_log_base_path(lake: Lake) -> None:
    with DataCoolieDriver(metadata_base_path=lake.metadata_path, log_base_path=lake.logs) as driver:
        assert isinstance(driver.execution_logger, ExecutionLogger)
        assert isinstance(driver.system_logger, SystemLogger)
        driver.run()

    assert sorted(p.name for p in lake.logs.iterdir()) == ["execution_logs", "system_logs"]
    (row,) = dataflow_rows(lake.logs)
    (job,) = job_rows(lake.logs)
    assert (row["dataflow_name"], row["status"], row["destination"]["rows_written"]) == ("orders", "succeeded", 3)
    assert (job["status"], job["total_dataflows"], job["succeeded"]) == ("succeeded", 1, 1)
    assert any("session.ready" in m for m in messages(lake.logs))


def test_the_context_manager_closes_loggers_and_writes_the_job_row(lake: Lake) -> None:
    with DataCoolieDriver(metadata_base_path=lake.metadata_path, log_base_path=lake.logs) as driver:
        driver.run()
        handlers_inside = list(logging.getLogger("datacoolie").handlers)

    assert driver.closed
    assert driver.execution_logger.closed
    assert driver.system_logger.closed
    assert len(logging.getLogger("datacoolie").handlers) == len(handlers_inside) - 1
    (job,) = job_rows(lake.logs)
    assert job["end_time"] is not None
    assert job["status"] == "succeeded"
    driver.close()  # idempotent


def test_platform_identity_guard(lake: Lake) -> None:
    platform = LocalPlatform()
    with DataCoolieDriver(engine=PolarsEngine(platform), platform=platform) as driver:
        assert driver.platform is platform
        assert driver.engine.platform is platform

    with pytest.raises(DataCoolieError, match="different platform instance"):
        DataCoolieDriver(engine=PolarsEngine(LocalPlatform()), platform=LocalPlatform())


# --- provider startup boundary ----------------------------------------------------------------


def test_a_provider_that_fails_to_start_fails_the_constructor(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.add("orders", destination={"load_typ": "append"}).write()
    handlers_before = len(logging.getLogger("datacoolie").handlers)

    with pytest.raises(MetadataError, match=r"load_typ.*did you mean 'load_type'"):
        DataCoolieDriver(metadata_base_path=lake.metadata_path, log_base_path=lake.logs)

    lines = messages(lake.logs)
    assert not any("session.ready" in m for m in lines)
    failure = lines[index_of(lines, "session.failed")]
    assert "load_typ" in failure
    assert len(logging.getLogger("datacoolie").handlers) == handlers_before  # the system logger was closed


def test_provider_warnings_are_logged_before_session_ready(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.connections[1]["configure"]["bse_path"] = "./typo"  # a warning, not an error
    lake.add("orders").write()

    with DataCoolieDriver(metadata_base_path=lake.metadata_path, log_base_path=lake.logs):
        pass

    lines = messages(lake.logs)
    assert index_of(lines, "bse_path") < index_of(lines, "session.ready")


# --- single-operation lifecycle ---------------------------------------------------------------


def test_one_operation_at_a_time_and_nothing_after_close(tmp_path: Path, released: Any) -> None:
    lake = Lake(tmp_path)
    lake.add("slow", source=function_source("blocking_orders")).add("fast", stage="other").write()
    driver = DataCoolieDriver(metadata_base_path=lake.metadata_path, log_base_path=lake.logs)
    outcome: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: outcome.update(first=driver.run(stage="bronze2silver")))
    worker.start()
    assert driver_support.STARTED.wait(timeout=10)

    # the first run is inside its slow dataflow
    with pytest.raises(DriverBusyError, match="'run' rejected: 'run' is already running"):
        driver.run(stage="other")
    with pytest.raises(DriverBusyError, match="close\\(\\) rejected"):
        driver.close()
    driver_support.RELEASE.set()
    worker.join(timeout=20)

    assert outcome["first"].succeeded == 1
    assert driver.run(stage="other").succeeded == 1  # admission was released
    driver.close()
    with pytest.raises(DriverClosedError, match="'run' rejected: the driver is closed"):
        driver.run(stage="other")
    with pytest.raises(DriverClosedError):
        driver.load_dataflows()


class FailingOnceProvider(FileProvider):
    """A provider whose first ``get_dataflows`` fails (a metadata store hiccup)."""

    calls = 0

    def get_dataflows(self, *args: Any, **kwargs: Any) -> list[DataFlow]:
        self.calls += 1
        if self.calls == 1:
            raise OSError("metadata store unreachable")
        return super().get_dataflows(*args, **kwargs)


def test_admission_is_released_after_a_failure(lake: Lake) -> None:
    with DataCoolieDriver(metadata_provider=FailingOnceProvider(lake.metadata_path)) as driver:
        with pytest.raises(OSError, match="unreachable"):
            driver.run()
        assert driver.run().succeeded == 1


# --- failure-safe lifecycle and terminal teardown ---------------------------------------------


class InterruptingProvider(FileProvider):
    """Ctrl-C arrives while the driver loads metadata."""

    def get_dataflows(self, *args: Any, **kwargs: Any) -> list[DataFlow]:
        raise KeyboardInterrupt


def interrupt(runtime: Any) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize("where", ["provider", "on_complete"])
def test_an_interrupt_inside_a_run_closes_the_driver_and_reaches_the_caller(lake: Lake, where: str) -> None:
    provider = InterruptingProvider(lake.metadata_path) if where == "provider" else FileProvider(lake.metadata_path)
    driver = DataCoolieDriver(metadata_provider=provider, log_base_path=lake.logs)

    with pytest.raises(KeyboardInterrupt):
        driver.run(on_complete=interrupt)

    assert driver.closed
    assert driver.execution_logger.closed
    assert driver.system_logger.closed
    (job,) = job_rows(lake.logs)
    assert job["status"] == "failed"
    assert "interrupted by KeyboardInterrupt" in job["error_message"]
    rows = dataflow_rows(lake.logs)
    # the completion observation is persisted before the hook runs
    assert [r["status"] for r in rows] == ([] if where == "provider" else ["succeeded"])
    with pytest.raises(DriverClosedError):
        driver.run()


class Recorder:
    """Shared list of teardown steps, in the order they happened."""

    def __init__(self) -> None:
        self.steps: list[str] = []


class RecordingExecutionLogger(ExecutionLogger):
    def __init__(self, recorder: Recorder, root: Path) -> None:
        super().__init__(root, job_id="job")
        self.recorder = recorder

    def log_job(self, summary: Any) -> None:
        self.recorder.steps.append(f"job row {summary['status']}")
        super().log_job(summary)

    def close(self) -> None:
        self.recorder.steps.append("execution logger closed")
        super().close()


class RecordingSystemLogger(SystemLogger):
    def __init__(self, recorder: Recorder, root: Path) -> None:
        super().__init__(root, session_id="session")
        self.recorder = recorder

    def close(self) -> None:
        self.recorder.steps.append("system logger closed")
        super().close()


class RecordingProvider(FileProvider):
    def __init__(self, recorder: Recorder, path: Path, *, fail_close: bool = False) -> None:
        super().__init__(path)
        self.recorder = recorder
        self.fail_close = fail_close

    def close(self) -> None:
        self.recorder.steps.append("provider closed")
        if self.fail_close:
            raise OSError("metadata store connection reset")


def recording_driver(lake: Lake, recorder: Recorder, *, fail_close: bool = False) -> DataCoolieDriver:
    return DataCoolieDriver(
        metadata_provider=RecordingProvider(recorder, lake.metadata_path, fail_close=fail_close),
        execution_logger=RecordingExecutionLogger(recorder, lake.logs / "execution_logs"),
        system_logger=RecordingSystemLogger(recorder, lake.logs / "system_logs"),
    )


def test_teardown_closes_the_provider_then_the_execution_logger_then_the_system_logger(lake: Lake) -> None:
    recorder = Recorder()
    with recording_driver(lake, recorder) as driver:
        driver.run()
        recorder.steps.clear()

    assert recorder.steps == ["provider closed", "job row succeeded", "execution logger closed", "system logger closed"]


def test_a_provider_close_failure_is_raised_after_cleanup_and_recorded(lake: Lake) -> None:
    recorder = Recorder()
    driver = recording_driver(lake, recorder, fail_close=True)
    driver.run()

    with pytest.raises(OSError, match="connection reset"):
        driver.close()

    assert recorder.steps[-4:] == [
        "provider closed",
        "job row failed",
        "execution logger closed",
        "system logger closed",
    ]
    (job,) = job_rows(lake.logs)
    assert (job["status"], job["succeeded"]) == ("failed", 1)
    assert "closing the metadata provider failed: OSError" in job["error_message"]


def test_a_primary_exception_wins_over_a_provider_close_failure(lake: Lake) -> None:
    recorder = Recorder()
    driver = recording_driver(lake, recorder, fail_close=True)
    driver.run()
    with pytest.raises(ValueError, match="the caller's own bug") as raised, driver:
        raise ValueError("the caller's own bug")

    assert any("connection reset" in note for note in getattr(raised.value, "__notes__", []))
    assert recorder.steps[-3:] == ["job row failed", "execution logger closed", "system logger closed"]


# --- error ownership --------------------------------------------------------------------------


def test_the_job_row_lists_each_failed_dataflow_once_without_its_error(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.add("good")
    lake.add("bad_a", source=function_source("leaky_orders"))
    lake.add("bad_b", source=function_source("leaky_orders"))
    lake.write()

    with DataCoolieDriver(metadata_base_path=lake.metadata_path, log_base_path=lake.logs) as driver:
        ids = {d.name: d.dataflow_id for d in driver.load_dataflows()}
        first, second = driver.run(), driver.run()  # the same failures twice in one session

    assert (first.failed, second.failed) == (2, 2)
    (job,) = job_rows(lake.logs)
    assert job["error_message"] == f"bad_a [{ids['bad_a']}]; bad_b [{ids['bad_b']}]"
    assert (job["total_dataflows"], job["succeeded"], job["failed"]) == (6, 2, 4)
    failed_rows = [r for r in dataflow_rows(lake.logs) if r["status"] == "failed"]
    assert len(failed_rows) == 4
    assert all("login refused" in r["error_message"] for r in failed_rows)


# --- secrets never reach a log line ----------------------------------------------------------


def test_a_resolved_secret_never_appears_in_any_log_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "s3cr3t-Pa55word-4242"
    monkeypatch.setenv("DC_TEST_ORDERS_PASSWORD", secret)
    lake = Lake(tmp_path)
    lake.connections[2] |= {"configure": {"password": "DC_TEST_ORDERS_PASSWORD"}, "secrets_ref": {"env:": ["password"]}}
    lake.add("orders", source=function_source("leaky_orders")).write()
    config = DataCoolieRunConfig(retry_count=1, retry_delay=0)

    with DataCoolieDriver(metadata_base_path=lake.metadata_path, log_base_path=lake.logs, config=config) as driver:
        result = driver.run()

    assert result.failed == 1
    # the record is printed and shown in Dagster: masked; only the exception object keeps the real text
    assert result.runtimes[0].error_message == "login refused for password ***"
    assert secret in str(getattr(result.runtimes[0].exception, "args", ()))
    (row,) = dataflow_rows(lake.logs)
    assert row["error_message"].endswith("login refused for password ***")
    text = "\n".join(p.read_text() for p in lake.logs.rglob("*") if p.is_file())
    assert secret not in text
    (failure,) = [r for r in system_rows(lake.logs) if r["msg"].startswith("dataflow.failed orders")]
    assert failure["msg"].endswith("SourceError: login refused for password ***")
    assert "leaky_orders" in failure["exc_info"]
    assert "password ***" in failure["exc_info"]
    # the driver masks its own records for every handler, not only for its system log file
    driver_records = [r for r in caplog.records if r.name == "datacoolie.driver"]
    assert driver_records
    assert all(secret not in r.getMessage() + (r.exc_text or "") for r in driver_records)


def test_log_path_dash_writes_both_logs_to_standard_output_masked(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a "-" folder would appear here
    lake = Lake(tmp_path)
    lake.connections[2] |= {"configure": {"password": "orders-db"}, "secrets_ref": {"vault": ["password"]}}
    lake.add("orders", source=function_source("leaky_orders")).write()
    capfd.readouterr()

    with DataCoolieDriver(
        metadata_base_path=lake.metadata_path,
        secret_provider=VaultSecrets({"orders-db": "from-the-vault-123"}),
        log_base_path="-",
    ) as driver:
        (runtime,) = driver.run().runtimes
    out = capfd.readouterr().out

    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    kinds = {row.get("_type") for row in rows}
    assert {"dataflow_run_log", "job_run_log"} <= kinds  # the execution log
    assert any(row.get("session_id") and row.get("level") for row in rows)  # the system log
    (dataflow_row,) = [row for row in rows if row.get("_type") == "dataflow_run_log"]
    assert dataflow_row["dataflow_id"] == runtime.dataflow_id
    assert dataflow_row["error_message"].endswith("login refused for password ***")
    assert "from-the-vault-123" not in out
    assert not (tmp_path / "-").exists()
