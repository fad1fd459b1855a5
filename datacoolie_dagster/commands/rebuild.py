"""``datacoolie-dagster rebuild ASSET [PARTITION]``: re-materialize one partition and all downstream.

The asset (that partition) runs first, then every asset downstream of it in the code location's
asset graph, LEVEL BY LEVEL: a level is started only after every run of the level before succeeded,
so a failure stops the rebuild and names the failed level. A downstream asset with the same
partitions definition gets the same partition key; an unpartitioned one an unpartitioned run; one
partitioned differently is refused before anything runs (no partition mapping is guessed).

Runs are tagged ``datacoolie/trigger: rebuild``: a rebuild is a manual action, so the retry sensor
(which relaunches only automated runs) never retries it. By default each level's runs are queued
on the instance (a daemon or ``dagster run`` worker dequeues them) and waited for, up to
``--timeout`` seconds per level; ``--in-process`` executes them in this process instead.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import dagster as dg

from datacoolie_dagster import dagster_internal
from datacoolie_dagster.commands.cli_options import add_location_options, instance_home, load_target
from datacoolie_dagster.constants import TRIGGER
from datacoolie_dagster.location.ordering import ordered_levels

if TYPE_CHECKING:
    from datacoolie_dagster.dagster_internal import AssetGraph, WorkspaceLoadTarget, WorkspaceProcessContext

LOGGER = logging.getLogger("datacoolie_dagster.commands.rebuild")
TRIGGER_TAG = TRIGGER
REBUILD = "rebuild"
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


class RebuildError(Exception):
    """The rebuild cannot be planned (unknown asset, bad partition, mismatched partitioning)."""


@dataclass(frozen=True)
class RebuildRun:
    """One run of a level: assets sharing a partition key (``None``: unpartitioned)."""

    asset_keys: tuple[dg.AssetKey, ...]
    partition_key: str | None

    def describe(self) -> str:
        keys = ", ".join(k.to_user_string() for k in self.asset_keys)
        return keys if self.partition_key is None else f"{keys} [{self.partition_key}]"


@dataclass
class RebuildResult:
    """What ran: the run ids per level, and the failed level (``None``: every level succeeded)."""

    levels: list[tuple[RebuildRun, ...]]
    run_ids: list[list[str]] = field(default_factory=list)
    failed_level: int | None = None
    failed_runs: list[RebuildRun] = field(default_factory=list)
    error: str | None = None

    @property
    def success(self) -> bool:
        return self.failed_level is None

    def describe_failure(self) -> str:
        """``level N/M failed: assets…; not run: …`` (empty when the rebuild succeeded)."""
        if self.failed_level is None:
            return ""
        failed = "; ".join(r.describe() for r in self.failed_runs)
        rest = [r.describe() for level in self.levels[self.failed_level + 1 :] for r in level]
        text = f"level {self.failed_level + 1}/{len(self.levels)} failed: {failed}"
        text += f" ({self.error})" if self.error else ""
        return text + (f"; not run: {', '.join(rest)}" if rest else "")


def plan_rebuild(
    asset_graph: AssetGraph, asset_key: dg.AssetKey, partition_key: str | None
) -> list[tuple[RebuildRun, ...]]:
    """The runs of a rebuild, level by level (level 1: the asset itself). Pure.

    A level holds the downstream assets whose longest path from ``asset_key`` has that length, so
    each asset runs after everything it reads from the rebuilt subgraph.

    Raises:
        RebuildError: unknown or unmaterializable asset, a partition that does not fit the asset,
            or a downstream asset partitioned differently.
    """
    root = _root(asset_graph, asset_key, partition_key)
    return [_runs(asset_graph, keys, root, partition_key) for keys in _levels(asset_graph, asset_key)]


def _root(asset_graph: AssetGraph, asset_key: dg.AssetKey, partition_key: str | None) -> Any:
    if not asset_graph.has(asset_key) or not asset_graph.get(asset_key).is_materializable:
        known = sorted(k.to_user_string() for k in asset_graph.materializable_asset_keys)
        raise RebuildError(f"no materializable asset '{asset_key.to_user_string()}'; known: {', '.join(known)}")
    partitions_def = asset_graph.get(asset_key).partitions_def
    name = asset_key.to_user_string()
    if partitions_def is None and partition_key is not None:
        raise RebuildError(f"asset '{name}' is not partitioned; rebuild it without a PARTITION")
    if partitions_def is not None:
        if partition_key is None:
            raise RebuildError(f"asset '{name}' is partitioned; name the PARTITION to rebuild")
        if not partitions_def.has_partition_key(partition_key):
            raise RebuildError(f"'{partition_key}' is not a partition of asset '{name}'; check the partition key")
    return partitions_def


def _levels(asset_graph: AssetGraph, asset_key: dg.AssetKey) -> list[list[dg.AssetKey]]:
    """``asset_key`` and its materializable descendants in lineage order (the location's
    :func:`ordered_levels`): level ``n`` holds those whose longest path from ``asset_key`` is ``n``."""
    reached = {asset_key}
    pending = [asset_key]
    while pending:
        for child in asset_graph.get(pending.pop()).child_keys:
            if child not in reached and asset_graph.get(child).is_materializable:
                reached.add(child)
                pending.append(child)
    keys = sorted(reached, key=lambda k: k.to_user_string())
    return ordered_levels({key: asset_graph.get(key).parent_keys & reached for key in keys})


def _runs(
    asset_graph: AssetGraph, keys: Sequence[dg.AssetKey], root_def: Any, partition_key: str | None
) -> tuple[RebuildRun, ...]:
    partitioned = [k for k in keys if asset_graph.get(k).partitions_def is not None]
    for key in partitioned:
        if asset_graph.get(key).partitions_def != root_def:
            raise RebuildError(
                f"downstream asset '{key.to_user_string()}' is partitioned differently from the rebuilt asset; "
                "rebuild it separately with its own partition"
            )
    unpartitioned = tuple(k for k in keys if k not in partitioned)
    runs = [RebuildRun(tuple(partitioned), partition_key)] if partitioned else []
    return tuple([*runs, RebuildRun(unpartitioned, None)] if unpartitioned else runs)


def run_levels(
    levels: list[tuple[RebuildRun, ...]], run_level: Callable[[tuple[RebuildRun, ...]], list[tuple[str, bool, str]]]
) -> RebuildResult:
    """Run ``levels`` in order with ``run_level`` (-> ``(run_id, succeeded, error)`` per run); stop at a failure."""
    result = RebuildResult(levels)
    for index, level in enumerate(levels):
        outcomes = run_level(level)
        result.run_ids.append([run_id for run_id, _, _ in outcomes])
        failed = [(run, error) for run, (_, ok, error) in zip(level, outcomes, strict=True) if not ok]
        if failed:
            result.failed_level, result.failed_runs = index, [run for run, _ in failed]
            result.error = "; ".join(dict.fromkeys(error for _, error in failed if error)) or None
            break
    return result


def rebuild(
    asset_key: dg.AssetKey,
    partition_key: str | None = None,
    *,
    instance: dg.DagsterInstance,
    definitions: dg.Definitions | dg.RepositoryDefinition | None = None,
    target: WorkspaceLoadTarget | None = None,
    timeout: float = 3600.0,
    poll_interval: float = 1.0,
) -> RebuildResult:
    """Re-materialize ``asset_key`` (at ``partition_key``) and everything downstream, level by level.

    Args:
        asset_key, partition_key: the asset to rebuild; ``partition_key`` only for a partitioned asset.
        instance: the Dagster instance the runs are recorded (and, queued, launched) on.
        definitions: execute in this process, with these definitions (``execute_in_process``).
        target: otherwise queue the runs on ``instance`` for this code location and wait for them
            (a daemon must dequeue them), each level for at most ``timeout`` seconds.

    Returns:
        The runs per level and, on failure, the failed level (later levels are not started).

    Raises:
        RebuildError: the rebuild cannot be planned; nothing was run.
    """
    if (definitions is None) == (target is None):
        raise ValueError("rebuild: pass exactly one of definitions (in process) or target (queued)")
    tags = {TRIGGER_TAG: REBUILD}
    if definitions is not None:
        repository = (
            definitions if isinstance(definitions, dg.RepositoryDefinition) else definitions.get_repository_def()
        )
        levels = plan_rebuild(repository.asset_graph, asset_key, partition_key)
        job = repository.get_implicit_global_asset_job_def()
        return run_levels(levels, lambda level: [_execute(job, run, instance, tags) for run in level])
    assert target is not None
    with dagster_internal.workspace_context(instance, target) as context:
        levels = plan_rebuild(context.create_request_context().asset_graph, asset_key, partition_key)
        launch = _QueuedLevel(context, instance, tags, timeout, poll_interval)
        return run_levels(levels, launch)


def _execute(
    job: dg.JobDefinition, run: RebuildRun, instance: dg.DagsterInstance, tags: dict[str, str]
) -> tuple[str, bool, str]:
    result = job.execute_in_process(
        instance=instance,
        asset_selection=list(run.asset_keys),
        partition_key=run.partition_key,
        tags=tags,
        raise_on_error=False,
    )
    errors = [e.step_failure_data.error for e in result.all_events if e.is_step_failure]
    return result.run_id, result.success, "; ".join(e.message.strip() for e in errors if e is not None)


@dataclass
class _QueuedLevel:
    """Submits a level's runs to the instance's run coordinator and waits until all finished."""

    context: WorkspaceProcessContext
    instance: dg.DagsterInstance
    tags: dict[str, str]
    timeout: float
    poll_interval: float

    def __call__(self, level: tuple[RebuildRun, ...]) -> list[tuple[str, bool, str]]:
        run_ids = [self._submit(run) for run in level]
        deadline = time.monotonic() + self.timeout
        runs = self._runs(run_ids)
        while any(r.status not in FINISHED for r in runs) and time.monotonic() < deadline:
            time.sleep(self.poll_interval)
            runs = self._runs(run_ids)
        return [(r.run_id, r.status == dg.DagsterRunStatus.SUCCESS, self._why(r)) for r in runs]

    def _submit(self, run: RebuildRun) -> str:
        tags = self.tags | ({"dagster/partition": run.partition_key} if run.partition_key else {})
        request = dg.RunRequest(asset_selection=list(run.asset_keys), partition_key=run.partition_key, tags=tags)
        [submitted] = dagster_internal.submit_run_requests(self.context, [request], LOGGER)
        return submitted.run_id

    def _runs(self, run_ids: Iterable[str]) -> list[dg.DagsterRun]:
        return [run for run_id in run_ids if (run := self.instance.get_run_by_id(run_id)) is not None]

    def _why(self, run: dg.DagsterRun) -> str:
        if run.status in FINISHED:
            return "" if run.status == dg.DagsterRunStatus.SUCCESS else f"run {run.run_id} {run.status.value}"
        return f"run {run.run_id} still {run.status.value} after {self.timeout:g} s (is a daemon running?)"


def add_rebuild_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``rebuild`` to the ``datacoolie-dagster`` subcommands (``-w/-m/-f/-d/--instance`` as ``tick``)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "rebuild", help="re-materialize a partition and everything downstream, level by level"
    )
    parser.add_argument("asset", help="asset key, e.g. bronze/sales/orders")
    parser.add_argument("partition", nargs="?", help="partition key (omit for an unpartitioned asset)")
    add_location_options(parser)
    parser.add_argument("--in-process", action="store_true", help="execute here instead of queueing runs")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait per level (queued)")
    parser.set_defaults(handler=_rebuild)
    return parser


def _rebuild(args: argparse.Namespace) -> int:
    home = instance_home(args, "rebuild")
    if not home:
        return 2
    target = load_target(args)
    key = dg.AssetKey.from_user_string(args.asset)
    with dg.DagsterInstance.from_config(os.fspath(home)) as instance:
        try:
            if args.in_process:
                result = rebuild(key, args.partition, instance=instance, definitions=load_repository(target))
            else:
                result = rebuild(key, args.partition, instance=instance, target=target, timeout=args.timeout)
        except RebuildError as error:
            print(f"datacoolie-dagster rebuild: {error}", file=sys.stderr)
            return 2
    for number, (level, run_ids) in enumerate(zip(result.levels, result.run_ids, strict=False), start=1):
        print(f"level {number}: {'; '.join(r.describe() for r in level)} -> runs {', '.join(run_ids)}")
    if not result.success:
        print(f"datacoolie-dagster rebuild: {result.describe_failure()}", file=sys.stderr)
        return 1
    return 0


def load_repository(target: WorkspaceLoadTarget) -> dg.RepositoryDefinition:
    """The one code location of ``target``, imported into this process (for ``--in-process``)."""
    locations, repositories = dagster_internal.load_repositories(target)
    if locations != 1:
        raise RebuildError(f"--in-process needs exactly one Python code location, found {locations}; use -m or -f")
    if len(repositories) != 1:
        raise RebuildError(
            f"--in-process needs exactly one Definitions in the code location, found {len(repositories)}"
        )
    return repositories[0]
