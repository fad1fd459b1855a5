"""At most ``max_runs`` live runs per pipeline: a Dagster pool per pipeline, dequeued per run.

Every op of a pipeline (its multi_assets, its stage job's ops) declares ``pool=pool_for(pipeline)``.
With ``concurrency.pools.granularity: run`` in ``dagster.yaml`` the queued run coordinator dequeues a
run only when each pool it uses has a free slot, so a run over the limit waits in QUEUED — it is
never dropped. The pool's limit is ``max_runs`` (factory argument, or ``configure.dagster.max_runs``
of the pipeline's dataflows, the smallest wins); :func:`apply_pool_limits` writes them to the
instance (the same as ``dagster instance concurrency set <pool> <limit>``). Pools without a limit get
``concurrency.pools.default_limit`` (1 in our ``dagster.yaml``).

One writer per destination table follows for tables written by one pipeline: its runs hold the
pipeline's pool, so with ``max_runs: 1`` two runs never write a table at once. Pools are preferred to
run tags because runs started from the UI (asset materializations) carry no custom tags;
:func:`run_tags_for` gives the ``datacoolie/pipeline`` tag for the tag-limit alternative
(``concurrency.runs.tag_concurrency_limits`` with ``applyLimitPerUniqueValue``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import dagster as dg

from datacoolie_core import DataFlow, MetadataError, MetadataIssue
from datacoolie_dagster.constants import CONFIGURE_KEY
from datacoolie_dagster.partitions import dagster_config

POOL_PREFIX = "datacoolie/"
PIPELINE_TAG = "datacoolie/pipeline"


def pool_for(pipeline: str) -> str:
    """The pool every op of ``pipeline`` declares: ``datacoolie/<pipeline>``."""
    return f"{POOL_PREFIX}{pipeline}"


def run_tags_for(pipeline: str) -> dict[str, str]:
    """Run tags naming the pipeline, for ``tag_concurrency_limits`` on ``datacoolie/pipeline``."""
    return {PIPELINE_TAG: pipeline}


def max_runs_of(dataflows: Iterable[DataFlow], default: int | None = None) -> int | None:
    """The smallest ``configure.dagster.max_runs`` of ``dataflows``, else ``default``.

    Raises:
        MetadataError: a ``max_runs`` that is not a positive integer, naming the dataflow.
    """
    found: list[int] = []
    for dataflow in dataflows:
        value = getattr(dagster_config(dataflow), "max_runs", None)  # an extra key of DagsterConfig
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            issue = MetadataIssue(
                f"configure.{CONFIGURE_KEY}.max_runs",
                f"must be a positive integer, got {value!r}",
                subject=f"dataflow '{dataflow.name}'",
            )
            raise MetadataError([issue])
        found.append(value)
    return min(found, default=default)


def pool_limits(pipelines: Mapping[str, Iterable[DataFlow]], *, max_runs: int | None = None) -> dict[str, int]:
    """``{pool: limit}`` for every pipeline that has a limit (its metadata's, else ``max_runs``)."""
    limits = {pool_for(name): max_runs_of(flows, max_runs) for name, flows in pipelines.items()}
    return {pool: limit for pool, limit in limits.items() if limit is not None}


def apply_pool_limits(instance: dg.DagsterInstance, limits: Mapping[str, int]) -> None:
    """Store each pool's limit in the instance (idempotent; ``dagster instance concurrency set``)."""
    for pool, limit in limits.items():
        instance.event_log_storage.set_concurrency_slots(pool, limit)
