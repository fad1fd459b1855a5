"""Jobs whose op executes the sharded parallel driver: one per stage, one for all, and maintenance.

A stage job is ``datacoolie_shards`` (fans out ``job_num`` shards) -> ``datacoolie_run_shard``.
``datacoolie_all_stages`` chains one such fan-out per stage in lineage order, each waiting for every
shard of the stage before it; inside a shard, tables run level by level along the lineage.

Run config (top level, thanks to a config mapping)::

    {"job_num": 4, "job_index": 2, "max_workers": 4, "retry_count": 1, "retry_delay": 5,
     "stop_on_error": false, "dry_run": false}

With ``job_index`` the job runs that one shard (CI launches indexes 0..N-1 as N runs with
``dagster job launch -j <job> --config-json …``); without it the job fans out ``job_num`` shard
steps that the executor runs in parallel (multiprocess locally, k8s/Celery in a cluster). Each shard
records an ``AssetMaterialization`` for every table it wrote, so the asset catalog is truthful
whichever way the work ran.

The steps hand each other nothing through an IO manager: the fan-out's outputs are ``Nothing``
(Dagster keeps their mapping keys, ``shard_<index>``, in the event log) and every shard step reads
its settings from the run's config and its index from its mapping key. So a shard step runs on any
host that can load the code location — another Celery worker, its own Kubernetes pod — with no
folder shared with the planning step's host.
"""

# no `from __future__ import annotations`: Dagster reads the context and config annotations at runtime

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import dagster as dg

from datacoolie_core import DataFlow
from datacoolie_core.api import DataFlowRuntimeInfo, JobDistributor, describe, normalize_names
from datacoolie_dagster.constants import DATAFLOWS_RETRIED, EMPTY_SHARD, FAILED_DATAFLOWS, FINAL_FAILURE, STAGE
from datacoolie_dagster.location.assets import RESOURCE_KEY, TableAsset
from datacoolie_dagster.location.catalog import build_materializations
from datacoolie_dagster.location.location_settings import DRIVER_FIELDS
from datacoolie_dagster.location.masked_steps import masked_events, masked_step
from datacoolie_dagster.location.ordering import LineageCycleError, ordered_levels
from datacoolie_dagster.location.resources import DataCoolieResource
from datacoolie_dagster.location.snapshot import MetadataSnapshot, ensure_loaded_snapshot
from datacoolie_dagster.location.tables import DestinationTable, identifier, lineage_levels, writer_rounds
from datacoolie_dagster.location.touched_partitions import window_specs

if TYPE_CHECKING:
    from datacoolie_core.api import DataCoolieDriver  # loads Polars and deltalake: run time only

ALL_STAGES_JOB = "datacoolie_all_stages"
PLAN_OP = "datacoolie_shards"
RUN_SHARD_OP = "datacoolie_run_shard"
MAINTENANCE_JOB = "datacoolie_maintenance"
SHARD_KEY_PREFIX = "shard_"
"""A shard step's mapping key is ``shard_<index>``: the index it runs."""


class ShardJobConfig(dg.Config):
    """How one launch of a stage job runs the driver."""

    job_num: int = 1
    """Number of shards in total."""
    job_index: int | None = None
    """Run only this shard (0..job_num-1); unset: fan out every shard in this run."""
    # the DriverSettings fields, per launch; unset: the resource's (test_settings_model pins the names)
    max_workers: int | None = None
    retry_count: int | None = None
    retry_delay: float | None = None
    stop_on_error: bool | None = None
    dry_run: bool = False


class ShardOpConfig(ShardJobConfig):
    stage: str | None = None
    """Stage(s) to run, comma list; unset: every stage."""
    dataflow_ids: list[str] | None = None
    """Only these dataflows of the stage (the step of an all-stages job for dataflows without a stage)."""


@dataclass(frozen=True)
class Step:
    """One barrier of a job: every shard of ``stage`` (or of ``dataflow_ids``) finishes before the next."""

    name: str
    stage: str | None
    dataflow_ids: tuple[str, ...] | None = None


class MaintenanceConfig(dg.Config):
    connection: str | None = None
    """Destination connection name(s); unset: every lakehouse destination."""
    do_compact: bool = True
    do_cleanup: bool = True
    retention_hours: float = 168.0
    job_num: int = 1
    job_index: int = 0


def build_jobs(
    stages: list[str],
    assets: list[TableAsset],
    pools: Mapping[str, str] | None = None,
    snapshot: MetadataSnapshot | None = None,
) -> list[dg.JobDefinition]:
    """A sharded driver job per stage, one for all stages, and the maintenance job.

    ``pools`` (``{stage: pool}``): the shard op of these stages declares the stage's pool, so a run
    of the stage (or of every stage) waits in the queue while the pool is full. ``snapshot``: the
    parse ``assets`` were built from; a step refuses to run when the run was planned with another
    (see :mod:`.snapshot`).
    """
    keys = {dataflow_id: a for a in assets for dataflow_id in a.table.dataflow_ids}
    plan = _plan_op(snapshot)
    pools = pools or {}
    shard_op = partial(_run_shard_op, keys, snapshot=snapshot)
    unpooled = shard_op(RUN_SHARD_OP, None)
    shard_ops: dict[str | None, dg.OpDefinition] = {
        stage: shard_op(f"{RUN_SHARD_OP}_{identifier(stage)}", pools[stage]) if stage in pools else unpooled
        for stage in stages
    }
    shard_ops[None] = unpooled
    jobs = [
        _stage_job(f"datacoolie_{identifier(stage)}", [Step(identifier(stage), stage)], plan, shard_ops, stage=stage)
        for stage in stages
    ]
    jobs.append(_stage_job(ALL_STAGES_JOB, all_stages_steps(stages, assets), plan, shard_ops))
    jobs.append(_maintenance_job(snapshot))
    return jobs


def all_stages_steps(stages: list[str], assets: list[TableAsset]) -> list[Step]:
    """The stages in lineage order (a stage after the stages whose tables it reads), then the dataflows
    without a stage. Shards of one stage may read each other's tables only through a later stage.

    Stages whose tables read each other in a cycle (``a`` reads ``b`` for one table and ``b`` reads
    ``a`` for another) run as one step: inside it, each shard orders their tables by lineage.
    """
    stage_of = {a.table.key: a.table.first.stage for a in assets}
    reads = {s: {stage_of.get(u) for a in assets if a.table.first.stage == s for u in a.table.upstream} for s in stages}
    steps = [Step("_".join(map(identifier, group)), ",".join(group)) for group in _stage_groups(stages, reads)]
    unstaged = tuple(
        i for a in assets for d, i in zip(a.table.dataflows, a.table.dataflow_ids, strict=True) if not d.stage
    )
    return [*steps, Step("unstaged", None, unstaged)] if unstaged else steps


def _stage_groups(stages: list[str], reads: Mapping[str, set[str | None]]) -> list[tuple[str, ...]]:
    """``stages`` in lineage order (:func:`ordered_levels`), the members of each cycle merged into one group."""
    group_of: dict[str, tuple[str, ...]] = {stage: (stage,) for stage in stages}
    while True:
        groups = list(dict.fromkeys(group_of.values()))
        graph = {g: {group_of[r] for s in g for r in reads[s] if r in group_of} for g in groups}
        try:
            return [group for level in ordered_levels(graph) for group in level]
        except LineageCycleError as error:
            merged = tuple(s for s in stages if group_of[s] in error.cycle)
            group_of.update(dict.fromkeys(merged, merged))


def _stage_job(
    name: str,
    steps: list[Step],
    plan: dg.OpDefinition,
    shard_ops: Mapping[str | None, dg.OpDefinition],
    *,
    stage: str | None = None,
) -> dg.JobDefinition:
    """``plan -> run_shard`` fan-out per step; each step waits for every shard of the previous one.

    ``stage``: the job of that one stage (tagged with it); otherwise a job of every stage (``*``).
    """
    single = stage is not None
    names = [(PLAN_OP, RUN_SHARD_OP) if single else (f"{PLAN_OP}_{s.name}", f"{RUN_SHARD_OP}_{s.name}") for s in steps]

    def to_ops(values: Mapping[str, Any]) -> dict[str, Any]:
        # a ConfigMapping hands its function a plain dict (unlike an op's Config parameter)
        config = ShardJobConfig(**values).model_dump()
        ops: dict[str, Any] = {}
        for (plan_name, run_name), step in zip(names, steps, strict=True):
            # the shard steps get the very config the planning step got: they recompute their shard
            step_config = {"config": config | {"stage": step.stage, "dataflow_ids": _list(step.dataflow_ids)}}
            ops |= {plan_name: step_config, run_name: step_config}
        return {"ops": ops}

    about = f"Run stage '{stage}' with the sharded parallel driver." if stage else "Run every stage in lineage order."

    @dg.job(
        name=name,
        description=about,
        config=dg.ConfigMapping(config_fn=to_ops, config_schema=ShardJobConfig.to_config_schema()),
        tags={STAGE: stage or "*"},
    )
    def _job() -> None:
        done = None
        for (plan_name, run_name), step in zip(names, steps, strict=True):
            shards = plan.alias(plan_name)(done) if done is not None else plan.alias(plan_name)()
            done = shards.map(shard_ops.get(step.stage, shard_ops[None]).alias(run_name)).collect()

    return _job


def _list(ids: tuple[str, ...] | None) -> list[str] | None:
    return list(ids) if ids is not None else None


def _plan_op(snapshot: MetadataSnapshot | None) -> dg.OpDefinition:
    # Nothing outputs: a fan-out whose steps need no IO manager, so no folder shared between hosts
    @dg.op(name=PLAN_OP, ins={"after": dg.In(dg.Nothing)}, out=dg.DynamicOut(dg.Nothing), tags=_tags(snapshot))
    def plan(context: dg.OpExecutionContext, config: ShardOpConfig) -> Iterator[dg.DynamicOutput[None]]:
        if snapshot is not None:  # fail the run before any shard starts
            ensure_loaded_snapshot(context, snapshot)
        if config.job_num < 1 or (config.job_index is not None and not 0 <= config.job_index < config.job_num):
            raise dg.Failure(f"job_index must be in 0..{config.job_num - 1} (job_num {config.job_num})")
        indexes = [config.job_index] if config.job_index is not None else list(range(config.job_num))
        for index in indexes:
            yield dg.DynamicOutput(None, mapping_key=f"{SHARD_KEY_PREFIX}{index}")

    return plan


def _run_shard_op(
    assets_by_dataflow: Mapping[str, TableAsset], name: str, pool: str | None, *, snapshot: MetadataSnapshot | None
) -> dg.OpDefinition:
    """The op running one shard; a pooled stage has its own copy (its own name) declaring its pool.

    The shard runs the dataflows of ``assets_by_dataflow`` — the parse its materializations are
    keyed by — never a second read of the metadata file.
    """
    tables = list({id(a): a for a in assets_by_dataflow.values()}.values())
    windows = window_specs(tables)
    parsed = [d for a in tables for d in a.table.dataflows]

    @dg.op(
        name=name,
        ins={"planned": dg.In(dg.Nothing)},
        required_resource_keys={RESOURCE_KEY},
        out=dg.Out(dg.Nothing),
        pool=pool,
        tags=_tags(snapshot),
    )
    def run_shard(context: dg.OpExecutionContext, config: ShardOpConfig) -> Iterator[dg.AssetMaterialization]:
        if snapshot is not None:
            ensure_loaded_snapshot(context, snapshot)
        shard = config.model_dump() | {"job_index": shard_index(context)}
        resource: DataCoolieResource = getattr(context.resources, RESOURCE_KEY)
        overrides = {k: shard[k] for k in ("job_num", "job_index", "dry_run", *DRIVER_FIELDS)}
        overrides["touched_windows"] = windows  # a partitioned table records the partitions it touched
        runtimes: list[DataFlowRuntimeInfo] = []
        with masked_step():  # Dagster stores what leaves this body: errors and metadata without secrets
            with resource.driver(**overrides) as driver:
                chosen = _step_dataflows(parsed, shard)
                dataflows = JobDistributor.from_config(driver.config).select(chosen)
                if not dataflows:
                    _report_empty_shard(context, shard, chosen)
                for level in _run_in_lineage_order(driver, dataflows, assets_by_dataflow):
                    runtimes.extend(level)
                    yield from masked_events(_materializations(level, assets_by_dataflow, context.instance))
            counts = {s: sum(r.status == s for r in runtimes) for s in ("succeeded", "failed", "skipped")}
            context.log.info(
                f"shard {shard['job_index']}/{shard['job_num']}: " + ", ".join(f"{n} {s}" for s, n in counts.items())
            )
            for runtime in runtimes:
                if runtime.status == "skipped":
                    context.log.info(describe(runtime))
            _raise_failures(runtimes)

    return run_shard


def shard_index(context: dg.OpExecutionContext) -> int:
    """The index a shard step runs: its mapping key, ``shard_<index>``, set by the planning step."""
    key = context.get_mapping_key()
    if key is None or not key.startswith(SHARD_KEY_PREFIX) or not key[len(SHARD_KEY_PREFIX) :].isdigit():
        raise dg.Failure(
            f"{context.op.name}: runs only as a step of the fan-out ('{SHARD_KEY_PREFIX}<index>'), got {key!r}"
        )
    return int(key[len(SHARD_KEY_PREFIX) :])


def _step_dataflows(parsed: list[DataFlow], shard: Mapping[str, Any]) -> list[DataFlow]:
    """The dataflows of the shard's stage(s) (or ``dataflow_ids``), before sharding."""
    stages = set(normalize_names(shard["stage"]))
    ids = shard.get("dataflow_ids")
    return [d for d in parsed if (not stages or d.stage in stages) and (ids is None or d.dataflow_id in ids)]


def empty_shard_reason(shard: Mapping[str, Any], step_dataflows: list[DataFlow]) -> str:
    """Why a shard has nothing to run, e.g. ``shard 0/3 has no dataflow of stage X: 2 active
    dataflow(s) spread over 3 shards (by group_number, else a hash of the dataflow id) went to shard(s) 1``.
    """
    what = f"stage {shard['stage']}" if shard["stage"] else "this step"
    active = [d for d in step_dataflows if d.is_active]
    owners = sorted({JobDistributor.shard_of(d, shard["job_num"]) for d in active})
    spread = f"{len(active)} active dataflow(s) spread over {shard['job_num']} shards"
    went = f" (by group_number, else a hash of the dataflow id) went to shard(s) {', '.join(map(str, owners))}"
    return f"shard {shard['job_index']}/{shard['job_num']} has no dataflow of {what}: {spread}" + (
        went if owners else ""
    )


def _report_empty_shard(
    context: dg.OpExecutionContext, shard: Mapping[str, Any], step_dataflows: list[DataFlow]
) -> None:
    """Say it in the step's log and in a run tag (the run's page shows it; CI can query it)."""
    reason = empty_shard_reason(shard, step_dataflows)
    context.log.info(reason)
    key = f"{EMPTY_SHARD}/{shard['stage'] or context.op.name}/{shard['job_index']}"
    context.instance.add_run_tags(context.run_id, {key: reason})


def _tags(snapshot: MetadataSnapshot | None) -> dict[str, str] | None:
    return snapshot.tags if snapshot is not None else None


def _run_in_lineage_order(
    driver: "DataCoolieDriver", dataflows: list[DataFlow], assets_by_dataflow: Mapping[str, TableAsset]
) -> Iterator[list[DataFlowRuntimeInfo]]:
    """Run a shard level by level along the lineage, so a table is written before the shard reads it.

    DataCoolie runs a stage list as one unordered batch; with lineage known we do better (an
    all-stages run reads bronze after bronze is loaded). A table whose upstream failed is not run.
    """
    tables: dict[str, DestinationTable] = {}
    for dataflow in dataflows:
        asset = assets_by_dataflow.get(str(dataflow.dataflow_id))
        key, upstream = (asset.table.key, asset.table.upstream) if asset else (f"dataflow:{dataflow.dataflow_id}", [])
        tables.setdefault(key, DestinationTable(key, [], upstream=list(upstream))).dataflows.append(dataflow)
    failed: set[str] = set()
    for level in lineage_levels(list(tables.values()), lambda t: t):
        runnable = [t for t in level if not set(t.upstream) & failed]
        failed.update(t.key for t in level if t not in runnable)
        if not runnable or (failed and driver.config.stop_on_error):
            continue
        # fan-in writers of one table take turns
        done = [r for flows in writer_rounds(runnable) for r in driver.run(dataflows=flows).runtimes]
        failed.update(t.key for t in runnable if any(r.status == "failed" for r in _of(done, t)))
        yield done


def _of(runtimes: list[DataFlowRuntimeInfo], table: DestinationTable) -> list[DataFlowRuntimeInfo]:
    ids = set(table.dataflow_ids)
    return [r for r in runtimes if r.dataflow_id in ids]


def _raise_failures(runtimes: list[DataFlowRuntimeInfo]) -> None:
    failed = [r for r in runtimes if r.status == "failed"]
    if failed:
        details = "\n".join(f"- {r.dataflow_name} [{r.dataflow_id}]: {r.error_message}" for r in failed)
        raise dg.Failure(
            description=f"{len(failed)} dataflow(s) failed:\n{details}",
            metadata={
                FINAL_FAILURE: DATAFLOWS_RETRIED,
                FAILED_DATAFLOWS: [f"{r.dataflow_name} [{r.dataflow_id}]" for r in failed],
            },
        )


def _materializations(
    runtimes: list[DataFlowRuntimeInfo], assets_by_dataflow: Mapping[str, TableAsset], instance: dg.DagsterInstance
) -> Iterator[dg.AssetMaterialization]:
    """One materialization per table that ``runtimes`` wrote; per touched partition for a partitioned one."""
    assets = list({id(a): a for a in assets_by_dataflow.values()}.values())
    yield from build_materializations(assets, runtimes, instance=instance)


def _maintenance_job(snapshot: MetadataSnapshot | None) -> dg.JobDefinition:
    @dg.op(name="datacoolie_maintenance_op", required_resource_keys={RESOURCE_KEY}, tags=_tags(snapshot))
    def maintain(context: dg.OpExecutionContext, config: MaintenanceConfig) -> None:
        if snapshot is not None:
            ensure_loaded_snapshot(context, snapshot)
        resource: DataCoolieResource = getattr(context.resources, RESOURCE_KEY)
        overrides = {
            "job_num": config.job_num,
            "job_index": config.job_index,
            "retention_hours": config.retention_hours,
        }
        with masked_step():  # Dagster stores what leaves this body: errors without secrets
            with resource.driver(**overrides) as driver:
                result = driver.run_maintenance(
                    connection=config.connection, do_compact=config.do_compact, do_cleanup=config.do_cleanup
                )
            context.log.info(
                f"maintenance: {result.succeeded} succeeded, {result.failed} failed, {result.skipped} skipped"
            )
            for runtime in result.runtimes:
                context.log.info(describe(runtime))
            if result.failed:
                raise dg.Failure(description=f"maintenance failed for: {result.failure_summary()}")

    @dg.job(name=MAINTENANCE_JOB, description="OPTIMIZE and VACUUM every Delta destination once.")
    def _job() -> None:
        maintain()

    return _job
