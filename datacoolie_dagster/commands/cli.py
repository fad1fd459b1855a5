"""``datacoolie-dagster``: commands for deployments and CI.

``datacoolie-dagster tick [-w workspace.yaml | -m module | -f file.py] [--instance DAGSTER_HOME] [-v]``
makes ONE pass of the daemon's schedule and sensor loops over the code location(s), then exits:
every RUNNING schedule and sensor (declared in code or started in the UI) is evaluated exactly as
``dagster-daemon`` would (tick store, cursors, ``run_key`` dedupe, minimum intervals), and the due
runs are submitted to the instance's run coordinator (the queue: a daemon or ``dagster run`` worker
still has to dequeue them). It prints one line per schedule and sensor: the run ids it queued, why
it skipped, or why it was not evaluated. Exit 0, or 1 if an evaluation failed. STOPPED instigators are not
evaluated (start them with ``dagster schedule start`` / ``dagster sensor start``).

It calls the daemon's own schedule and sensor iterations once, synchronously (private Dagster
functions, see :mod:`datacoolie_dagster.dagster_internal`): Dagster has no public "tick once" API.
A fresh schedule starts counting at its first tick (as with the daemon), so the first ``tick`` of a
new deployment only records state.

``launch`` (submit a run to a webserver) and ``wait`` (follow runs, exit 0 only if all succeeded) are
the CI commands: see :mod:`.launch`, :mod:`.wait` and ``docs/ci.md``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import dagster as dg

from datacoolie_core.api import run_masked
from datacoolie_dagster import dagster_internal as internal
from datacoolie_dagster.commands.adopt import add_adopt_parser
from datacoolie_dagster.commands.backfill import add_backfill_parser
from datacoolie_dagster.commands.cli_options import (
    add_location_options,
    instance_home,
    load_target,
    quiet_instance_logs,
)
from datacoolie_dagster.commands.launch import add_launch_parser
from datacoolie_dagster.commands.rebuild import add_rebuild_parser
from datacoolie_dagster.commands.wait import add_wait_parser

if TYPE_CHECKING:
    from datacoolie_dagster.dagster_internal import (
        InstigatorTick,
        RemoteSchedule,
        RemoteSensor,
        WorkspaceLoadTarget,
    )

LOGGER = logging.getLogger("datacoolie_dagster.tick")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``datacoolie-dagster`` console script; returns the exit code.

    Everything it writes is masked (no secret in any output, see ``docs/secrets.md``).
    """
    return run_masked(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    quiet_instance_logs()
    # the daemon loops log every step ("Checking for new runs for sensor: ..."); the summary says what
    # each instigator did, so those lines only come with --verbose (warnings and errors always do)
    LOGGER.setLevel(logging.WARNING)
    return int(args.handler(args))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="datacoolie-dagster", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    tick = commands.add_parser("tick", help="one pass of the schedules and sensors, then exit")
    add_location_options(tick)
    tick.add_argument("-v", "--verbose", action="store_true", help="also log each step of the daemon loops")
    tick.set_defaults(handler=_tick)
    add_backfill_parser(commands)
    add_rebuild_parser(commands)
    add_adopt_parser(commands)
    add_launch_parser(commands)
    add_wait_parser(commands)
    return parser


def _tick(args: argparse.Namespace) -> int:
    target = load_target(args)
    home = instance_home(args, "tick")
    if not home:
        return 2
    if args.verbose:
        LOGGER.setLevel(logging.INFO)
    with dg.DagsterInstance.from_config(os.fspath(home)) as instance:
        report = tick_pass(instance, target, verbose=args.verbose)
    for outcome in report.outcomes:
        if outcome.status != "failed":
            print(outcome.line())
    for failure in report.failures:
        print(f"datacoolie-dagster tick: {failure}", file=sys.stderr)
    return 1 if report.failures else 0


@dataclass(frozen=True)
class TickOutcome:
    """What one schedule or sensor did in a ``tick`` pass, read back from its tick record."""

    kind: str
    """``schedule`` or ``sensor``."""
    name: str
    status: str
    """``queued`` (runs submitted), ``skipped``, ``failed``, ``not evaluated``."""
    detail: str
    """Run ids, skip reason, error, or why it was not evaluated."""

    def line(self) -> str:
        return f"{self.kind} '{self.name}': {self.status}" + (f": {self.detail}" if self.detail else "")


@dataclass(frozen=True)
class TickReport:
    outcomes: list[TickOutcome]
    failures: list[str]
    """One message per failed evaluation (empty: all went well)."""


def tick_once(instance: dg.DagsterInstance, target: WorkspaceLoadTarget) -> list[str]:
    """Evaluate every RUNNING schedule and sensor of ``target`` once and submit what is due.

    Returns one message per failed evaluation (empty: all went well).
    """
    return tick_pass(instance, target).failures


def tick_pass(instance: dg.DagsterInstance, target: WorkspaceLoadTarget, *, verbose: bool = False) -> TickReport:
    """:func:`tick_once`, also reporting what each schedule and sensor did (queued run ids, skip reasons).

    ``verbose``: the code server also logs its start and stop (INFO).
    """
    started = datetime.now(UTC)
    log_level = "INFO" if verbose else "WARNING"
    with internal.workspace_context(instance, target, code_server_log_level=log_level) as context:
        instigators, errors = internal.workspace_instigators(context)
        # a schedule's tick is stamped with its fire time, not with when it was evaluated: a tick is
        # this pass's when its storage id is past the latest one before the pass
        before = {i.selector_id: _tick_ids(instance, i, limit=1) for i in instigators}
        # the sensors are evaluated synchronously, one after the other (the daemon without use_threads)
        errors += internal.error_texts(internal.schedules_pass(context, started, LOGGER))
        errors += internal.error_texts(internal.sensors_pass(context, LOGGER))
        outcomes = [_outcome(instance, i, max(before[i.selector_id], default=0)) for i in instigators]
    errors += [f"{o.kind} '{o.name}' failed: {o.detail}" for o in outcomes if o.status == "failed"]
    return TickReport(outcomes, list(dict.fromkeys(errors)))


def _ticks(instance: dg.DagsterInstance, instigator: RemoteSchedule | RemoteSensor, limit: int) -> list[InstigatorTick]:
    return internal.instigator_ticks(instance, instigator, limit)


def _tick_ids(instance: dg.DagsterInstance, instigator: RemoteSchedule | RemoteSensor, limit: int) -> list[int]:
    return [tick.tick_id for tick in _ticks(instance, instigator, limit)]


def _outcome(instance: dg.DagsterInstance, instigator: RemoteSchedule | RemoteSensor, after: int) -> TickOutcome:
    """What ``instigator`` did in this pass: its ticks with a storage id past ``after`` (newest first)."""
    kind = "schedule" if internal.is_schedule(instigator) else "sensor"
    ticks = [tick for tick in _ticks(instance, instigator, limit=_MAX_TICKS_PER_PASS) if tick.tick_id > after]
    if not ticks:
        running = internal.is_running(instance, instigator)
        why = "not due yet" if running else f"stopped (start it in the UI, or: dagster {kind} start {instigator.name})"
        return TickOutcome(kind, instigator.name, "not evaluated", why)
    failed = [tick for tick in ticks if internal.tick_status(tick) == "FAILURE"]
    if failed:
        error = failed[0].error
        return TickOutcome(kind, instigator.name, "failed", error.message.strip() if error else "no error recorded")
    run_ids = [run_id for tick in reversed(ticks) for run_id in tick.run_ids]
    if run_ids:
        return TickOutcome(kind, instigator.name, "queued", f"{len(run_ids)} run(s): {', '.join(run_ids)}")
    if internal.tick_status(ticks[0]) == "SKIPPED":
        return TickOutcome(kind, instigator.name, "skipped", ticks[0].skip_reason or "nothing to do")
    return TickOutcome(kind, instigator.name, internal.tick_status(ticks[0]).lower(), "no run requested")


_MAX_TICKS_PER_PASS = 50
"""A schedule catching up makes one tick per missed fire; more than the daemon's catch-up limit."""


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
