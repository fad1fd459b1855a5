"""At most ``max_runs`` live runs per pipeline (a stage): a Dagster pool per stage, counted per run.

A stage with a limit — ``build_definitions(max_runs=…)`` or ``configure.dagster.max_runs`` on its
dataflows — gets the pool ``datacoolie/<stage>``. Every op that writes the stage's tables declares
it: the stage job's shard op and the stage's own asset ops (its tables leave the shared
``datacoolie_tables`` op for ``datacoolie_<stage>_tables``). With ``concurrency.pools.granularity:
run`` in ``dagster.yaml`` the queued run coordinator dequeues a run only when every pool it uses
has a free slot, so a run over the limit waits in QUEUED — it is never dropped.

The limits live in the instance (``dagster instance concurrency set``). The
:data:`LIMITS_SENSOR` sensor, running by default, writes the metadata's limits there on each
evaluation (the metadata is the source of truth: a limit changed in the UI is set back), and
``datacoolie-dagster tick`` runs it too. Until it first ran, ``concurrency.pools.default_limit: 1``
in our ``dagster.yaml`` holds every pool to one run: a missing sync errs on the strict side.

Stages without a limit declare no pool, so their shards and sensed runs run side by side. Pools are
named by stage alone (an op's pool is fixed before any code location is known): two code locations
in one instance with a stage of the same name share its pool, and must agree on its ``max_runs``. One writer
per destination table across runs: runs of one limited stage hold its pool, so ``max_runs: 1``
serializes them; beyond that, the engine itself takes a per-table lock around each write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import dagster as dg

from datacoolie_core import DataFlow, MetadataError, MetadataIssue
from datacoolie_core.api import did_you_mean
from datacoolie_dagster.constants import NAMESPACE
from datacoolie_dagster.location.dataflow_settings import dagster_settings

POOL_PREFIX = NAMESPACE
LIMITS_SENSOR = "datacoolie_pool_limits"


def pool_for(stage: str) -> str:
    """The pool every writing op of ``stage`` declares: ``datacoolie/<stage>``."""
    return f"{POOL_PREFIX}{stage}"


def stage_limits(dataflows: Iterable[DataFlow], max_runs: int | Mapping[str, int] | None = None) -> dict[str, int]:
    """``{stage: max_runs}`` for every stage that has a limit.

    A stage's limit is, in order: ``max_runs[stage]`` (a mapping from the factory), the smallest
    ``configure.dagster.max_runs`` of its dataflows, ``max_runs`` (an int from the factory: every
    stage's default). Stages without any have no limit.

    Raises:
        MetadataError: a limit that is not a positive integer, or one for a stage that does not exist.
    """
    by_stage: dict[str, list[DataFlow]] = {}
    for dataflow in dataflows:
        if dataflow.stage:
            by_stage.setdefault(str(dataflow.stage), []).append(dataflow)
    overrides = dict(max_runs) if isinstance(max_runs, Mapping) else {}
    default = None if isinstance(max_runs, Mapping) else max_runs
    issues = [
        MetadataIssue("max_runs", f"no stage '{stage}'{did_you_mean(stage, by_stage)}", subject="build_definitions")
        for stage in overrides
        if stage not in by_stage
    ]
    for stage, value in [*overrides.items(), *([("*", default)] if default is not None else [])]:
        if not _positive(value):
            issues.append(MetadataIssue("max_runs", f"must be a positive integer, got {value!r}", subject=stage))
    if issues:
        raise MetadataError(issues)
    limits = {stage: overrides.get(stage) or max_runs_of(flows, default) for stage, flows in by_stage.items()}
    return {stage: limit for stage, limit in limits.items() if limit is not None}


def max_runs_of(dataflows: Iterable[DataFlow], default: int | None = None) -> int | None:
    """The smallest ``configure.dagster.max_runs`` of ``dataflows``, else ``default``.

    Raises:
        MetadataError: a dataflow whose ``configure.dagster`` is invalid (checked at load for a file).
    """
    found = [limit for d in dataflows if (limit := dagster_settings(d).max_runs) is not None]
    return min(found, default=default)


def build_limits_sensor(limits: Mapping[str, int], *, minimum_interval_seconds: int = 60) -> dg.SensorDefinition:
    """:data:`LIMITS_SENSOR`: stores ``{pool: limit}`` in the instance; requests no runs."""
    wanted = dict(sorted(limits.items()))

    @dg.sensor(
        name=LIMITS_SENSOR,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Keeps each stage pool's limit (max_runs from the metadata) in the instance.",
    )
    def _limits(context: dg.SensorEvaluationContext) -> dg.SkipReason:
        changed = apply_pool_limits(context.instance, wanted)
        for pool in changed:
            context.log.info(f"pool {pool}: limit set to {wanted[pool]}")
        return dg.SkipReason(", ".join(f"{pool}={limit}" for pool, limit in wanted.items()) + " (in sync)")

    return _limits


def apply_pool_limits(instance: dg.DagsterInstance, limits: Mapping[str, int]) -> list[str]:
    """Store each pool's limit in the instance where it differs; the pools that changed.

    The same as ``dagster instance concurrency set <pool> <limit>``; idempotent.
    """
    changed = []
    for pool, limit in limits.items():
        info = instance.event_log_storage.get_concurrency_info(pool)
        if info.using_default_limit or info.limit != limit:
            instance.event_log_storage.set_concurrency_slots(pool, limit)
            changed.append(pool)
    return changed


def _positive(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
