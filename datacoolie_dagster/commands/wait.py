"""``datacoolie-dagster wait RUN_ID…``: follow runs to their end and gate a CI job on them.

Prints each run's progress as it happens (steps started and finished, every table written with its
rows, failures with the failing dataflows' errors), then one summary line per run, and exits

* **0** when every run succeeded;
* **1** when a run failed or was canceled;
* **2** on bad arguments, an unknown run id or an unreachable deployment;
* **3** when it stopped waiting: ``--timeout`` passed, or a run stayed QUEUED past
  ``--queued-timeout`` while no daemon dequeues runs ("is dagster-daemon running?"). The runs are
  left as they are (they may still run).

It reads the instance at ``DAGSTER_HOME`` (``--instance``), or with ``--url`` a Dagster webserver's
GraphQL API (no instance needed in the CI job). See ``docs/ci.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from datacoolie_dagster.commands.cli_options import instance_home
from datacoolie_dagster.commands.run_events import (
    GAVE_UP,
    USAGE,
    RunProgress,
    RunState,
    exit_code,
    progress_lines,
    stuck_in_queue,
    summary_line,
)
from datacoolie_dagster.commands.run_sources import (
    GraphQLRunSource,
    RunNotFoundError,
    RunSource,
    graphql_clients,
    instance_source,
)

HEARTBEAT_STALE_SECONDS = 90.0
"""A run-queue daemon whose last heartbeat is older than this is gone: it writes one every 30 s."""


def add_wait_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    wait = commands.add_parser("wait", help="follow runs until they end; exit 0 only if all succeeded")
    wait.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    add_deployment_options(wait)
    wait.add_argument("--timeout", type=float, default=3600.0, help="give up after this many seconds (3600)")
    wait.add_argument(
        "--queued-timeout",
        type=float,
        default=120.0,
        help="a run QUEUED this long with no live dagster-daemon fails the wait (seconds, 120)",
    )
    wait.add_argument("--poll", type=float, default=2.0, help="seconds between reads (2)")
    wait.set_defaults(handler=run_wait)


def add_deployment_options(parser: argparse.ArgumentParser) -> None:
    """``--url`` (a webserver) or ``--instance`` (``DAGSTER_HOME``): where the runs live."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--url", help="Dagster webserver, e.g. http://dagster.internal:3000 (token: $DAGSTER_TOKEN)")
    where.add_argument("--instance", help="DAGSTER_HOME (default: $DAGSTER_HOME)")


@contextmanager
def open_source(args: argparse.Namespace, command: str) -> Iterator[RunSource | None]:
    """The reader the options name; ``None`` (after printing the fix) when there is none."""
    if args.url:
        try:
            _, client = graphql_clients(args.url)
        except ValueError as error:
            print(f"datacoolie-dagster {command}: {error}", file=sys.stderr)
            yield None
            return
        yield GraphQLRunSource(args.url, client)
        return
    home = instance_home(args, command)
    if not home:
        yield None
        return
    with instance_source(home) as source:
        yield source


def run_wait(args: argparse.Namespace) -> int:
    with open_source(args, "wait") as source:
        if source is None:
            return USAGE
        follower = RunFollower(source, _print_now, queued_timeout=args.queued_timeout)
        try:
            return follower.follow(list(dict.fromkeys(args.run_ids)), timeout=args.timeout, poll=args.poll)
        except RunNotFoundError as error:
            print(f"datacoolie-dagster wait: {error}", file=sys.stderr)
            return USAGE
        except Exception as error:  # the deployment went away: say where, not a traceback
            print(f"datacoolie-dagster wait: cannot read the runs: {error}", file=sys.stderr)
            return USAGE


def _print_now(line: str) -> None:
    print(line, flush=True)  # a CI log shows progress as it happens, not when a buffer fills


@dataclass
class RunFollower:
    """Polls runs, prints their new events, and decides the exit code when all have ended."""

    source: RunSource
    out: Callable[[str], object]
    queued_timeout: float = 120.0
    heartbeat_stale: float = HEARTBEAT_STALE_SECONDS
    clock: Callable[[], float] = time.time
    states: dict[str, RunState] = field(default_factory=dict)
    progress: dict[str, RunProgress] = field(default_factory=dict)
    cursors: dict[str, str | None] = field(default_factory=dict)
    gave_up: dict[str, str] = field(default_factory=dict)

    def follow(self, run_ids: Sequence[str], *, timeout: float, poll: float) -> int:
        deadline = time.monotonic() + timeout
        pending = [r for r in run_ids if not self._read(r)]  # an unknown run id fails before any wait
        while pending:
            if time.monotonic() >= deadline:
                for run_id in pending:
                    self.gave_up[run_id] = f"still {self.states[run_id].status} after --timeout {timeout:g} s"
                break
            time.sleep(poll)
            pending = [r for r in pending if not self._read(r)]
        for run_id in run_ids:
            self.out(summary_line(self.states[run_id], self.progress[run_id], self.gave_up.get(run_id)))
        code = exit_code(self.states, self.gave_up)
        if code == GAVE_UP:
            self.out("stopped waiting; the runs above that did not finish are left as they are")
        return code

    def _read(self, run_id: str) -> bool:
        """Print what is new about ``run_id``; ``True`` once there is nothing more to wait for."""
        # the state first: a run seen finished has written every event the read after it returns
        state = self.source.state(run_id)
        self.states[run_id] = state
        events, self.cursors[run_id] = self.source.events(run_id, self.cursors.get(run_id))
        progress = self.progress.setdefault(run_id, RunProgress())
        for event in events:
            progress.add(event)
            for line in progress_lines(event):
                self.out(f"[{run_id[:8]}] {line}")
        if state.finished:
            return True
        stuck = stuck_in_queue(
            state,
            self.clock(),
            self.source.queue_heartbeat() if state.status == "QUEUED" else None,
            queued_timeout=self.queued_timeout,
            heartbeat_stale=self.heartbeat_stale,
        )
        if stuck:
            self.gave_up[run_id] = stuck
            self.out(f"[{run_id[:8]}] {stuck}")
        return stuck is not None
