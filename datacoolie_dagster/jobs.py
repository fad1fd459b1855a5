"""Jobs whose op executes the sharded parallel driver: one per stage, one for all, and maintenance.

Run config (top level, thanks to a config mapping)::

    {"job_num": 4, "job_index": 2, "max_workers": 4, "retry_count": 1, "retry_delay": 5,
     "stop_on_error": false, "dry_run": false}

With ``job_index`` the job runs that one shard (CI launches indexes 0..N-1 as N runs with
``dagster job launch -j <job> --config-json …``); without it the job fans out ``job_num`` shard
steps that the executor runs in parallel (multiprocess locally, k8s/Celery in a cluster). Each shard
records an ``AssetMaterialization`` for every table it wrote, so the asset catalog is truthful
whichever way the work ran.
"""

# no `from __future__ import annotations`: Dagster reads the context and config annotations at runtime

from collections.abc import Iterator, Mapping
from typing import Any

import dagster as dg

from datacoolie_core.models.runtime import DataFlowRuntimeInfo, ExecutionResult
from datacoolie_dagster.assets import RESOURCE_KEY, TableAsset
from datacoolie_dagster.resources import DataCoolieResource
from datacoolie_dagster.results import materialization_metadata

ALL_STAGES_JOB = "datacoolie_all_stages"
MAINTENANCE_JOB = "datacoolie_maintenance"


class ShardJobConfig(dg.Config):
    """How one launch of a stage job runs the driver."""

    job_num: int = 1
    """Number of shards in total."""
    job_index: int | None = None
    """Run only this shard (0..job_num-1); unset: fan out every shard in this run."""
    max_workers: int | None = None
    retry_count: int | None = None
    retry_delay: float | None = None
    stop_on_error: bool = False
    dry_run: bool = False


class ShardOpConfig(ShardJobConfig):
    stage: str | None = None
    """Stage(s) to run, comma list; unset: every stage."""


class MaintenanceConfig(dg.Config):
    connection: str | None = None
    """Destination connection name(s); unset: every lakehouse destination."""
    do_compact: bool = True
    do_cleanup: bool = True
    retention_hours: float = 168.0
    job_num: int = 1
    job_index: int = 0


def build_jobs(stages: list[str], assets: list[TableAsset]) -> list[dg.JobDefinition]:
    """A sharded driver job per stage, one for all stages, and the maintenance job."""
    keys = {dataflow_id: a for a in assets for dataflow_id in a.table.dataflow_ids}
    plan, run_shard = _shard_ops(keys)
    jobs = [_stage_job(f"datacoolie_{_identifier(stage)}", stage, plan, run_shard) for stage in stages]
    jobs.append(_stage_job(ALL_STAGES_JOB, None, plan, run_shard))
    jobs.append(_maintenance_job())
    return jobs


def _stage_job(name: str, stage: str | None, plan: dg.OpDefinition, run_shard: dg.OpDefinition) -> dg.JobDefinition:
    def to_ops(config: ShardJobConfig) -> dict[str, Any]:
        return {"ops": {plan.name: {"config": config.model_dump() | {"stage": stage}}}}

    @dg.job(
        name=name,
        description=f"Run stage '{stage}' with the sharded parallel driver." if stage else "Run every stage.",
        config=dg.ConfigMapping(config_fn=to_ops),
        tags={"datacoolie/stage": stage or "*"},
    )
    def _job() -> None:
        plan().map(run_shard)

    return _job


def _shard_ops(assets_by_dataflow: Mapping[str, TableAsset]) -> tuple[dg.OpDefinition, dg.OpDefinition]:
    @dg.op(name="datacoolie_shards", out=dg.DynamicOut(dict))
    def plan(context: dg.OpExecutionContext, config: ShardOpConfig) -> Iterator[dg.DynamicOutput[dict[str, Any]]]:
        if config.job_num < 1 or (config.job_index is not None and not 0 <= config.job_index < config.job_num):
            raise dg.Failure(f"job_index must be in 0..{config.job_num - 1} (job_num {config.job_num})")
        indexes = [config.job_index] if config.job_index is not None else list(range(config.job_num))
        for index in indexes:
            yield dg.DynamicOutput(config.model_dump() | {"job_index": index}, mapping_key=f"shard_{index}")

    @dg.op(name="datacoolie_run_shard", required_resource_keys={RESOURCE_KEY}, out={})
    def run_shard(context: dg.OpExecutionContext, shard: dict[str, Any]) -> Iterator[dg.AssetMaterialization]:
        resource: DataCoolieResource = getattr(context.resources, RESOURCE_KEY)
        overrides = {k: shard[k] for k in ("job_num", "job_index", "max_workers", "retry_count", "retry_delay",
                                           "stop_on_error", "dry_run")}  # fmt: skip
        with resource.driver(**overrides) as driver:
            result = driver.run(stage=shard["stage"])
        context.log.info(
            f"shard {shard['job_index']}/{shard['job_num']}: {result.succeeded} succeeded, {result.failed} failed, "
            f"{result.skipped} skipped, {result.pending} pending"
        )
        yield from _materializations(result, assets_by_dataflow)
        if result.failed:
            raise dg.Failure(description=f"failed dataflows: {result.failure_summary()}")

    return plan, run_shard


def _materializations(
    result: ExecutionResult, assets_by_dataflow: Mapping[str, TableAsset]
) -> Iterator[dg.AssetMaterialization]:
    written: dict[str, list[DataFlowRuntimeInfo]] = {}
    for runtime in result.runtimes:
        asset = assets_by_dataflow.get(runtime.dataflow_id)
        if asset is not None and runtime.status == "succeeded":
            written.setdefault(asset.table.key, []).append(runtime)
    for runtimes in written.values():
        asset = assets_by_dataflow[runtimes[0].dataflow_id]
        metadata = materialization_metadata(asset.table, runtimes)
        yield dg.AssetMaterialization(asset_key=asset.spec.key, metadata=metadata)


def _maintenance_job() -> dg.JobDefinition:
    @dg.op(name="datacoolie_maintenance_op", required_resource_keys={RESOURCE_KEY})
    def maintain(context: dg.OpExecutionContext, config: MaintenanceConfig) -> None:
        resource: DataCoolieResource = getattr(context.resources, RESOURCE_KEY)
        overrides = {
            "job_num": config.job_num,
            "job_index": config.job_index,
            "retention_hours": config.retention_hours,
        }
        with resource.driver(**overrides) as driver:
            result = driver.run_maintenance(
                connection=config.connection, do_compact=config.do_compact, do_cleanup=config.do_cleanup
            )
        context.log.info(f"maintenance: {result.succeeded} succeeded, {result.failed} failed, {result.skipped} skipped")
        if result.failed:
            raise dg.Failure(description=f"maintenance failed for: {result.failure_summary()}")

    @dg.job(name=MAINTENANCE_JOB, description="OPTIMIZE and VACUUM every Delta destination once.")
    def _job() -> None:
        maintain()

    return _job


def _identifier(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
