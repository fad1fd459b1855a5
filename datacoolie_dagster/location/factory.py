"""``build_definitions``: DataCoolie metadata -> a Dagster ``Definitions`` (assets, jobs, checks)."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from functools import partial, wraps
from typing import Any, ParamSpec, TypeVar

import dagster as dg

from datacoolie_dagster.automation.limits import build_limits_sensor, pool_for, stage_limits
from datacoolie_dagster.automation.retries import ASSET_SENSOR_NAME, IMPLICIT_ASSET_JOB, build_retry_sensor
from datacoolie_dagster.automation.schedules import build_schedules, schedule_settings
from datacoolie_dagster.automation.sensing.partition_sensors import build_partition_sensors
from datacoolie_dagster.automation.sensing.sensors import (
    build_automation_sensors,
    build_source_sensors,
    follow_upstreams,
)
from datacoolie_dagster.automation.sensing.watermark_feed import FileWatermarkFeed
from datacoolie_dagster.automation.sensing.watermark_sensor import build_watermark_sensor
from datacoolie_dagster.constants import STAGE
from datacoolie_dagster.dagster_internal import hoist_build_node_deps
from datacoolie_dagster.location.assets import RESOURCE_KEY, build_multi_assets, build_table_assets
from datacoolie_dagster.location.executors import ExecutorSetting, build_executor
from datacoolie_dagster.location.freshness import stage_freshness
from datacoolie_dagster.location.io_manager import IO_MANAGER_KEY, DataCoolieIOManager, with_reads
from datacoolie_dagster.location.jobs import build_jobs
from datacoolie_dagster.location.location_settings import DataCoolieSettings
from datacoolie_dagster.location.resources import DataCoolieResource
from datacoolie_dagster.location.snapshot import read_snapshot
from datacoolie_dagster.location.translator import DataCoolieTranslator

_P = ParamSpec("_P")
_T = TypeVar("_T")


def _cyclic_gc_paused(build: Callable[_P, _T]) -> Callable[_P, _T]:
    """Run ``build`` with the cyclic garbage collector paused (reference counting still frees).

    Building the definitions allocates a few hundred thousand long-lived objects (specs, metadata,
    checks) and frees almost none, so every full collection during the build walks them all for
    nothing: about 10 % of a 1,000-table load (``benchmarks/bench_load.py``). The previous state
    is restored, also when the build raises. The first build of a process then freezes what it built
    (:func:`_freeze_once`).
    """

    @wraps(build)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        enabled = gc.isenabled()
        gc.disable()
        try:
            built = build(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()
        if enabled:
            _freeze_once()
        return built

    return paused


_frozen = False


def _freeze_once() -> None:
    """Move every object alive now out of the cyclic collector's reach, once per process.

    A code server builds its definitions once and keeps them until it exits; right after, Dagster
    builds the repository and its snapshot, allocating enough for two full collections, each walking
    every object the build left (~0.35 CPU s of a 1,000-table load, ``docs/dev/perf-load.md``).
    ``gc.freeze()`` moves them to the permanent generation, which collections skip (reference
    counting still frees them). The young generations are collected first, so only garbage cycles
    already old at the build escape collection. Once per process: a process that builds many times
    (tests) freezes only its first definitions, nothing accumulates.
    """
    global _frozen
    if _frozen:
        return
    _frozen = True
    gc.collect(1)
    gc.freeze()


@_cyclic_gc_paused
def build_definitions(
    settings: DataCoolieSettings | str | os.PathLike[str],
    *,
    translator: DataCoolieTranslator | None = None,
    resource: DataCoolieResource | None = None,
    io_manager: DataCoolieIOManager | None = None,
    executor: ExecutorSetting | None = None,
    **fields: Any,
) -> dg.Definitions:
    """Assets per destination table, external sources, sharded stage jobs and checks.

    Pure: reads the metadata file once (every error listed, nothing half-loaded) and touches no data.

    Args:
        settings: a :class:`DataCoolieSettings`, or the metadata path with the other settings as
            keyword ``fields`` (``build_definitions("pipeline.json", state_base_path="state")``).
            Each setting is documented once, on :class:`DataCoolieSettings`.
        translator: a :class:`DataCoolieTranslator` subclass to change keys, groups or metadata.
        resource: the runtime; by default a :class:`DataCoolieResource` of the settings' runtime fields.
        io_manager: how downstream assets read the tables (``datacoolie_io_manager``; e.g. with
            object-store ``storage_options``); default a :class:`DataCoolieIOManager`. See docs/downstream.md.
        executor: an ``ExecutorDefinition`` (or a setting as ``DataCoolieSettings.executor``) that
            wins over the settings' ``executor``; its config is checked at load (see :mod:`.executors`).
        fields: :class:`DataCoolieSettings` fields, with a metadata path as ``settings``.

    Raises:
        pydantic.ValidationError: an unknown setting or a bad value, naming the field.

    Example:
        >>> defs = build_definitions("metadata/pipeline.json", state_base_path="state")
    """
    if not isinstance(settings, DataCoolieSettings):
        settings = DataCoolieSettings(metadata_path=os.fspath(settings), **fields)
    elif fields:
        settings = DataCoolieSettings(**(dict(settings) | fields))
    return _build(settings, translator, resource or DataCoolieResource(**settings.runtime()), io_manager, executor)


def _build(
    settings: DataCoolieSettings,
    translator: DataCoolieTranslator | None,
    resource: DataCoolieResource,
    io_manager: DataCoolieIOManager | None,
    executor: ExecutorSetting | None,
) -> dg.Definitions:
    # Dagster builds the asset job of one multi-asset in time inputs x checks; linear once rewritten
    hoist_build_node_deps()
    metadata_path, stages = settings.metadata_path, settings.stages
    snapshot = read_snapshot(metadata_path, stages=stages, state_base_path=resource.state_base_path)
    dataflows = snapshot.dataflows
    translator = translator or DataCoolieTranslator()
    stage_names = list(dict.fromkeys(str(d.stage) for d in dataflows if d.stage))
    defaults = stage_freshness(settings.freshness, stage_names)
    assets, sources = build_table_assets(dataflows, translator, freshness=defaults)
    assets = with_reads(follow_upstreams(assets, translator))  # downstream assets load them as Polars frames
    limits = stage_limits(dataflows, settings.max_runs)
    pools = {stage: pool_for(stage) for stage in limits}
    # The op jobs carry their resource: a sensor targeting a job that lacks one is rebuilt by
    # Definitions (SensorDefinition.with_attributes), which passes owners=[] and so prints an `owners`
    # BetaWarning in every process that loads the code location (Dagster 1.13.27).
    jobs: list[dg.JobDefinition | dg.UnresolvedAssetJobDefinition] = [
        job.with_top_level_resources({RESOURCE_KEY: resource.get_resource_definition()})
        for job in (build_jobs(stage_names, assets, pools, snapshot) if settings.include_jobs else [])
    ]
    by_stage = {j.tags[STAGE]: j for j in jobs if j.tags.get(STAGE, "*") != "*"}
    timed = build_schedules(by_stage, schedule_settings(dataflows, settings.schedules)) if settings.include_jobs else []
    sensors: list[dg.SensorDefinition] = (
        [build_limits_sensor({pools[s]: n for s, n in limits.items()})] if limits else []
    )
    if settings.include_sensors:
        interval, status = settings.sensor_interval_seconds, settings.sensor_status
        sensors += [
            # sensed runs go to Dagster's implicit asset job: an asset job of our own over the same
            # tables would cost as much code-location load time again
            *build_source_sensors(
                assets,
                minimum_interval_seconds=interval,
                default_status=status,
                translator=translator,
                asset_job=IMPLICIT_ASSET_JOB,
            ),
            *build_automation_sensors(assets, minimum_interval_seconds=interval, default_status=status),
            *build_watermark_sensor(
                assets,
                FileWatermarkFeed(
                    resource.metadata_path, state_base_path=resource.state_base_path, state_url=resource.state_url
                ),
                minimum_interval_seconds=interval,
                default_status=status,
                asset_job=IMPLICIT_ASSET_JOB,
            ),
        ]
        sensors += build_partition_sensors(
            assets, minimum_interval_seconds=interval, default_status=status, asset_job=IMPLICIT_ASSET_JOB
        )
    if settings.run_retries:
        retry = partial(
            build_retry_sensor,
            base_delay_seconds=settings.retry_base_delay,
            max_retries=settings.run_retries,
            refuse_unknown=False,
        )
        sensors += [retry(jobs=jobs)] if settings.include_jobs else []
        sensors.append(retry(name=ASSET_SENSOR_NAME, asset_job=IMPLICIT_ASSET_JOB))
    return dg.Definitions(
        assets=[*build_multi_assets(assets, pools=pools, snapshot=snapshot), *sources],
        jobs=jobs,
        schedules=[s for s in timed if isinstance(s, dg.ScheduleDefinition)],
        sensors=[*(s for s in timed if isinstance(s, dg.SensorDefinition)), *sensors],
        resources={
            RESOURCE_KEY: resource,
            IO_MANAGER_KEY: io_manager or DataCoolieIOManager(metadata_path=resource.metadata_path),
        },
        executor=build_executor(executor if executor is not None else settings.executor),
    )
