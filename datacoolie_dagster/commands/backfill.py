"""``datacoolie-dagster backfill ASSET_OR_STAGE PARTITIONS [--rerun]``: queue only what is not done.

A partition is *done* when its latest materialization carries the asset's current code version
(``dagster/code_version``; the partition runs of :mod:`datacoolie_dagster.location.assets` tag each partition
they materialize with it, and an asset without a code version counts any materialization), and *live*
when a not-finished run (queued … canceling) targets it through ``dagster/partition`` or
``dagster/asset_partition_range_start/_end``, or when an unfinished asset backfill (status
``REQUESTED``, e.g. launched from the UI) targets it and has not yet materialized it or marked it
failed. The command queues runs for the partitions that are neither, and prints one ``skipped: N done``
/ ``skipped: N live`` line per asset naming the others; ``--rerun`` also queues done ones, never live ones.

Decision: we create the runs ourselves (one per ``max_partitions_per_run`` contiguous keys of the
asset's ``BackfillPolicy``; one run for everything with a single-run policy) and submit them to the
instance's run queue, instead of an asset backfill. Runs are visible as QUEUED the moment the command
returns, so the live check of the next invocation is a plain run query; a requested asset backfill
has no runs until the backfill daemon gets to it and would escape that check.

Two invocations never queue a partition twice: planning and submitting happen under one lock, and the
second one then sees the first one's runs as live. With PostgreSQL run storage the lock is a
session-level advisory lock in that database (``pg_advisory_lock(ADVISORY_LOCK_KEY)``), so it also
excludes invocations on other hosts or with another ``$DAGSTER_HOME`` that share the database; with any
other storage it is an exclusive ``fcntl.flock`` on ``$DAGSTER_HOME/datacoolie-backfill.lock``.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg
import sqlalchemy as sa
from dagster_postgres import PostgresRunStorage

from datacoolie_core.api import DataCoolieError, did_you_mean
from datacoolie_dagster import dagster_internal
from datacoolie_dagster.commands.cli_options import add_location_options, instance_home, load_target
from datacoolie_dagster.constants import AUTOMATED, TRIGGER
from datacoolie_dagster.location.partitions import contiguous_chunks
from datacoolie_dagster.location.provenance import CODE_VERSION_TAG

if TYPE_CHECKING:
    from datacoolie_dagster.dagster_internal import WorkspaceAssetGraph as RemoteWorkspaceAssetGraph
    from datacoolie_dagster.dagster_internal import WorkspaceProcessContext

LOGGER = logging.getLogger("datacoolie_dagster.commands.backfill")

LOCK_FILE = "datacoolie-backfill.lock"
ADVISORY_LOCK_KEY = int.from_bytes(
    hashlib.blake2b(b"datacoolie-dagster backfill", digest_size=8).digest(), "big", signed=True
)
"""The PostgreSQL advisory lock key of the backfill lock: a stable signed 64-bit value (``bigint``)."""
ALL = "@all"
RANGE_SEPARATOR = ".."
AUTOMATED_TAGS = {AUTOMATED: "true", TRIGGER: "backfill"}
PARTITION_TAG = "dagster/partition"
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"
NOT_FINISHED = (
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.SUSPENDED,
    dg.DagsterRunStatus.CANCELING,
)
"""Run statuses of a run that may still write (Dagster's own not-finished list; MANAGED is no run of ours)."""


class BackfillError(DataCoolieError):
    """A backfill target or partition selection that cannot be resolved."""


@dataclass(frozen=True)
class BackfillRun:
    """One run to queue: contiguous partitions of one asset."""

    asset_key: dg.AssetKey
    partition_keys: tuple[str, ...]

    @property
    def tags(self) -> dict[str, str]:
        first, last = self.partition_keys[0], self.partition_keys[-1]
        partition = {PARTITION_TAG: first} if first == last else {RANGE_START_TAG: first, RANGE_END_TAG: last}
        return AUTOMATED_TAGS | partition


@dataclass(frozen=True)
class BackfillPlan:
    """What one invocation queues, and what it leaves out and why."""

    runs: tuple[BackfillRun, ...]
    done: dict[dg.AssetKey, tuple[str, ...]]
    """Partitions materialized with the current code version (left out unless ``rerun``)."""
    live: dict[dg.AssetKey, tuple[str, ...]]
    """Partitions targeted by a run that has not finished (always left out)."""
    selected: dict[dg.AssetKey, tuple[str, ...]] = field(default_factory=dict)
    """Every partition the invocation named, in partition order."""

    def skipped_lines(self, *, rerun: bool) -> list[str]:
        """``skipped: N done|live ASSET: PARTITIONS (why)`` per asset; partition runs as ``FIRST..LAST``."""
        lines = []
        for key in self.live:
            live = set(self.live[key])
            done = [] if rerun else [k for k in self.done[key] if k not in live]
            for kind, keys, why in (
                ("done", done, "materialized by the current code version; --rerun queues them again"),
                ("live", self.live[key], "a run or asset backfill that has not finished targets them"),
            ):
                if keys:
                    spans = partition_spans(self.selected.get(key, keys), keys)
                    lines.append(f"skipped: {len(keys)} {kind} {key.to_user_string()}: {spans} ({why})")
        return lines


def plan_backfill(
    instance: dg.DagsterInstance,
    asset_graph: RemoteWorkspaceAssetGraph,
    target: str,
    partitions: str,
    *,
    rerun: bool = False,
) -> BackfillPlan:
    """The runs that bring ``partitions`` of ``target`` up to date; reads the instance, writes nothing.

    Args:
        instance: where materializations and runs are looked up.
        asset_graph: the code location's assets (``workspace.asset_graph``).
        target: an asset key (``silver/sales/orders``) or a stage (its group: every partitioned asset).
        partitions: ``FIRST..LAST`` (inclusive), one key, or ``@all``.
        rerun: also queue partitions already materialized with the current code version.

    Raises:
        BackfillError: unknown target, unpartitioned asset, or a partition key the asset lacks.
    """
    runs: list[BackfillRun] = []
    done: dict[dg.AssetKey, tuple[str, ...]] = {}
    live: dict[dg.AssetKey, tuple[str, ...]] = {}
    selected: dict[dg.AssetKey, tuple[str, ...]] = {}
    targets = resolve_target(asset_graph, target)
    requested = _requested_backfill_partitions(instance, asset_graph, targets)
    for key in targets:
        node = asset_graph.get(key)
        assert node.partitions_def is not None  # resolve_target keeps partitioned assets only
        keys = select_partitions(node.partitions_def, partitions, asset=key, instance=instance)
        materialized = _done_partitions(instance, key, keys, node.code_version)
        running = _live_partitions(instance, key, node.partitions_def) | requested[key]
        done[key] = tuple(k for k in keys if k in materialized)
        live[key] = tuple(k for k in keys if k in running)
        left_out = set(live[key]) if rerun else {*live[key], *done[key]}
        todo = [k for k in keys if k not in left_out]
        size = node.backfill_policy.max_partitions_per_run if node.backfill_policy else None
        runs.extend(BackfillRun(key, tuple(chunk)) for chunk in contiguous_chunks(keys, todo, size))
        selected[key] = tuple(keys)
    return BackfillPlan(tuple(runs), done, live, selected)


def resolve_target(asset_graph: RemoteWorkspaceAssetGraph, target: str) -> list[dg.AssetKey]:
    """An asset key, or every partitioned asset whose group is the stage ``target``, sorted."""
    key = dg.AssetKey.from_user_string(target)
    if asset_graph.has(key):
        if asset_graph.get(key).partitions_def is None:
            raise BackfillError(f"asset '{target}' is not partitioned; materialize it instead of backfilling")
        return [key]
    nodes = [asset_graph.get(k) for k in asset_graph.materializable_asset_keys]
    in_group = [n.key for n in nodes if n.group_name == target and n.partitions_def is not None]
    if in_group:
        return sorted(in_group, key=lambda k: k.to_user_string())
    names = [*(k.to_user_string() for k in asset_graph.materializable_asset_keys), *{n.group_name for n in nodes}]
    raise BackfillError(
        f"'{target}' is neither an asset key nor a stage with partitioned assets{did_you_mean(target, names)}; "
        "hint: pass a key like 'silver/sales/orders' or a stage name"
    )


def select_partitions(
    partitions_def: dg.PartitionsDefinition, spec: str, *, asset: dg.AssetKey, instance: dg.DagsterInstance
) -> list[str]:
    """The partition keys ``spec`` names (``@all``, ``FIRST..LAST`` inclusive, or one key), in order."""
    every = list(partitions_def.get_partition_keys(dynamic_partitions_store=instance))
    if spec == ALL:
        return every
    first, _, last = spec.partition(RANGE_SEPARATOR)
    last = last or first
    for key in (first, last):
        if key not in every:
            raise BackfillError(
                f"asset '{asset.to_user_string()}' has no partition '{key}'{did_you_mean(key, every)}; "
                f"hint: its partitions run from '{every[0]}' to '{every[-1]}'"
                if every
                else f"asset '{asset.to_user_string()}' has no partitions yet"
            )
    start, end = every.index(first), every.index(last)
    if start > end:
        raise BackfillError(f"partition range '{spec}' is reversed; hint: write it as '{last}..{first}'")
    return every[start : end + 1]


def partition_spans(every: Sequence[str], keys: Sequence[str]) -> str:
    """``keys`` as comma-separated runs, contiguous in ``every``: ``2024-01..2024-03,2024-05``."""
    chunks = contiguous_chunks(every, keys, None)
    return ",".join(c[0] if len(c) == 1 else f"{c[0]}{RANGE_SEPARATOR}{c[-1]}" for c in chunks)


def _done_partitions(
    instance: dg.DagsterInstance, key: dg.AssetKey, keys: Sequence[str], code_version: str | None
) -> set[str]:
    """Partitions whose latest materialization was made by ``code_version``."""
    latest: dict[str, dg.AssetMaterialization] = {}
    records_filter = dg.AssetRecordsFilter(asset_key=key, asset_partitions=list(keys))
    cursor = None
    while True:  # newest first: the first record seen per partition is its latest
        result = instance.fetch_materializations(records_filter, limit=1000, cursor=cursor)
        for record in result.records:
            materialization = record.asset_materialization
            if materialization is not None and materialization.partition is not None:
                latest.setdefault(materialization.partition, materialization)
        if not result.has_more:
            break
        cursor = result.cursor
    return {p for p, m in latest.items() if (m.tags or {}).get(CODE_VERSION_TAG) == code_version}


def _live_partitions(
    instance: dg.DagsterInstance, key: dg.AssetKey, partitions_def: dg.PartitionsDefinition
) -> set[str]:
    """Partitions of ``key`` targeted by a run that has not finished (queued, starting, started, …)."""
    live: set[str] = set()
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=list(NOT_FINISHED))):
        # a run without an asset selection (an op job) may still write the asset: count it
        if run.asset_selection is not None and key not in run.asset_selection:
            continue
        live.update(_run_partitions(run.tags, partitions_def, instance))
    return live


def _requested_backfill_partitions(
    instance: dg.DagsterInstance, asset_graph: RemoteWorkspaceAssetGraph, keys: Sequence[dg.AssetKey]
) -> dict[dg.AssetKey, set[str]]:
    """Per asset, the partitions an unfinished asset backfill still has to materialize.

    A ``REQUESTED`` asset backfill (from the UI, ``instance.add_backfill``, …) may have no runs yet: the
    backfill daemon creates them tick by tick. What it has materialized or marked failed is no longer
    its work (done, or failed and missing). Other statuses launch nothing more: ``CANCELING``/``FAILING``
    only cancel, the rest are final. Job backfills (a partition set, no asset selection) are not read.
    """
    pending: dict[dg.AssetKey, set[str]] = {key: set() for key in keys}
    for backfill in dagster_internal.requested_asset_backfills(instance):
        if not set(backfill.asset_selection or ()) & pending.keys():
            continue
        data = backfill.get_asset_backfill_data(asset_graph)
        subsets = data.get_targeted_partitions_without_materialization_status().partitions_subsets_by_asset_key
        for key in pending.keys() & subsets.keys():
            pending[key].update(subsets[key].get_partition_keys())
    return pending


def _run_partitions(tags: Any, partitions_def: dg.PartitionsDefinition, instance: dg.DagsterInstance) -> list[str]:
    if PARTITION_TAG in tags:
        return [tags[PARTITION_TAG]]
    if RANGE_START_TAG in tags and RANGE_END_TAG in tags:
        key_range = dg.PartitionKeyRange(tags[RANGE_START_TAG], tags[RANGE_END_TAG])
        return list(partitions_def.get_partition_keys_in_range(key_range))
    return []


def submit_backfill(
    context: WorkspaceProcessContext, plan: BackfillPlan, *, logger: logging.Logger = LOGGER
) -> list[dg.DagsterRun]:
    """Create and submit the plan's runs to the instance's run coordinator (the queue)."""
    requests = [dg.RunRequest(asset_selection=[planned.asset_key], tags=planned.tags) for planned in plan.runs]
    return dagster_internal.submit_run_requests(context, requests, logger)


@contextmanager
def backfill_lock(instance: dg.DagsterInstance) -> Iterator[None]:
    """Hold the instance-wide backfill lock; blocks until it is free.

    In the run storage's PostgreSQL database when there is one (every host and ``$DAGSTER_HOME`` on
    that database shares it), else an exclusive ``flock`` under ``$DAGSTER_HOME``. Either is released
    on exit, and also if the process dies.
    """
    storage = instance.run_storage
    if isinstance(storage, PostgresRunStorage):
        with _advisory_lock(storage):
            yield
        return
    with _file_lock(Path(instance.root_directory) / LOCK_FILE):
        yield


@contextmanager
def _advisory_lock(storage: PostgresRunStorage) -> Iterator[None]:
    """``pg_advisory_lock(ADVISORY_LOCK_KEY)`` held on a connection of its own for the block.

    A session-level lock: the server drops it with the session, so a killed invocation never leaves it
    held. ``connect()`` opens an AUTOCOMMIT connection from a ``NullPool`` engine (dagster-postgres
    0.29.27 for dagster 1.13.27), so closing it ends the session; the explicit unlock also covers a
    pooled engine (the webserver's).
    """
    key = {"key": ADVISORY_LOCK_KEY}
    with storage.connect() as connection:
        if not connection.execute(sa.text("SELECT pg_try_advisory_lock(:key)"), key).scalar():
            LOGGER.info("another backfill holds the lock on the run database; waiting for it")
            connection.execute(sa.text("SELECT pg_advisory_lock(:key)"), key)
        try:
            yield
        finally:
            connection.execute(sa.text("SELECT pg_advisory_unlock(:key)"), key)


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the handle closes, also if the process dies
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_backfill(
    context: WorkspaceProcessContext, target: str, partitions: str, *, rerun: bool = False
) -> tuple[BackfillPlan, list[dg.DagsterRun]]:
    """Plan and submit under the backfill lock; returns the plan and the queued runs."""
    instance = context.instance
    with backfill_lock(instance):
        workspace = context.create_request_context()
        plan = plan_backfill(instance, workspace.asset_graph, target, partitions, rerun=rerun)
        return plan, submit_backfill(context, plan)


def add_backfill_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``backfill`` subcommand to ``datacoolie-dagster``'s subparsers (options as ``tick``)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "backfill", help="queue runs for the partitions that are not done and not running"
    )
    parser.add_argument("target", metavar="ASSET_OR_STAGE", help="asset key (silver/sales/orders) or stage name")
    parser.add_argument("partitions", metavar="PARTITIONS", help="FIRST..LAST (inclusive), one key, or @all")
    parser.add_argument("--rerun", action="store_true", help="also queue partitions already done (never live ones)")
    add_location_options(parser)
    parser.set_defaults(handler=_backfill)
    return parser


def _backfill(args: argparse.Namespace) -> int:
    home = instance_home(args, "backfill")
    if not home:
        return 2
    with (
        dg.DagsterInstance.from_config(os.fspath(home)) as instance,
        dagster_internal.workspace_context(instance, load_target(args)) as context,
    ):
        try:
            plan, runs = run_backfill(context, args.target, args.partitions, rerun=args.rerun)
        except BackfillError as e:
            print(f"datacoolie-dagster backfill: {e}", file=sys.stderr)
            return 2
    for planned, run in zip(plan.runs, runs, strict=True):
        print(f"queued {run.run_id} {planned.asset_key.to_user_string()} {','.join(planned.partition_keys)}")
    for line in plan.skipped_lines(rerun=args.rerun):
        print(line)
    if not runs:
        print("queued nothing: every partition named is done or live")
    return 0
