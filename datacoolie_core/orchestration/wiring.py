"""How a driver assembles its components, and how it tears them down (seed: "Key behaviours").

Assembly reads no metadata until the loggers are active: the provider is built inert, explicit
roots are checked against it, loggers are validated or created, and only then is the provider
initialized, so its records are captured and ``session.ready`` follows a successful start.
Teardown closes the provider first, then the ExecutionLogger (after the final job row), then the
SystemLogger; every component gets a close attempt, a primary exception always wins.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datacoolie_core.engine import ensure_engine
from datacoolie_core.errors import DataCoolieError
from datacoolie_core.logging.execution_logger import STDOUT, ExecutionLogger, is_stdout
from datacoolie_core.logging.system_logger import SystemLogger
from datacoolie_core.metadata.addresses import is_metadata_url, url_provider
from datacoolie_core.metadata.file_provider import WATERMARK_FOLDER, FileProvider
from datacoolie_core.metadata.selection import normalize_paths
from datacoolie_core.models.run_config import DataCoolieRunConfig
from datacoolie_core.orchestration.preparation import QueryRoots
from datacoolie_core.platform import LocalPlatform
from datacoolie_core.platform.storage import bind_default_storage_options
from datacoolie_core.watermark.journal import CommitJournal
from datacoolie_core.watermark.manager import WatermarkManager

_LOG = logging.getLogger("datacoolie.driver")
METADATA_FILE_NAMES = ("metadata.json", "metadata.yaml", "metadata.yml", "metadata.xlsx")
PROVIDER_METHODS = ("get_dataflows",)
"""What an injected metadata provider must offer (the rest is looked up when an operation needs it)."""

JobSummary = Callable[[str | None], Mapping[str, Any]]
"""Builds the final JobRuntime row, given the teardown failure to record (or ``None``)."""


@dataclass
class Components:
    engine: Any
    platform: Any
    provider: Any | None
    watermarks: WatermarkManager | None
    journal: CommitJournal | None
    secret_provider: Any
    roots: QueryRoots
    execution_logger: Any | None
    system_logger: Any | None
    owns_provider: bool


def assemble(
    *,
    engine: Any,
    platform: Any,
    metadata_provider: Any,
    metadata_base_path: str | os.PathLike[str] | None,
    artifact_base_path: str | os.PathLike[str] | None,
    state_base_path: str | os.PathLike[str] | None,
    sql_base_path: Any,
    watermark_manager: Any,
    secret_provider: Any,
    log_base_path: str | os.PathLike[str] | None,
    execution_logger: Any,
    system_logger: Any,
    config: DataCoolieRunConfig,
    state_url: str | None = None,
) -> Components:
    engine = ensure_engine(engine)
    platform = platform if platform is not None else (engine.platform or LocalPlatform())
    engine.attach_platform(platform)  # the same instance twice is fine; a distinct one is rejected
    bind_default_storage_options(engine.storage_options)  # DataCoolie X-08: the engine's options reach the stores
    provider, owns = _provider(
        metadata_provider, metadata_base_path, artifact_base_path, state_base_path, sql_base_path, state_url
    )
    roots = QueryRoots(
        sql_base_paths=_sql_roots(provider, sql_base_path),
        artifact_base_path=Path(artifact_base_path) if artifact_base_path is not None else None,
    )
    session = str(uuid.uuid4())
    loggers = _loggers(log_base_path, execution_logger, system_logger, job_id=config.job_id, session=session)
    components = Components(engine, platform, provider, None, None, secret_provider or platform, roots, *loggers, owns)
    _start(components, watermark_manager)
    _LOG.info("session.ready job_id=%s session=%s", config.job_id, session, extra={"event": "session.ready"})
    return components


def metadata_file_in(path: str | os.PathLike[str]) -> Path:
    """The metadata file ``path`` names: the file itself, or the one metadata file in a folder."""
    candidate = Path(path)
    if candidate.is_file():
        return candidate
    if not candidate.is_dir():
        raise DataCoolieError(f"metadata path '{candidate}' does not exist")
    for name in METADATA_FILE_NAMES:
        if (candidate / name).is_file():
            return candidate / name
    suffixes = (".json", ".yaml", ".yml", ".xlsx")
    found = sorted(p for p in candidate.iterdir() if p.suffix.lower() in suffixes and p.is_file())
    if len(found) == 1:
        return found[0]
    listed = ", ".join(p.name for p in found) or "none"
    raise DataCoolieError(
        f"cannot tell which metadata file to use in '{candidate}' (found: {listed}); "
        f"name it {' / '.join(METADATA_FILE_NAMES)} or pass the file itself"
    )


def _provider(
    provider: Any,
    metadata_base_path: Any,
    artifact_base_path: Any,
    state_base_path: Any,
    sql_base_path: Any,
    state_url: str | None = None,
) -> tuple[Any | None, bool]:
    if provider is not None:
        missing = [name for name in PROVIDER_METHODS if not callable(getattr(provider, name, None))]
        if missing:
            raise DataCoolieError(
                f"metadata_provider {type(provider).__name__} lacks {', '.join(missing)}; "
                "pass a FileProvider or an object with the provider methods"
            )
        if metadata_base_path is not None:
            _check_same_root(provider, metadata_base_path)
        if state_base_path is not None:
            _check_same_state(provider, state_base_path)
        if state_url is not None and getattr(provider, "state_url", None) != state_url:
            raise DataCoolieError(
                f"state_url was given, but the injected {type(provider).__name__} keeps its state elsewhere; "
                "pass state_url to the provider instead"
            )
        return provider, False
    root = metadata_base_path if metadata_base_path is not None else (
        Path(artifact_base_path) / "metadata" if artifact_base_path is not None else None
    )  # fmt: skip
    if root is None:
        return None, False
    if is_metadata_url(root):
        return url_provider(str(root), state_base_path, state_url), True
    file = metadata_file_in(root)
    return FileProvider(file, state_base_path=state_base_path, sql_base_path=sql_base_path, state_url=state_url), True


def _check_same_root(provider: Any, metadata_base_path: Any) -> None:
    config_path = getattr(provider, "config_path", None)
    if config_path is None:
        raise DataCoolieError(
            f"metadata_base_path was given, but the injected {type(provider).__name__} has no metadata file root"
        )
    given = Path(metadata_base_path).resolve()
    established = Path(config_path).resolve()
    if given not in (established, established.parent):
        raise DataCoolieError(
            f"metadata_base_path '{metadata_base_path}' contradicts the provider's metadata file '{config_path}'; "
            "pass only one of them"
        )


def _check_same_state(provider: Any, state_base_path: Any) -> None:
    """A provider that keeps watermarks in files must keep them under ``state_base_path``."""
    established = getattr(provider, "watermark_base_path", None)
    if established is None:
        return  # the provider stores state elsewhere (a database): no file root to contradict
    expected = Path(state_base_path) / WATERMARK_FOLDER
    if Path(established).resolve() != expected.resolve():
        raise DataCoolieError(
            f"state_base_path '{state_base_path}' contradicts the provider's watermark root '{established}'; "
            "pass only one of them"
        )


def _sql_roots(provider: Any, sql_base_path: Any) -> tuple[Path, ...]:
    declared = tuple(getattr(provider, "sql_base_paths", ()) or ())
    given = tuple(Path(p) for p in normalize_paths(sql_base_path))
    if declared and given and {p.resolve() for p in declared} != {p.resolve() for p in given}:
        raise DataCoolieError(
            f"sql_base_path {[str(p) for p in given]} contradicts the provider's {[str(p) for p in declared]}; "
            "declare the SQL roots in one place"
        )
    return declared or given


def _loggers(
    log_base_path: Any, execution_logger: Any, system_logger: Any, *, job_id: str, session: str
) -> tuple[Any | None, Any | None]:
    for name, logger, needs in (
        ("execution_logger", execution_logger, ("log_dataflow", "log_job", "close")),
        ("system_logger", system_logger, ("close",)),
    ):
        if logger is not None and not all(callable(getattr(logger, attr, None)) for attr in needs):
            raise DataCoolieError(f"{name} {logger!r} lacks {', '.join(needs)}")
    if log_base_path is not None and is_stdout(log_base_path):  # "-": both logs on standard output
        system_logger = system_logger or SystemLogger(STDOUT, session_id=session)
        execution_logger = execution_logger or ExecutionLogger(STDOUT, job_id=job_id)
    elif log_base_path is not None:
        root = Path(log_base_path)
        system_logger = system_logger or SystemLogger(root / "system_logs", session_id=session)
        execution_logger = execution_logger or ExecutionLogger(root / "execution_logs", job_id=job_id)
    return execution_logger, system_logger


def _start(components: Components, watermark_manager: Any) -> None:
    """Initialize the provider after the loggers are active, then bind the state components.

    On any failure the started components are closed and the error re-raised: the constructor
    fails, and ``session.ready`` is never logged.
    """
    provider = components.provider
    try:
        initialize = getattr(provider, "initialize", None)
        if initialize is not None:
            initialize()
        components.watermarks = watermark_manager
        if provider is not None:
            components.watermarks = watermark_manager or WatermarkManager(provider)
            if hasattr(provider, "get_pending_commit"):
                components.journal = CommitJournal(provider, components.watermarks)
    except BaseException as e:
        _LOG.error("session.failed: the metadata provider could not start: %s", e, extra={"event": "session.failed"})
        teardown(components, None, primary=e)
        raise


def teardown(components: Components, job_summary: JobSummary | None, *, primary: BaseException | None) -> None:
    """Close everything in order; every component gets a close attempt.

    The provider closes first, so the final job row (``job_summary``) can record its failure; then
    the ExecutionLogger writes that row and closes, then the SystemLogger closes. A ``primary``
    exception always wins (a provider failure becomes a note on it); without one, the provider's
    failure is raised after cleanup. Log storage failures are best effort.
    """
    provider_failure = _close_provider(components.provider)
    failure_text = f"closing the metadata provider failed: {provider_failure!r}" if provider_failure else None
    if failure_text:
        _LOG.error("session.teardown_failed: %s", failure_text, extra={"event": "session.teardown_failed"})
    for step in _ordered_logger_steps(components, job_summary, failure_text):
        try:
            step()
        except Exception as e:
            _LOG.warning("closing a logger failed: %s", e)
    if primary is not None:
        if failure_text:
            primary.add_note(f"also, {failure_text}")
        return
    if provider_failure is not None:
        raise provider_failure


def _close_provider(provider: Any) -> BaseException | None:
    close = getattr(provider, "close", None)
    if close is None:
        return None
    try:
        close()
    except Exception as e:
        return e
    return None


def _ordered_logger_steps(
    components: Components, job_summary: JobSummary | None, teardown_failure: str | None
) -> Sequence[Callable[[], None]]:
    steps: list[Callable[[], None]] = []
    execution = components.execution_logger
    if execution is not None:
        if job_summary is not None:
            steps.append(lambda: execution.log_job(job_summary(teardown_failure)))
        steps.append(execution.close)  # ExecutionLogger closes before SystemLogger
    if components.system_logger is not None:
        steps.append(components.system_logger.close)
    return steps
