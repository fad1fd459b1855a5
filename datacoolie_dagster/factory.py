"""``build_definitions``: DataCoolie metadata -> a Dagster ``Definitions`` (assets, jobs, checks)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import dagster as dg

from datacoolie_core import FileProvider
from datacoolie_dagster.assets import RESOURCE_KEY, build_multi_assets, build_table_assets
from datacoolie_dagster.jobs import build_jobs
from datacoolie_dagster.resources import DataCoolieResource
from datacoolie_dagster.translator import DataCoolieTranslator


def build_definitions(
    metadata_path: str | os.PathLike[str],
    *,
    stages: str | Sequence[str] | None = None,
    translator: DataCoolieTranslator | None = None,
    resource: DataCoolieResource | None = None,
    state_base_path: str | os.PathLike[str] | None = None,
    log_base_path: str | os.PathLike[str] | None = None,
    max_workers: int = 4,
    retry_count: int = 1,
    retry_delay: float = 5.0,
    include_jobs: bool = True,
) -> dg.Definitions:
    """Assets per destination table, external sources, sharded stage jobs and checks.

    Pure: reads the metadata file once (every error listed, nothing half-loaded) and touches no data.

    Args:
        metadata_path: DataCoolie metadata file (JSON or YAML).
        stages: only these stages (name, comma list or list); default every stage.
        translator: a :class:`DataCoolieTranslator` subclass to change keys, groups or metadata.
        resource: the runtime settings; by default built from the arguments below.
        state_base_path, log_base_path: where watermarks and logs go (see DataCoolieResource).
        max_workers, retry_count, retry_delay: driver settings of the default resource.
        include_jobs: also build the sharded stage jobs and the maintenance job.

    Example:
        >>> defs = build_definitions("metadata/pipeline.json", state_base_path="state")
    """
    resource = resource or DataCoolieResource(
        metadata_path=os.fspath(metadata_path),
        state_base_path=os.fspath(state_base_path) if state_base_path is not None else None,
        log_base_path=os.fspath(log_base_path) if log_base_path is not None else None,
        max_workers=max_workers,
        retry_count=retry_count,
        retry_delay=retry_delay,
    )
    provider = FileProvider(metadata_path)
    provider.initialize()
    dataflows = provider.get_dataflows(stage=stages)
    assets, sources = build_table_assets(dataflows, translator or DataCoolieTranslator())
    stage_names = list(dict.fromkeys(str(d.stage) for d in dataflows if d.stage))
    return dg.Definitions(
        assets=[*build_multi_assets(assets), *sources],
        jobs=build_jobs(stage_names, assets) if include_jobs else [],
        resources={RESOURCE_KEY: resource},
    )
