"""Every use of Dagster's private modules (``dagster._*``), in one place, checked against one version.

The rest of ``datacoolie_dagster`` uses Dagster's public API only (``grep -r "dagster\\._"
datacoolie_dagster`` hits this file alone). What is here has no public equivalent in Dagster
:data:`CHECKED_VERSION`; each use says why. A Dagster release may move or change any of it, so
``tests/dagster/test_dagster_internal.py`` fails on any other version (:func:`version_mismatch`) and
names every private symbol that no longer resolves (:func:`missing_private_names`): an upgrade starts
there, with this module as the list of what to re-check.

The heavy modules (workspace loading, the daemon loops) are imported inside the functions that need
them, so that loading the code location does not import them.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import logging
import textwrap
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import dagster as dg

# Tags Dagster itself writes and reads. Their values are not exported by `dagster` (only
# MAX_RUNTIME_SECONDS_TAG is), so they are taken from where Dagster defines them.
from dagster._core.definitions.data_version import DATA_VERSION_TAG
from dagster._core.storage.tags import (
    AUTO_RETRY_RUN_ID_TAG,
    BACKFILL_ID_TAG,
    CODE_LOCATION_TAG,
    PARENT_BACKFILL_ID_TAG,
    ROOT_BACKFILL_ID_TAG,
    WILL_RETRY_TAG,
)

if TYPE_CHECKING:
    from dagster._core.definitions.assets.graph.base_asset_graph import BaseAssetGraph
    from dagster._core.definitions.assets.graph.remote_asset_graph import RemoteWorkspaceAssetGraph
    from dagster._core.execution.backfill import PartitionBackfill
    from dagster._core.remote_origin import CodeLocationOrigin
    from dagster._core.remote_representation.external import RemoteSchedule, RemoteSensor
    from dagster._core.scheduler.instigation import InstigatorTick
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import WorkspaceLoadTarget

CHECKED_VERSION = "1.13.27"
"""The Dagster release every use below was read against (its installed source)."""

ASSET_JOB_MODULE = "dagster._core.definitions.assets.job.asset_job"
"""Where Dagster builds asset jobs (the implicit ``__ASSET_JOB``): see :func:`hoist_build_node_deps`."""

PRIVATE_USES: dict[str, tuple[tuple[str, ...], str]] = {
    "dagster._core.storage.tags": (
        (
            "AUTO_RETRY_RUN_ID_TAG",
            "BACKFILL_ID_TAG",
            "CODE_LOCATION_TAG",
            "PARENT_BACKFILL_ID_TAG",
            "ROOT_BACKFILL_ID_TAG",
            "WILL_RETRY_TAG",
        ),
        "run tags Dagster writes (code location, backfill) and reads (its backfill daemon "
        "waits while a failed run of it has will_retry without auto_retry_run_id): the retry sensor and "
        "the schedule catch-up read and write them; Dagster exports none of these names",
    ),
    "dagster._core.definitions.data_version": (
        ("DATA_VERSION_TAG",),
        "an AssetObservation's data version travels as this tag; only ObserveResult (inside an "
        "observable asset, not a sensor) takes a public data_version",
    ),
    "dagster._core.remote_origin": (
        ("RemoteInstigatorOrigin", "RemoteRepositoryOrigin"),
        "the ids the tick store keys a schedule's ticks by; the catch-up sensor reads the schedule's "
        "newest tick and the public API has no tick query",
    ),
    "dagster._core.workspace.load_target": (
        ("ModuleTarget", "PythonFileTarget", "WorkspaceFileTarget", "WorkspaceLoadTarget"),
        "the CLI commands load a code location the way `dagster -m/-f/-w` does; no public loader",
    ),
    "dagster._core.workspace.context": (
        ("WorkspaceProcessContext",),
        "a workspace (code server + remote asset graph) outside the webserver and daemon",
    ),
    "dagster._core.execution.submit_asset_runs": (
        ("submit_asset_run",),
        "turns a RunRequest into a QUEUED run of the code location, as a sensor tick does; the public "
        "alternatives need a running webserver (GraphQL) or run in-process (dg launch)",
    ),
    "dagster._core.execution.backfill": (
        ("BulkActionsFilter", "BulkActionStatus", "PartitionBackfill"),
        "`backfill` must not queue partitions an unfinished asset backfill (from the UI) still owns",
    ),
    "dagster._scheduler.scheduler": (
        ("launch_scheduled_runs",),
        "`tick`: one pass of the daemon's schedule loop; Dagster has no public 'tick once'",
    ),
    "dagster._daemon.sensor": (
        ("execute_sensor_iteration",),
        "`tick`: one pass of the daemon's sensor loop",
    ),
    "dagster._core.remote_representation.external": (
        ("RemoteSchedule", "RemoteSensor"),
        "`tick` reports what each schedule and sensor of the workspace did",
    ),
    "dagster._core.scheduler.instigation": (("InstigatorTick", "TickStatus"), "`tick` reads the ticks it made"),
    "dagster._utils.error": (("SerializableErrorInfo",), "the errors the daemon loops yield"),
    "dagster._grpc.utils": (
        ("get_loadable_targets",),
        "`rebuild --in-process` imports the code location's Definitions as the code server does "
        "(lazy @definitions included); dg.load_definitions_from_module builds a new Definitions instead",
    ),
    "dagster._core.definitions.reconstruct": (("repository_def_from_target_def",), "as get_loadable_targets"),
    "dagster._core.definitions.assets.graph.remote_asset_graph": (
        ("RemoteWorkspaceAssetGraph",),
        "type of a workspace's asset graph (only annotations)",
    ),
    "dagster._core.definitions.assets.graph.base_asset_graph": (
        ("BaseAssetGraph",),
        "type of RepositoryDefinition.asset_graph (only annotations)",
    ),
    ASSET_JOB_MODULE: (
        ("build_node_deps",),
        "hoist_build_node_deps: the asset job's node dependencies are built in a loop that is quadratic "
        "in a multi-asset's inputs x checks (minutes at 10,000 tables); no public way around it",
    ),
}
"""Module -> (names used, why there is no public way), for the version test and the upgrade audit."""


def version_mismatch() -> str | None:
    """Why the installed Dagster is not the one this module was checked against (``None``: it is)."""
    if dg.__version__ == CHECKED_VERSION:
        return None
    return (
        f"dagster {dg.__version__} is installed, but datacoolie_dagster's private Dagster uses were checked "
        f"against {CHECKED_VERSION}: re-read each use in datacoolie_dagster/dagster_internal.py against the "
        "new release's source, then update CHECKED_VERSION (and the pins in pyproject.toml and constraints.txt)"
    )


def missing_private_names() -> list[str]:
    """``module.name`` of every entry of :data:`PRIVATE_USES` that does not resolve."""
    missing = []
    for module_name, (names, _) in PRIVATE_USES.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            missing += [f"{module_name}.{name}" for name in names]
            continue
        missing += [f"{module_name}.{name}" for name in names if not hasattr(module, name)]
    return missing


# --- code locations and workspaces ---------------------------------------------------------------


def load_target(
    module_name: str | None, python_file: str | None, workspace: str | None, directory: str
) -> WorkspaceLoadTarget:
    """The ``WorkspaceLoadTarget`` of ``-m``, ``-f`` or ``-w`` (absolute paths), as ``dagster`` builds it."""
    from dagster._core.workspace.load_target import ModuleTarget, PythonFileTarget, WorkspaceFileTarget

    if module_name:
        return ModuleTarget(module_name, None, directory, None)
    if python_file:
        return PythonFileTarget(python_file, None, directory, None)
    assert workspace is not None
    return WorkspaceFileTarget(paths=[workspace])


def workspace_context(
    instance: dg.DagsterInstance, target: WorkspaceLoadTarget, *, code_server_log_level: str = "INFO"
) -> WorkspaceProcessContext:
    """The code location(s) of ``target`` served for ``instance`` (a context manager)."""
    from dagster._core.workspace.context import WorkspaceProcessContext

    return WorkspaceProcessContext(instance, target, code_server_log_level=code_server_log_level)


def submit_run_requests(
    context: WorkspaceProcessContext, requests: Sequence[dg.RunRequest], logger: logging.Logger
) -> list[dg.DagsterRun]:
    """Create each request's run in the code location and submit it to the run queue, in order."""
    from dagster._core.execution.submit_asset_runs import submit_asset_run

    workspace = context.create_request_context()
    cache: dict[Any, Any] = {}
    runs = []
    for index, request in enumerate(requests):
        submit = submit_asset_run(None, request, index, context.instance, context, workspace, cache, {}, logger)
        runs.append(asyncio.run(submit))
    return runs


def load_repositories(target: WorkspaceLoadTarget) -> tuple[int, list[dg.RepositoryDefinition]]:
    """The Python code locations of ``target`` (how many) and their Definitions, imported here."""
    from dagster._core.definitions.reconstruct import repository_def_from_target_def
    from dagster._core.remote_origin import ManagedGrpcPythonEnvCodeLocationOrigin
    from dagster._grpc.utils import get_loadable_targets

    origins = [o for o in target.create_origins() if isinstance(o, ManagedGrpcPythonEnvCodeLocationOrigin)]
    if len(origins) != 1:
        return len(origins), []
    origin = origins[0].loadable_target_origin
    loadables = get_loadable_targets(
        python_file=origin.python_file,
        module_name=origin.module_name,
        package_name=origin.package_name,
        autoload_defs_module_name=origin.autoload_defs_module_name,
        working_directory=origin.working_directory,
        attribute=origin.attribute,
        resolve_lazy_defs=True,
    )
    return 1, [r for t in loadables if (r := repository_def_from_target_def(t.target_definition)) is not None]


# --- asset jobs: a loop made linear ----------------------------------------------------------------

CHECKED_ASSET_KEYS = "{ck.asset_key for ck in assets_def.check_keys}"
"""The set ``build_node_deps`` rebuilds for every input of an assets definition (Dagster 1.13.27)."""
INPUT_LOOP = "inputs_map.items()"
"""What the loop over an assets definition's inputs iterates, in ``build_node_deps``."""
HOISTED_NAME = "checked_asset_keys"
HOISTED_MARK = "__datacoolie_hoisted__"
"""Set on the rewritten function, so a second call (another build in the process) keeps it."""


def hoist_build_node_deps() -> bool:
    """Make Dagster's asset jobs build in time linear in a multi-asset's inputs and checks.

    Dagster's ``build_node_deps`` (``dagster/_core/definitions/assets/job/asset_job.py``), which
    every asset job runs (the implicit ``__ASSET_JOB`` of the code location first), asks for each
    input of an assets definition whether the definition checks that input's asset, and rebuilds
    the set of the asset keys its checks target to answer (:data:`CHECKED_ASSET_KEYS`): inputs x
    checks. One multi-asset of 10,000 tables reads ~9,000 sources and carries ~13,300 checks, so a
    code server spent 20-70 CPU s there before it answered. The set depends only on the
    assets definition, so it is built once per definition, before the loop over its inputs
    (:data:`INPUT_LOOP`): the same answers, the upstream fix.

    The installed function's own source is rewritten (no copy of Dagster's code here): only on the
    Dagster version this module was checked against, only where the loop and the set read exactly
    as there, and once per process. Anywhere else Dagster's function is left as it is.
    ``tests/dagster/test_dagster_internal.py`` proves the rewritten function returns what Dagster's
    returns on our definitions.

    Returns:
        Whether the rewritten function is in place.
    """
    module: Any = importlib.import_module(ASSET_JOB_MODULE)
    current = module.build_node_deps
    if getattr(current, HOISTED_MARK, False):
        return True
    if version_mismatch() is not None:
        return False
    hoisted = _hoisted(current)
    if hoisted is None:
        return False
    module.build_node_deps = hoisted
    return True


def _hoisted(original: Callable[..., Any]) -> Callable[..., Any] | None:
    """``original`` compiled again with :data:`CHECKED_ASSET_KEYS` built before :data:`INPUT_LOOP`.

    ``None`` when the source does not hold that loop with that set inside exactly once. The
    rewritten function keeps Dagster's module globals, file name and line numbers (tracebacks point
    at Dagster's source); ``__wrapped__`` is the original.
    """
    source = textwrap.dedent(inspect.getsource(original))
    if HOISTED_NAME in source:
        return None
    tree = ast.parse(source)
    ast.increment_lineno(tree, original.__code__.co_firstlineno - 1)
    hoist = _HoistCheckedKeys()
    tree = hoist.visit(tree)
    if hoist.loops != 1 or hoist.replaced != 1:
        return None
    code = compile(ast.fix_missing_locations(tree), inspect.getsourcefile(original) or "<dagster>", "exec")
    namespace: dict[str, Any] = {}
    exec(code, original.__globals__, namespace)  # Dagster's own source, one expression moved
    hoisted: Callable[..., Any] = namespace[original.__name__]
    hoisted.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(hoisted, HOISTED_MARK, True)
    return hoisted


class _HoistCheckedKeys(ast.NodeTransformer):
    """Moves :data:`CHECKED_ASSET_KEYS` out of the loop over :data:`INPUT_LOOP`, into a name set before it."""

    def __init__(self) -> None:
        self.loops = 0
        self.replaced = 0

    def visit_For(self, node: ast.For) -> ast.AST | list[ast.stmt]:
        if ast.unparse(node.iter) != INPUT_LOOP:
            self.generic_visit(node)
            return node
        self.loops += 1
        found: list[ast.SetComp] = []
        replacer = _ReplaceExpression(CHECKED_ASSET_KEYS, HOISTED_NAME, found)
        node = replacer.visit(node)
        self.replaced += len(found)
        if len(found) != 1:
            return node
        assign = ast.Assign(targets=[ast.Name(HOISTED_NAME, ast.Store())], value=found[0])
        return [ast.copy_location(assign, node), node]


class _ReplaceExpression(ast.NodeTransformer):
    """Replaces every set comprehension reading ``expression`` by the name ``name``; keeps them in ``found``."""

    def __init__(self, expression: str, name: str, found: list[ast.SetComp]) -> None:
        self.expression, self.name, self.found = expression, name, found

    def visit_SetComp(self, node: ast.SetComp) -> ast.AST:
        if ast.unparse(node) != self.expression:
            return self.generic_visit(node)
        self.found.append(node)
        return ast.copy_location(ast.Name(self.name, ast.Load()), node)


# --- backfills -----------------------------------------------------------------------------------


def requested_asset_backfills(instance: dg.DagsterInstance) -> list[PartitionBackfill]:
    """The asset backfills still ``REQUESTED`` (the backfill daemon may launch more runs for them)."""
    from dagster._core.execution.backfill import BulkActionsFilter, BulkActionStatus

    unfinished = instance.get_backfills(filters=BulkActionsFilter(statuses=[BulkActionStatus.REQUESTED]))
    return [backfill for backfill in unfinished if backfill.is_asset_backfill]


# --- schedules and sensors -----------------------------------------------------------------------


def newest_tick_time(
    instance: dg.DagsterInstance, location: CodeLocationOrigin, repository: str, schedule: str
) -> datetime | None:
    """The fire time of the newest tick of ``schedule`` in the instance's tick store (``None``: none).

    ``location``: a sensor context's ``code_location_origin``; ``repository``: its ``repository_name``.
    """
    from dagster._core.remote_origin import RemoteInstigatorOrigin, RemoteRepositoryOrigin

    origin = RemoteInstigatorOrigin(RemoteRepositoryOrigin(location, repository), schedule)
    ticks = instance.get_ticks(origin.get_id(), origin.get_selector().get_id(), limit=1)
    return datetime.fromtimestamp(ticks[0].timestamp, UTC) if ticks else None


def schedules_pass(context: WorkspaceProcessContext, now: datetime, logger: logging.Logger) -> Iterator[object]:
    """One pass of the schedule daemon's loop (its catch-up and tick-retry settings from the instance)."""
    from dagster._scheduler.scheduler import launch_scheduled_runs

    settings = context.instance.get_scheduler_settings() or {}
    yield from launch_scheduled_runs(
        context,
        logger,
        end_datetime_utc=now,
        iteration_times={},
        max_catchup_runs=settings.get("max_catchup_runs", 5),
        max_tick_retries=settings.get("max_tick_retries", 0),
    )


def sensors_pass(context: WorkspaceProcessContext, logger: logging.Logger) -> Iterator[object]:
    """One pass of the sensor daemon's loop, evaluated synchronously (no thread pools)."""
    from dagster._daemon.sensor import execute_sensor_iteration

    yield from execute_sensor_iteration(context, logger, threadpool_executor=None, submit_threadpool_executor=None)


def error_texts(results: Iterator[object]) -> list[str]:
    """Drain a daemon loop; the errors it yielded, as text."""
    from dagster._utils.error import SerializableErrorInfo

    return [error.to_string() for error in results if isinstance(error, SerializableErrorInfo)]


def workspace_instigators(context: WorkspaceProcessContext) -> tuple[list[RemoteSchedule | RemoteSensor], list[str]]:
    """Every schedule and sensor of the workspace, and the code locations that failed to load."""
    instigators: list[RemoteSchedule | RemoteSensor] = []
    load_errors: list[str] = []
    for location in context.create_request_context().get_code_location_entries().values():
        if location.load_error is not None:
            load_errors.append(f"code location '{location.origin.location_name}' failed to load: {location.load_error}")
            continue
        assert location.code_location is not None
        for repository in location.code_location.get_repositories().values():
            instigators += [*repository.get_schedules(), *repository.get_sensors()]
    return instigators, load_errors


def is_schedule(instigator: RemoteSchedule | RemoteSensor) -> bool:
    from dagster._core.remote_representation.external import RemoteSchedule

    return isinstance(instigator, RemoteSchedule)


def instigator_ticks(
    instance: dg.DagsterInstance, instigator: RemoteSchedule | RemoteSensor, limit: int
) -> list[InstigatorTick]:
    """The newest ``limit`` ticks of a schedule or sensor, newest first."""
    return list(instance.get_ticks(instigator.get_remote_origin_id(), instigator.selector_id, limit=limit))


def is_running(instance: dg.DagsterInstance, instigator: RemoteSchedule | RemoteSensor) -> bool:
    """Whether the schedule or sensor is RUNNING (stored state, else its default status)."""
    stored = instance.get_instigator_state(instigator.get_remote_origin_id(), instigator.selector_id)
    return instigator.get_current_instigator_state(stored).is_running


def tick_status(tick: InstigatorTick) -> str:
    """``SUCCESS``, ``SKIPPED``, ``FAILURE``, ``STARTED`` (``TickStatus`` values)."""
    return str(tick.status.value)


if TYPE_CHECKING:
    AssetGraph = BaseAssetGraph[Any]
    """``RepositoryDefinition.asset_graph`` and a workspace's asset graph share this interface."""
    WorkspaceAssetGraph = RemoteWorkspaceAssetGraph

__all__ = [
    "AUTO_RETRY_RUN_ID_TAG",
    "AssetGraph",
    "InstigatorTick",
    "RemoteSchedule",
    "RemoteSensor",
    "WorkspaceAssetGraph",
    "WorkspaceLoadTarget",
    "WorkspaceProcessContext",
    "BACKFILL_ID_TAG",
    "CHECKED_VERSION",
    "CODE_LOCATION_TAG",
    "DATA_VERSION_TAG",
    "PARENT_BACKFILL_ID_TAG",
    "PRIVATE_USES",
    "ROOT_BACKFILL_ID_TAG",
    "WILL_RETRY_TAG",
    "error_texts",
    "hoist_build_node_deps",
    "instigator_ticks",
    "is_running",
    "is_schedule",
    "load_repositories",
    "load_target",
    "missing_private_names",
    "newest_tick_time",
    "requested_asset_backfills",
    "schedules_pass",
    "sensors_pass",
    "submit_run_requests",
    "tick_status",
    "version_mismatch",
    "workspace_context",
    "workspace_instigators",
]
