"""``DataCoolieDriver``: the thin coordinator of the user's seed (``000_…txt``).

It wires the components (engine, platform, metadata provider, watermark manager, loggers), admits one
operation at a time, and hands dataflows to the :class:`ParallelExecutor`; everything that happens to
one dataflow lives in :mod:`datacoolie_core.orchestration.dataflow_tasks`.

Example:
    >>> with DataCoolieDriver(metadata_base_path="metadata/", log_base_path="logs/",
    ...                       config=DataCoolieRunConfig(job_num=4, job_index=0, max_workers=4)) as driver:
    ...     result = driver.run(stage=["bronze2silver"])
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from datacoolie_core.gc_pause import cyclic_gc_paused

# The engine's modules build ~15,000 objects that live as long as the process (the metadata models,
# classes, compiled patterns): no collection during their import can free any of them, and the ones
# it would run leave the next full collection due in the caller's first dataflow (datacoolie_core.gc_pause).
with cyclic_gc_paused():
    from datacoolie_core.errors import DataCoolieError
    from datacoolie_core.logging.execution_logger import Scrubber
    from datacoolie_core.models.dataflow import DataFlow
    from datacoolie_core.models.run_config import DataCoolieRunConfig, ReplayConfig
    from datacoolie_core.models.runtime import DataFlowRuntimeInfo, ExecutionResult, utc_now
    from datacoolie_core.orchestration.dataflow_tasks import (
        ChunkObserver,
        ExecutionServices,
        WriterLocks,
        blocked_record,
        dry_run_check,
        execute_etl,
        execute_maintenance,
        execute_replay,
    )
    from datacoolie_core.orchestration.distributor import JobDistributor
    from datacoolie_core.orchestration.maintenance import maintenance_block_reason, select_maintenance_targets
    from datacoolie_core.orchestration.parallel_executor import ParallelExecutor
    from datacoolie_core.orchestration.preparation import QueryRoots
    from datacoolie_core.orchestration.wiring import Components, assemble, teardown
    from datacoolie_core.process_exit import skip_final_collection

_LOG = logging.getLogger("datacoolie.driver")

ProgressCallback = Callable[[DataFlowRuntimeInfo], None]


class DriverClosedError(DataCoolieError):
    """The driver was closed; create a new one."""


class DriverBusyError(DataCoolieError):
    """Another operation is running on this driver (one at a time)."""


class DataCoolieDriver:
    """Run DataCoolie dataflows: load + shard, run, replay, maintain.

    Args:
        engine: a :class:`~datacoolie_core.engine.PolarsEngine` or ``"polars"`` (default).
        platform: the platform (default: the engine's, else a local one). The driver and the engine
            must share ONE platform instance.
        metadata_provider: where dataflows come from. Without one, ``metadata_base_path`` (a folder or
            a metadata file) or ``artifact_base_path`` (its ``metadata/`` folder) creates a FileProvider;
            with neither, only ``run(dataflows=[...])`` is available.
        metadata_base_path, artifact_base_path, state_base_path, sql_base_path: runtime roots; an
            explicit root that contradicts the provider's fails before anything is read.
        state_url: keep the state in a database instead of under ``state_base_path``
            (``postgresql://…``, several hosts; see ``docs/state-store.md``).
        watermark_manager: default: one over the provider.
        config: sharding, concurrency, retries, dry run (default ``DataCoolieRunConfig()``).
        secret_provider: resolves ``secrets_ref`` (default: the platform).
        log_base_path: creates an ExecutionLogger and a SystemLogger under
            ``log_base_path/{execution_logs,system_logs}`` unless loggers are given; ``"-"``: both
            write their JSON lines to standard output instead.
        execution_logger, system_logger: bring your own loggers.

    Raises:
        DataCoolieError: conflicting roots or platforms, invalid loggers.
        MetadataError: the provider's metadata is invalid (the driver is not created).
    """

    def __init__(
        self,
        engine: Any | None = None,
        platform: Any | None = None,
        metadata_provider: Any | None = None,
        *,
        metadata_base_path: str | os.PathLike[str] | None = None,
        artifact_base_path: str | os.PathLike[str] | None = None,
        state_base_path: str | os.PathLike[str] | None = None,
        sql_base_path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
        watermark_manager: Any | None = None,
        config: DataCoolieRunConfig | None = None,
        state_url: str | None = None,
        secret_provider: Any | None = None,
        log_base_path: str | os.PathLike[str] | None = None,
        execution_logger: Any | None = None,
        system_logger: Any | None = None,
    ) -> None:
        self.config = config or DataCoolieRunConfig()
        self._components: Components = assemble(
            engine=engine,
            platform=platform,
            metadata_provider=metadata_provider,
            metadata_base_path=metadata_base_path,
            artifact_base_path=artifact_base_path,
            state_base_path=state_base_path,
            state_url=state_url,
            sql_base_path=sql_base_path,
            watermark_manager=watermark_manager,
            secret_provider=secret_provider,
            log_base_path=log_base_path,
            execution_logger=execution_logger,
            system_logger=system_logger,
            config=self.config,
        )
        self._state = threading.Lock()
        self._active: str | None = None
        self._closed = False
        self._session_status = "succeeded"
        self._session_errors: list[str] = []
        """Failures the driver owns (interrupts, teardown), beside the failed dataflows."""
        self._started = utc_now()
        self._scrubber = Scrubber()
        self._stages: list[str] = []
        self._totals = ExecutionResult()
        skip_final_collection()  # a one-run process's exit would walk every object once more

    # --- components -----------------------------------------------------------------------

    @property
    def engine(self) -> Any:
        return self._components.engine

    @property
    def platform(self) -> Any:
        return self._components.platform

    @property
    def metadata_provider(self) -> Any | None:
        return self._components.provider

    @property
    def watermark_manager(self) -> Any | None:
        return self._components.watermarks

    @property
    def execution_logger(self) -> Any | None:
        return self._components.execution_logger

    @property
    def system_logger(self) -> Any | None:
        return self._components.system_logger

    @property
    def closed(self) -> bool:
        return self._closed

    # --- public operations ----------------------------------------------------------------

    def load_dataflows(
        self, stage: str | Sequence[str] | None = None, *, active_only: bool = True, attach_schema_hints: bool = True
    ) -> list[DataFlow]:
        """This job's dataflows of ``stage`` (active only by default), after sharding."""
        with self._operation("load_dataflows"):
            return self._load(stage, active_only=active_only, attach_schema_hints=attach_schema_hints)

    def run(
        self,
        stage: str | Sequence[str] | None = None,
        dataflows: Sequence[DataFlow] | None = None,
        *,
        on_complete: ProgressCallback | None = None,
    ) -> ExecutionResult:
        """Run ``stage`` (loaded, filtered, sharded) or exactly the given ``dataflows``.

        An explicit list is executed as given: no reload, no stage or shard selection; inactive
        dataflows and those on inactive connections are still skipped.
        """
        with self._operation("run"):
            selected = list(dataflows) if dataflows is not None else self._load(stage)
            return self._run_each(selected, execute_etl, dry_run_check, on_complete, grouped=True)

    def run_replay(
        self,
        dataflows: Sequence[DataFlow] | DataFlow,
        replay: ReplayConfig,
        *,
        on_complete: ProgressCallback | None = None,
        on_chunk: ChunkObserver | None = None,
    ) -> ExecutionResult:
        """Re-process ``[replay.start, replay.end)`` of each dataflow in sequential chunks.

        Dataflows run concurrently (flat, ``max_workers``); chunks of one dataflow run in order and
        stop at the first failed chunk. ``on_chunk`` observes each finished chunk.
        """
        with self._operation("run_replay"):
            selected = [dataflows] if isinstance(dataflows, DataFlow) else list(dataflows)
            return self._run_each(
                selected,
                lambda d, services: execute_replay(d, replay, services, on_chunk=on_chunk),
                lambda d, services: dry_run_check(d, services, replay),
                on_complete,
                grouped=False,
            )

    def run_maintenance(
        self,
        connection: str | Sequence[str] | None = None,
        dataflows: Sequence[DataFlow] | None = None,
        *,
        do_compact: bool = True,
        do_cleanup: bool = True,
        on_complete: ProgressCallback | None = None,
    ) -> ExecutionResult:
        """OPTIMIZE / VACUUM each destination table once (fan-in deduplicated).

        From metadata: lakehouse destinations of ``connection`` (name/id, comma list), sharded. An
        explicit ``dataflows`` list is only deduplicated. Blocked candidates are recorded as skipped.
        """
        with self._operation("run_maintenance"):
            if dataflows is None:
                candidates = self._require_provider().get_maintenance_dataflows(
                    connection=connection, active_only=False
                )
                targets, blocked = select_maintenance_targets(candidates)
                shard = JobDistributor.from_config(self.config)
                targets, blocked = shard.select(targets, active_only=False), shard.select(blocked, active_only=False)
            else:
                targets, blocked = select_maintenance_targets(list(dataflows))
            services = self._services()
            skipped = {id(d): maintenance_block_reason(d) for d in blocked}

            def process(dataflow: DataFlow) -> DataFlowRuntimeInfo:
                if id(dataflow) in skipped:
                    return blocked_record(dataflow, services, f"blocked: {skipped[id(dataflow)]}")
                if self.config.dry_run:
                    return blocked_record(dataflow, services, "dry run")
                return execute_maintenance(dataflow, services, do_compact=do_compact, do_cleanup=do_cleanup)

            self._note_stages([*targets, *blocked])
            return self._execute([*targets, *blocked], process, on_complete, grouped=False)

    # --- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Flush and close the loggers and the provider. Idempotent; rejected while work runs."""
        with self._state:
            if self._active is not None:
                raise DriverBusyError(f"close() rejected: '{self._active}' is still running")
            if self._closed:
                return
            self._closed = True
        teardown(self._components, self._final_summary, primary=None)

    def __enter__(self) -> DataCoolieDriver:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is not None and self._closed:
            return
        if exc is not None:
            self._fail_session(f"session ended by {type(exc).__name__}")
            with self._state:
                self._closed = True
            teardown(self._components, self._final_summary, primary=exc)
            return
        self.close()

    # --- internals ------------------------------------------------------------------------

    @contextmanager
    def _operation(self, name: str) -> Iterator[None]:
        with self._state:
            if self._closed:
                raise DriverClosedError(f"'{name}' rejected: the driver is closed")
            if self._active is not None:
                raise DriverBusyError(f"'{name}' rejected: '{self._active}' is already running on this driver")
            self._active = name
        try:
            yield
        except (KeyboardInterrupt, SystemExit) as interrupt:
            # failure-safe lifecycle: mark the session failed, clean up, keep the caller's exception
            self._fail_session(f"'{name}' interrupted by {type(interrupt).__name__}")
            with self._state:
                self._active, self._closed = None, True
            teardown(self._components, self._final_summary, primary=interrupt)
            raise
        finally:
            with self._state:
                self._active = None

    def _load(
        self, stage: str | Sequence[str] | None, *, active_only: bool = True, attach_schema_hints: bool = True
    ) -> list[DataFlow]:
        provider = self._require_provider()
        loaded = provider.get_dataflows(stage=stage, active_only=active_only, attach_schema_hints=attach_schema_hints)
        return JobDistributor.from_config(self.config).select(loaded, active_only=active_only)

    def _run_each(
        self,
        selected: list[DataFlow],
        work: Callable[[DataFlow, ExecutionServices], DataFlowRuntimeInfo],
        dry_run: Callable[[DataFlow, ExecutionServices], DataFlowRuntimeInfo],
        on_complete: ProgressCallback | None,
        *,
        grouped: bool,
    ) -> ExecutionResult:
        """``work`` (or ``dry_run`` in a dry run) on each of ``selected``, with this session's services."""
        self._note_stages(selected)
        services = self._services()
        step = dry_run if self.config.dry_run else work
        return self._execute(selected, lambda d: step(d, services), on_complete, grouped=grouped)

    def _execute(
        self,
        dataflows: list[DataFlow],
        process: Callable[[DataFlow], DataFlowRuntimeInfo],
        on_complete: ProgressCallback | None,
        *,
        grouped: bool,
    ) -> ExecutionResult:
        started = time.perf_counter()
        executor = ParallelExecutor(self.config.max_workers, stop_on_error=self.config.stop_on_error)
        result = executor.execute(dataflows, process, grouped=grouped, on_complete=on_complete)
        result.duration_seconds = round(time.perf_counter() - started, 6)
        self._accumulate(result)
        if self._components.execution_logger is not None:
            self._components.execution_logger.log_job(self._job_summary(final=False))
        return result

    def _services(self) -> ExecutionServices:
        c = self._components
        return ExecutionServices(
            config=self.config,
            roots=c.roots if c.roots is not None else QueryRoots(),
            watermarks=c.watermarks,
            journal=c.journal,
            secrets=c.secret_provider,
            logger=c.execution_logger,
            system_logger=c.system_logger,
            scrubber=self._scrubber,
            writer_locks=WriterLocks(getattr(c.provider, "destination_lock", None)),
        )

    def _require_provider(self) -> Any:
        if self._components.provider is None:
            raise DataCoolieError(
                "this driver has no metadata provider; pass metadata_provider or metadata_base_path, "
                "or call run(dataflows=[...])"
            )
        return self._components.provider

    def _note_stages(self, dataflows: Sequence[DataFlow]) -> None:
        for dataflow in dataflows:
            if dataflow.stage and dataflow.stage not in self._stages:
                self._stages.append(dataflow.stage)

    def _fail_session(self, reason: str) -> None:
        self._session_status = "failed"
        self._session_errors.append(reason)
        _LOG.error("session.failed: %s", reason, extra={"event": "session.failed"})

    def _accumulate(self, result: ExecutionResult) -> None:
        totals = self._totals
        for name in ("total", "succeeded", "failed", "skipped", "pending"):
            setattr(totals, name, getattr(totals, name) + getattr(result, name))
        totals.runtimes.extend(r for r in result.runtimes if r.status == "failed")
        if result.failed:
            self._session_status = "failed"

    def _final_summary(self, teardown_failure: str | None) -> dict[str, Any]:
        if teardown_failure:
            self._session_status = "failed"
            self._session_errors.append(teardown_failure)
        return self._job_summary(final=True)

    def _job_summary(self, *, final: bool) -> dict[str, Any]:
        """The JobRuntime row: failed dataflows listed once, as ``name [id]`` separated by ``;``.

        A dataflow's own error stays on its dataflow row; ``error_message`` adds only the failures
        the driver owns (an interrupt, a teardown failure).
        """
        totals, config = self._totals, self.config
        status = self._session_status if totals.total or self._session_status == "failed" else "skipped"
        if status == "succeeded" and totals.total and not totals.succeeded:
            status = "skipped"
        failed = dict.fromkeys(f"{r.dataflow_name} [{r.dataflow_id}]" for r in totals.runtimes)
        error_message = "; ".join([*failed, *self._session_errors]) or None
        return {
            "job_id": config.job_id, "job_num": config.job_num, "job_index": config.job_index,
            "stages": list(self._stages), "engine_name": "polars", "max_workers": config.max_workers,
            "stop_on_error": config.stop_on_error, "retry_count": config.retry_count,
            "retry_delay": config.retry_delay, "dry_run": config.dry_run, "run_attributes": config.run_attributes,
            "start_time": self._started, "end_time": utc_now() if final else None, "status": status,
            "total_dataflows": totals.total, "succeeded": totals.succeeded, "failed": totals.failed,
            "skipped": totals.skipped, "pending": totals.pending, "error_message": error_message,
        }  # fmt: skip


def create_driver(
    engine: Any | None = None,
    platform: Any | None = None,
    metadata_provider: Any | None = None,
    *,
    metadata_base_path: str | os.PathLike[str] | None = None,
    artifact_base_path: str | os.PathLike[str] | None = None,
    state_base_path: str | os.PathLike[str] | None = None,
    sql_base_path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    watermark_manager: Any | None = None,
    secret_provider: Any | None = None,
    log_base_path: str | os.PathLike[str] | None = None,
    state_url: str | None = None,
    **run_config: Any,
) -> DataCoolieDriver:
    """A driver built by the same rules as the constructor; extra keywords form the run config.

    Example:
        >>> driver = create_driver(metadata_base_path="metadata/pipeline.json", job_num=4, job_index=1)
    """
    return DataCoolieDriver(
        engine,
        platform,
        metadata_provider,
        metadata_base_path=metadata_base_path,
        artifact_base_path=artifact_base_path,
        state_base_path=state_base_path,
        sql_base_path=sql_base_path,
        watermark_manager=watermark_manager,
        config=DataCoolieRunConfig(**run_config),
        secret_provider=secret_provider,
        log_base_path=log_base_path,
        state_url=state_url,
    )
