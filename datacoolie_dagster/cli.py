"""``datacoolie-dagster``: commands for deployments and CI.

``datacoolie-dagster tick [-w workspace.yaml | -m module | -f file.py] [--instance DAGSTER_HOME]``
makes ONE pass of the daemon's schedule and sensor loops over the code location(s), then exits:
every RUNNING schedule and sensor (declared in code or started in the UI) is evaluated exactly as
``dagster-daemon`` would (tick store, cursors, ``run_key`` dedupe, minimum intervals), and the due
runs are submitted to the instance's run coordinator (the queue: a daemon or ``dagster run`` worker
still has to dequeue them). Exit 0, or 1 if an evaluation failed. STOPPED instigators are not
evaluated (start them with ``dagster schedule start`` / ``dagster sensor start``).

Pinned to dagster 1.13.27: it calls the daemon's iteration functions
(``dagster._scheduler.scheduler.launch_scheduled_runs`` and
``dagster._daemon.sensor.execute_sensor_iteration``) once, synchronously; Dagster has no public
"tick once" API. A fresh schedule starts counting at its first tick (as with the daemon), so the
first ``tick`` of a new deployment only records state.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

import dagster as dg
from dagster._core.remote_representation.external import RemoteSchedule, RemoteSensor
from dagster._core.scheduler.instigation import InstigatorType, TickStatus
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import (
    WorkspaceLoadTarget,
)
from dagster._daemon.sensor import execute_sensor_iteration
from dagster._scheduler.scheduler import launch_scheduled_runs
from dagster._utils.error import SerializableErrorInfo

from datacoolie_core.cli.output import run_masked
from datacoolie_dagster.backfill import add_backfill_parser
from datacoolie_dagster.cli_options import add_location_options, instance_home, load_target
from datacoolie_dagster.rebuild import add_rebuild_parser

LOGGER = logging.getLogger("datacoolie_dagster.tick")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``datacoolie-dagster`` console script; returns the exit code.

    Everything it writes is masked (no secret in any output, see ``docs/secrets.md``).
    """
    return run_masked(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    return int(args.handler(args))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="datacoolie-dagster", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    tick = commands.add_parser("tick", help="one pass of the schedules and sensors, then exit")
    add_location_options(tick)
    tick.set_defaults(handler=_tick)
    add_backfill_parser(commands)
    add_rebuild_parser(commands)
    return parser


def _tick(args: argparse.Namespace) -> int:
    target = load_target(args)
    home = instance_home(args, "tick")
    if not home:
        return 2
    with dg.DagsterInstance.from_config(os.fspath(home)) as instance:
        failures = tick_once(instance, target)
    for failure in failures:
        print(f"datacoolie-dagster tick: {failure}", file=sys.stderr)
    return 1 if failures else 0


def tick_once(instance: dg.DagsterInstance, target: WorkspaceLoadTarget) -> list[str]:
    """Evaluate every RUNNING schedule and sensor of ``target`` once and submit what is due.

    Returns one message per failed evaluation (empty: all went well).
    """
    started = datetime.now(UTC)
    with WorkspaceProcessContext(instance, target) as context:
        errors = [*_drain(_schedules_pass(context, started)), *_drain(_sensors_pass(context))]
        errors.extend(_failed_ticks(instance, context, started))
    return list(dict.fromkeys(errors))


def _schedules_pass(context: WorkspaceProcessContext, now: datetime) -> Iterator[object]:
    settings = context.instance.get_scheduler_settings() or {}
    yield from launch_scheduled_runs(
        context,
        LOGGER,
        end_datetime_utc=now,
        iteration_times={},
        max_catchup_runs=settings.get("max_catchup_runs", 5),
        max_tick_retries=settings.get("max_tick_retries", 0),
    )


def _sensors_pass(context: WorkspaceProcessContext) -> Iterator[object]:
    # no thread pools: evaluated synchronously, one after the other, like the daemon without use_threads
    yield from execute_sensor_iteration(context, LOGGER, threadpool_executor=None, submit_threadpool_executor=None)


def _drain(results: Iterator[object]) -> list[str]:
    return [error.to_string() for error in results if isinstance(error, SerializableErrorInfo)]


def _failed_ticks(instance: dg.DagsterInstance, context: WorkspaceProcessContext, since: datetime) -> list[str]:
    """Ticks of this pass that ended in FAILURE (an evaluation error the loops only stored)."""
    failed: list[str] = []
    for location in context.create_request_context().get_code_location_entries().values():
        if location.load_error is not None:
            failed.append(f"code location '{location.origin.location_name}' failed to load: {location.load_error}")
            continue
        assert location.code_location is not None
        for repository in location.code_location.get_repositories().values():
            instigators: list[RemoteSchedule | RemoteSensor] = [*repository.get_schedules(), *repository.get_sensors()]
            for instigator in instigators:
                ticks = instance.get_ticks(instigator.get_remote_origin_id(), instigator.selector_id, limit=1)
                if ticks and ticks[0].status == TickStatus.FAILURE and ticks[0].timestamp >= since.timestamp():
                    kind = "schedule" if ticks[0].instigator_type == InstigatorType.SCHEDULE else "sensor"
                    error = ticks[0].error.message.strip() if ticks[0].error else "no error recorded"
                    failed.append(f"{kind} '{instigator.name}' failed: {error}")
    return failed


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
