"""Parallel execution of dataflows under one global concurrency cap (DataCoolie O-06..O-08).

One ``ThreadPoolExecutor(max_workers)`` serves the whole invocation; a scheduler loop on the calling
thread admits only *ready* work, so independent flows, concurrent groups and tied order buckets
together never run more than ``max_workers`` dataflows at once. DataCoolie 0.1.7 nested a pool per
bucket and could exceed the cap; we do not.

Threads, not processes: Polars and delta-rs release the GIL during I/O and compute.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import groupby

from datacoolie_core.errors import DataCoolieError
from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.models.runtime import DataFlowRuntimeInfo, ExecutionResult

logger = logging.getLogger("datacoolie.orchestration")

FINISHED_STATUSES = ("succeeded", "failed", "skipped")

Process = Callable[[DataFlow], DataFlowRuntimeInfo]
OnComplete = Callable[[DataFlowRuntimeInfo], None]


@dataclass
class _Lane:
    """A chain of buckets that run one after another: a group, or one independent dataflow."""

    buckets: list[list[int]]
    """Indexes into the submitted list, bucket by bucket in ascending ``execution_order``."""
    position: int = 0
    remaining: int = 0
    """Items of the current bucket not yet completed."""


@dataclass
class _Schedule:
    """Which submitted items are ready: the open bucket of every lane, admitted lowest index first."""

    lanes: list[_Lane]
    lane_of: dict[int, _Lane] = field(default_factory=dict)
    ready: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        for lane in self.lanes:
            self.lane_of.update({index: lane for bucket in lane.buckets for index in bucket})
            self._open(lane)

    def pop_ready(self) -> int | None:
        return heapq.heappop(self.ready) if self.ready else None

    def complete(self, index: int) -> None:
        """Record ``index`` as finished; the last item of a bucket opens the lane's next bucket."""
        lane = self.lane_of[index]
        lane.remaining -= 1
        if lane.remaining == 0 and lane.position + 1 < len(lane.buckets):
            lane.position += 1
            self._open(lane)

    def _open(self, lane: _Lane) -> None:
        bucket = lane.buckets[lane.position]
        lane.remaining = len(bucket)
        for index in bucket:
            heapq.heappush(self.ready, index)


def _plan_lanes(dataflows: Sequence[DataFlow], *, grouped: bool) -> list[_Lane]:
    """Lanes of the submitted dataflows.

    Grouped: dataflows sharing a non-null ``group_number`` form one lane whose buckets are their
    ``execution_order`` values ascending (``None`` counts as 0); every other dataflow, including an
    ungrouped one with an ``execution_order``, is a lane of its own. Not grouped: all independent.
    """
    groups: dict[int, list[int]] = {}
    lanes: list[_Lane] = []
    for index, dataflow in enumerate(dataflows):
        if grouped and dataflow.group_number is not None:
            groups.setdefault(dataflow.group_number, []).append(index)
        else:
            lanes.append(_Lane(buckets=[[index]]))
    for members in groups.values():
        ordered = sorted(members, key=lambda i: dataflows[i].execution_order or 0)
        buckets = [list(b) for _, b in groupby(ordered, key=lambda i: dataflows[i].execution_order or 0)]
        lanes.append(_Lane(buckets=buckets))
    return lanes


class ParallelExecutor:
    """Runs dataflows on one thread pool, honouring groups, order buckets and ``stop_on_error``.

    Example:
        >>> executor = ParallelExecutor(max_workers=8, stop_on_error=False)
        >>> result = executor.execute(dataflows, run_one, on_complete=log_row)
        >>> result.raise_on_failures()
    """

    def __init__(self, max_workers: int, *, stop_on_error: bool = False) -> None:
        """Args:
            max_workers: Global cap on dataflows running at once in one :meth:`execute` call.
            stop_on_error: After the first failed dataflow admit nothing new; admitted work drains,
                the rest is reported ``pending``.

        Raises:
            ValueError: ``max_workers`` below 1.
        """
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise ValueError(f"max_workers must be a positive integer, got {max_workers!r}")
        self.max_workers = max_workers
        self.stop_on_error = stop_on_error

    def execute(
        self,
        dataflows: Sequence[DataFlow],
        process: Process,
        *,
        grouped: bool = True,
        on_complete: OnComplete | None = None,
    ) -> ExecutionResult:
        """Run ``process`` once per dataflow and count the outcomes.

        Args:
            dataflows: The work, in submission order.
            process: Runs one dataflow and returns its finished runtime. An exception it raises
                becomes a failed runtime (with ``.exception`` kept): this method never raises for
                one dataflow. ``KeyboardInterrupt`` / ``SystemExit`` still propagate.
            grouped: Sequence groups by ``execution_order`` (a normal run); ``False`` makes every
                dataflow independent (replay, maintenance).
            on_complete: Called with each finished runtime in completion order, on the calling
                thread (never concurrently). Its exceptions are logged and ignored. Not called for
                withheld (``pending``) dataflows.

        Returns:
            Counts of the submitted dataflows and their runtimes in submission order; ``running``
            is always 0.
        """
        started = time.monotonic()
        runtimes: list[DataFlowRuntimeInfo | None] = [None] * len(dataflows)
        if dataflows:
            schedule = _Schedule(_plan_lanes(dataflows, grouped=grouped))
            with ThreadPoolExecutor(max_workers=self.max_workers, thread_name_prefix="datacoolie") as pool:
                self._drive(pool, schedule, dataflows, process, runtimes, on_complete)
        finished = [r if r is not None else _withheld_runtime(d) for d, r in zip(dataflows, runtimes, strict=True)]
        return _summarize(finished, time.monotonic() - started)

    def _drive(
        self,
        pool: ThreadPoolExecutor,
        schedule: _Schedule,
        dataflows: Sequence[DataFlow],
        process: Process,
        runtimes: list[DataFlowRuntimeInfo | None],
        on_complete: OnComplete | None,
    ) -> None:
        """The scheduler loop: admit ready work, wait for a completion, repeat.

        Up to ``2 * max_workers`` ready items are admitted at once: the pool runs ``max_workers`` of
        them (the cap) and a worker that finishes starts the next queued one at once, instead of
        idling until this thread wakes up to hand it over (~0.2 ms of wall a tiny dataflow, 2 workers).
        Only ready items are queued, so a later bucket still waits for its predecessors; after a
        failure under ``stop_on_error`` the queued ones do not start (:class:`_Gate`).
        """
        gate = _Gate(self.stop_on_error)
        in_flight: dict[Future[DataFlowRuntimeInfo | None], int] = {}
        stopped = False  # what this thread has seen; the gate holds back queued work sooner
        with gate.closed_on_escape():
            while True:
                while not stopped and len(in_flight) < 2 * self.max_workers:
                    index = schedule.pop_ready()
                    if index is None:
                        break
                    queued = len(in_flight) >= self.max_workers  # beyond the cap: waits for a worker to free up
                    in_flight[pool.submit(gate.run, process, dataflows[index], queued=queued)] = index
                if not in_flight:
                    return
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=in_flight.__getitem__):
                    index = in_flight.pop(future)
                    runtime = future.result()  # only BaseExceptions escape _run_isolated
                    if runtime is None:  # withheld: queued, and an earlier dataflow failed first
                        continue
                    runtimes[index] = runtime
                    _notify(on_complete, runtime)
                    stopped = stopped or (self.stop_on_error and runtime.status == "failed")
                    schedule.complete(index)


class _Gate:
    """Admission of queued work: under ``stop_on_error``, no queued dataflow starts after the first failure;
    after an interrupt (``KeyboardInterrupt``), none at all."""

    def __init__(self, stop_on_error: bool) -> None:
        self.stop_on_error = stop_on_error
        self.stopped = False

    @contextmanager
    def closed_on_escape(self) -> Iterator[None]:
        """Close the gate when an exception (an interrupt) leaves the block: queued work must not start
        while the pool drains."""
        try:
            yield
        except BaseException:
            self.stopped = True
            raise

    def run(self, process: Process, dataflow: DataFlow, *, queued: bool) -> DataFlowRuntimeInfo | None:
        """``process(dataflow)`` isolated (:func:`_run_isolated`); ``None``: withheld, not run.

        ``queued``: admitted beyond the cap, so it starts only if nothing failed before a worker took it
        (as the scheduler would not have admitted it then); work admitted within the cap always runs.
        """
        if self.stopped and queued:
            return None
        try:
            runtime = _run_isolated(process, dataflow)
        except BaseException:  # KeyboardInterrupt, SystemExit: it propagates, nothing queued starts
            self.stopped = True
            raise
        if self.stop_on_error and runtime.status == "failed":
            self.stopped = True  # set in the worker, before it takes its next queued item
        return runtime


def _run_isolated(process: Process, dataflow: DataFlow) -> DataFlowRuntimeInfo:
    """``process(dataflow)``, with any ``Exception`` or malformed return turned into a failed runtime."""
    try:
        runtime = process(dataflow)
    except Exception as error:
        logger.error("dataflow %s raised %s: %s", dataflow.label, type(error).__name__, error, exc_info=True)
        return _failed_runtime(dataflow, error)
    if not isinstance(runtime, DataFlowRuntimeInfo):
        problem = f"process returned {type(runtime).__name__}, not a DataFlowRuntimeInfo"
        return _failed_runtime(dataflow, DataCoolieError(f"dataflow {dataflow.label}: {problem}; fix the process"))
    if runtime.status not in FINISHED_STATUSES:
        # a runtime left "running"/"pending" would break the running == 0 contract of the result
        problem = f"process returned status '{runtime.status}', expected one of {', '.join(FINISHED_STATUSES)}"
        unfinished = DataCoolieError(f"dataflow {dataflow.label}: {problem}; finish the runtime before returning it")
        runtime.exception = unfinished
        runtime.finish("failed", error=unfinished)
    return runtime


def _identity(dataflow: DataFlow) -> tuple[str, str]:
    dataflow_id = dataflow.dataflow_id or ""
    return dataflow_id, dataflow.name or dataflow_id


def _failed_runtime(dataflow: DataFlow, error: Exception) -> DataFlowRuntimeInfo:
    dataflow_id, name = _identity(dataflow)
    runtime = DataFlowRuntimeInfo(dataflow_id=dataflow_id, dataflow_name=name, exception=error)
    runtime.finish("failed", error=error)
    return runtime


def _withheld_runtime(dataflow: DataFlow) -> DataFlowRuntimeInfo:
    """The record of a dataflow never admitted (``stop_on_error``): status ``pending``, no end time."""
    dataflow_id, name = _identity(dataflow)
    return DataFlowRuntimeInfo(
        dataflow_id=dataflow_id,
        dataflow_name=name,
        status="pending",
        skip_reason="not run: an earlier dataflow failed and stop_on_error is set",
    )


def _notify(on_complete: OnComplete | None, runtime: DataFlowRuntimeInfo) -> None:
    if on_complete is None:
        return
    try:
        on_complete(runtime)
    except Exception:
        # an observer (execution log, Dagster event) must never change the pipeline's outcome
        logger.warning("on_complete failed for dataflow %s; ignored", runtime.dataflow_name, exc_info=True)


def _summarize(runtimes: list[DataFlowRuntimeInfo], duration_seconds: float) -> ExecutionResult:
    def count(status: str) -> int:
        return sum(r.status == status for r in runtimes)

    return ExecutionResult(
        total=len(runtimes),
        succeeded=count("succeeded"),
        failed=count("failed"),
        skipped=count("skipped"),
        running=0,
        pending=count("pending"),
        runtimes=runtimes,
        duration_seconds=duration_seconds,
    )
