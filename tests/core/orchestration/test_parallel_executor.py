"""ParallelExecutor: one global cap, group/order buckets, error isolation, stop_on_error, result counts."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest

from datacoolie_core import Connection, DataFlow
from datacoolie_core.models.runtime import DataFlowRuntimeInfo, Status
from datacoolie_core.orchestration.parallel_executor import ParallelExecutor

LAKE = Connection.model_validate({"name": "lake", "format": "delta", "configure": {"base_path": "/lake"}})


def flow(name: str, group: int | None = None, order: int | None = None) -> DataFlow:
    document = {
        "name": name,
        "group_number": group,
        "execution_order": order,
        "source": {"connection_name": "lake", "table": f"src_{name}"},
        "destination": {"connection_name": "lake", "table": f"dst_{name}"},
    }
    return DataFlow.model_validate(document, context={"connections": {"lake": LAKE}})


def finished(dataflow: DataFlow, status: Status = "succeeded", error: Exception | None = None) -> DataFlowRuntimeInfo:
    runtime = DataFlowRuntimeInfo(dataflow_id=str(dataflow.dataflow_id), dataflow_name=str(dataflow.name))
    runtime.exception = error
    runtime.finish(status, error=error)
    return runtime


class Probe:
    """A ``process`` that records concurrency and the start/end sequence of every dataflow."""

    def __init__(self, seconds: float = 0.005, statuses: dict[str, Status] | None = None) -> None:
        self.seconds = seconds
        self.statuses = statuses or {}
        self.lock = threading.Lock()
        self.active = 0
        self.max_active = 0
        self.events: list[tuple[str, str]] = []

    def __call__(self, dataflow: DataFlow) -> DataFlowRuntimeInfo:
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.events.append(("start", str(dataflow.name)))
        time.sleep(self.seconds)
        with self.lock:
            self.active -= 1
            self.events.append(("end", str(dataflow.name)))
        return finished(dataflow, self.statuses.get(str(dataflow.name), "succeeded"))

    def position(self, kind: str, name: str) -> int:
        return self.events.index((kind, name))

    def ran(self) -> set[str]:
        return {name for kind, name in self.events if kind == "start"}


def rendezvous(parties: int, names: set[str]) -> Callable[[DataFlow], DataFlowRuntimeInfo]:
    """A ``process`` whose ``names`` all wait for each other: it fails unless they run at the same time."""
    barrier = threading.Barrier(parties, timeout=10)

    def process(dataflow: DataFlow) -> DataFlowRuntimeInfo:
        if dataflow.name in names:
            barrier.wait()
        return finished(dataflow)

    return process


def layered_workload() -> list[DataFlow]:
    """3 groups x 2 buckets x 3 items, interleaved with 5 independent dataflows."""
    grouped = [flow(f"g{g}_o{o}_{i}", group=g, order=o) for g in range(3) for o in (20, 10) for i in range(3)]
    independent = [flow(f"solo_{i}", order=i) for i in range(5)]
    return [*independent[:2], *grouped[:9], *independent[2:], *grouped[9:]]


@pytest.mark.parametrize("max_workers", [1, 2, 3])
def test_global_cap_holds_across_groups_and_tied_buckets(max_workers: int) -> None:
    dataflows = layered_workload()
    probe = Probe()

    result = ParallelExecutor(max_workers).execute(dataflows, probe)

    assert probe.max_active <= max_workers
    assert probe.ran() == {str(d.name) for d in dataflows}
    assert (result.total, result.succeeded, result.failed, result.pending, result.running) == (23, 23, 0, 0, 0)


def test_a_bucket_starts_only_after_the_previous_bucket_completed() -> None:
    dataflows = layered_workload()
    probe = Probe()

    ParallelExecutor(3).execute(dataflows, probe)

    for group in range(3):
        last_end_of_10 = max(probe.position("end", f"g{group}_o10_{i}") for i in range(3))
        first_start_of_20 = min(probe.position("start", f"g{group}_o20_{i}") for i in range(3))
        assert last_end_of_10 < first_start_of_20, f"group {group}: {probe.events}"


def test_group_zero_is_a_group_and_missing_order_is_zero() -> None:
    dataflows = [flow("late", group=0, order=1), flow("unordered", group=0), flow("first", group=0, order=0)]
    probe = Probe()

    ParallelExecutor(3).execute(dataflows, probe)

    assert probe.position("end", "unordered") < probe.position("start", "late")
    assert probe.position("end", "first") < probe.position("start", "late")


def test_tied_orders_run_in_parallel() -> None:
    # "c" has no order: in a group that is order 0, tied with "a" and "b"
    dataflows = [flow("a", group=1, order=0), flow("b", group=1, order=0), flow("c", group=1)]

    result = ParallelExecutor(3).execute(dataflows, rendezvous(3, {"a", "b", "c"}))

    assert result.succeeded == 3, result.errors


def test_different_groups_overlap() -> None:
    dataflows = [flow("a_first", group=1, order=1), flow("a_second", group=1, order=2), flow("b_only", group=2)]

    result = ParallelExecutor(2).execute(dataflows, rendezvous(2, {"a_first", "b_only"}))

    assert result.succeeded == 3, result.errors


def test_ungrouped_dataflows_with_orders_are_not_sequenced() -> None:
    dataflows = [flow("first", order=10), flow("second", order=20)]

    result = ParallelExecutor(2).execute(dataflows, rendezvous(2, {"first", "second"}))

    assert result.succeeded == 2, result.errors


def test_grouped_false_makes_every_dataflow_independent() -> None:
    dataflows = [flow("first", group=1, order=10), flow("second", group=1, order=20)]

    result = ParallelExecutor(2).execute(dataflows, rendezvous(2, {"first", "second"}), grouped=False)

    assert result.succeeded == 2, result.errors


def test_a_failure_does_not_stop_later_buckets_by_default() -> None:
    dataflows = [flow("broken", group=1, order=1), flow("after", group=1, order=2), flow("other")]
    probe = Probe(statuses={"broken": "failed"})

    result = ParallelExecutor(1).execute(dataflows, probe)

    assert probe.ran() == {"broken", "after", "other"}
    assert (result.succeeded, result.failed, result.pending) == (2, 1, 0)


def test_stop_on_error_withholds_unadmitted_work() -> None:
    dataflows = [flow("ok"), flow("broken"), flow("never_1"), flow("never_2", group=3)]
    probe = Probe(statuses={"broken": "failed"})

    result = ParallelExecutor(1, stop_on_error=True).execute(dataflows, probe)

    assert probe.ran() == {"ok", "broken"}
    assert [r.status for r in result.runtimes] == ["succeeded", "failed", "pending", "pending"]
    assert [r.dataflow_name for r in result.runtimes] == ["ok", "broken", "never_1", "never_2"]
    assert (result.total, result.succeeded, result.failed, result.skipped, result.pending) == (4, 1, 1, 0, 2)
    assert result.runtimes[2].end_time is None


def test_stop_on_error_stops_later_buckets_of_a_group() -> None:
    dataflows = [flow("broken", group=1, order=1), flow("after", group=1, order=2)]

    result = ParallelExecutor(4, stop_on_error=True).execute(dataflows, Probe(statuses={"broken": "failed"}))

    assert [r.status for r in result.runtimes] == ["failed", "pending"]


def test_stop_on_error_drains_admitted_work() -> None:
    # "slow" is admitted together with "broken" and may only finish after the failure was observed
    failure_seen = threading.Event()
    dataflows = [flow("broken"), flow("slow"), flow("withheld")]

    def process(dataflow: DataFlow) -> DataFlowRuntimeInfo:
        if dataflow.name == "broken":
            raise OSError("disk on fire")
        if dataflow.name == "slow":
            assert failure_seen.wait(timeout=10)
        return finished(dataflow)

    def on_complete(runtime: DataFlowRuntimeInfo) -> None:
        if runtime.status == "failed":
            failure_seen.set()

    result = ParallelExecutor(2, stop_on_error=True).execute(dataflows, process, on_complete=on_complete)

    assert [r.status for r in result.runtimes] == ["failed", "succeeded", "pending"]
    assert (result.succeeded, result.failed, result.pending, result.running) == (1, 1, 1, 0)


def test_exceptions_become_failed_runtimes(caplog: pytest.LogCaptureFixture) -> None:
    error = ValueError("bad row in orders")
    dataflows = [flow("orders"), flow("customers")]

    def process(dataflow: DataFlow) -> DataFlowRuntimeInfo:
        if dataflow.name == "orders":
            raise error
        return finished(dataflow)

    with caplog.at_level(logging.ERROR, logger="datacoolie.orchestration"):
        result = ParallelExecutor(2).execute(dataflows, process)

    failed = result.runtimes[0]
    assert (failed.dataflow_id, failed.dataflow_name) == (dataflows[0].dataflow_id, "orders")
    assert (failed.status, failed.error_message, failed.error_type) == ("failed", "bad row in orders", "ValueError")
    assert failed.exception is error
    assert failed.end_time is not None
    assert result.errors == {str(dataflows[0].dataflow_id): "bad row in orders"}
    assert (result.succeeded, result.failed) == (1, 1)
    assert "orders" in caplog.text


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        pytest.param(None, "returned NoneType, not a DataFlowRuntimeInfo", id="none"),
        pytest.param("running", "returned status 'running'", id="unfinished"),
    ],
)
def test_malformed_returns_become_failed_runtimes(returned: str | None, message: str) -> None:
    def process(dataflow: DataFlow) -> DataFlowRuntimeInfo:
        if returned is None:
            return None  # type: ignore[return-value]
        return DataFlowRuntimeInfo(dataflow_id="x", dataflow_name="orders", status="running")

    result = ParallelExecutor(1).execute([flow("orders")], process)

    assert (result.failed, result.running) == (1, 0)
    assert message in (result.runtimes[0].error_message or "")


def test_skipped_runtimes_are_counted() -> None:
    dataflows = [flow("empty"), flow("full"), flow("broken")]
    probe = Probe(statuses={"empty": "skipped", "broken": "failed"})

    result = ParallelExecutor(2).execute(dataflows, probe)

    assert (result.total, result.succeeded, result.failed, result.skipped, result.pending) == (3, 1, 1, 1, 0)


def test_runtimes_keep_submission_order_and_on_complete_sees_completion_order() -> None:
    # "first" finishes only after the scheduler has reported "second" as complete
    second_reported = threading.Event()
    dataflows = [flow("first"), flow("second")]
    seen: list[tuple[str, str]] = []

    def process(dataflow: DataFlow) -> DataFlowRuntimeInfo:
        if dataflow.name == "first":
            assert second_reported.wait(timeout=10)
        return finished(dataflow)

    def on_complete(runtime: DataFlowRuntimeInfo) -> None:
        seen.append((runtime.dataflow_name, threading.current_thread().name))
        if runtime.dataflow_name == "second":
            second_reported.set()

    result = ParallelExecutor(2).execute(dataflows, process, on_complete=on_complete)

    assert [r.dataflow_name for r in result.runtimes] == ["first", "second"]
    main = threading.current_thread().name
    assert seen == [("second", main), ("first", main)]


def test_on_complete_errors_are_logged_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    def on_complete(runtime: DataFlowRuntimeInfo) -> None:
        raise RuntimeError("log sink is down")

    with caplog.at_level(logging.WARNING, logger="datacoolie.orchestration"):
        result = ParallelExecutor(2).execute([flow("a"), flow("b")], Probe(), on_complete=on_complete)

    assert (result.succeeded, result.failed) == (2, 0)
    assert caplog.text.count("on_complete failed") == 2
    assert "log sink is down" in caplog.text


def test_empty_list_gives_all_zeros() -> None:
    probe = Probe()

    result = ParallelExecutor(4).execute([], probe)

    assert (result.total, result.succeeded, result.failed, result.skipped, result.running, result.pending) == (
        0, 0, 0, 0, 0, 0,
    )  # fmt: skip
    assert result.runtimes == []
    assert probe.events == []


def test_keyboard_interrupt_in_a_dataflow_propagates() -> None:
    def process(dataflow: DataFlow) -> DataFlowRuntimeInfo:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ParallelExecutor(1).execute([flow("a")], process)


@pytest.mark.parametrize("max_workers", [0, -1, True])
def test_invalid_max_workers_raise(max_workers: int) -> None:
    with pytest.raises(ValueError, match="max_workers must be a positive integer"):
        ParallelExecutor(max_workers)


def test_a_worker_starts_the_next_ready_dataflow_without_waiting_for_the_scheduler() -> None:
    # on_complete runs on the scheduler's thread: "second" must start while it is still busy with "first"
    second_started = threading.Event()
    waited: list[bool] = []

    def process(dataflow: DataFlow) -> DataFlowRuntimeInfo:
        if dataflow.name == "second":
            second_started.set()
        return finished(dataflow)

    def on_complete(runtime: DataFlowRuntimeInfo) -> None:
        if runtime.dataflow_name == "first":
            waited.append(second_started.wait(timeout=10))

    result = ParallelExecutor(1).execute([flow("first"), flow("second")], process, on_complete=on_complete)

    assert waited == [True]
    assert [r.status for r in result.runtimes] == ["succeeded", "succeeded"]


def test_an_interrupt_starts_none_of_the_queued_dataflows() -> None:
    ran: list[str] = []

    def process(dataflow: DataFlow) -> DataFlowRuntimeInfo:
        ran.append(str(dataflow.name))
        if dataflow.name == "a":
            raise KeyboardInterrupt
        return finished(dataflow)

    with pytest.raises(KeyboardInterrupt):
        ParallelExecutor(1).execute([flow("a"), flow("b"), flow("c")], process)

    assert ran == ["a"]


def test_stop_on_error_withholds_queued_work_with_several_workers() -> None:
    # 2 workers queue up to 4 ready dataflows; once "broken" failed, the queued ones never start
    release = threading.Event()
    ran: list[str] = []

    def process(dataflow: DataFlow) -> DataFlowRuntimeInfo:
        ran.append(str(dataflow.name))
        if dataflow.name == "broken":
            return finished(dataflow, "failed")
        assert release.wait(timeout=10)  # "slow" holds the other worker until the failure is recorded
        return finished(dataflow)

    def on_complete(runtime: DataFlowRuntimeInfo) -> None:
        release.set()

    dataflows = [flow("broken"), flow("slow"), flow("queued_1"), flow("queued_2")]
    result = ParallelExecutor(2, stop_on_error=True).execute(dataflows, process, on_complete=on_complete)

    assert sorted(ran) == ["broken", "slow"]
    assert [r.status for r in result.runtimes] == ["failed", "succeeded", "pending", "pending"]
