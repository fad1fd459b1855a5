"""RetryHandler: doubling capped delays, terminal errors never retried, transient ones until success."""

from __future__ import annotations

import logging
import random
import threading
from collections import Counter

import pytest

from datacoolie_core import Connection, DataCoolieRunConfig, DataFlow
from datacoolie_core.errors import (
    CommitConflictError,
    DataCoolieError,
    MetadataError,
    SourceConnectionError,
    TransformError,
    TransientError,
    WatermarkError,
)
from datacoolie_core.models.runtime import DataFlowRuntimeInfo
from datacoolie_core.orchestration.parallel_executor import ParallelExecutor
from datacoolie_core.orchestration.retry import RetryHandler, is_retryable, retry_delays
from datacoolie_core.sql import SqlExpressionError

LAKE = Connection.model_validate({"name": "lake", "format": "delta", "configure": {"base_path": "/lake"}})


def flow(name: str) -> DataFlow:
    document = {
        "name": name,
        "source": {"connection_name": "lake", "table": f"src_{name}"},
        "destination": {"connection_name": "lake", "table": f"dst_{name}"},
    }
    return DataFlow.model_validate(document, context={"connections": {"lake": LAKE}})


def runtime(status: str = "succeeded", error: BaseException | None = None) -> DataFlowRuntimeInfo:
    record = DataFlowRuntimeInfo(dataflow_id="id-orders", dataflow_name="orders")
    record.exception = error
    record.finish(status, error=error)  # type: ignore[arg-type]
    return record


class Attempts:
    """An ``attempt`` callable playing a script: each entry is returned (a runtime) or raised (an error)."""

    def __init__(self, *script: DataFlowRuntimeInfo | BaseException) -> None:
        self.script = list(script)
        self.numbers: list[int] = []

    def __call__(self, number: int) -> DataFlowRuntimeInfo:
        self.numbers.append(number)
        step = self.script[min(number, len(self.script) - 1)]
        if isinstance(step, BaseException):
            raise step
        return step


class Sleeps(list[float]):
    """The ``sleep`` parameter of RetryHandler, recording instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.mark.parametrize(
    ("count", "delay", "max_delay", "expected"),
    [
        pytest.param(0, 5.0, 60.0, [], id="no-retries"),
        pytest.param(3, 5.0, 60.0, [5.0, 10.0, 20.0], id="doubling"),
        pytest.param(6, 5.0, 60.0, [5.0, 10.0, 20.0, 40.0, 60.0, 60.0], id="capped-at-60"),
        pytest.param(4, 0.5, 60.0, [0.5, 1.0, 2.0, 4.0], id="fractional"),
        pytest.param(3, 0.0, 60.0, [0.0, 0.0, 0.0], id="zero-delay"),
        pytest.param(3, 100.0, 60.0, [60.0, 60.0, 60.0], id="base-above-cap"),
        pytest.param(4, 1.0, 3.0, [1.0, 2.0, 3.0, 3.0], id="custom-cap"),
    ],
)
def test_retry_delays(count: int, delay: float, max_delay: float, expected: list[float]) -> None:
    assert retry_delays(count, delay, max_delay=max_delay) == expected


@pytest.mark.parametrize(("count", "delay"), [pytest.param(-1, 1.0, id="count"), pytest.param(1, -1.0, id="delay")])
def test_negative_retry_settings_raise(count: int, delay: float) -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        RetryHandler(count, delay)


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        pytest.param(None, False, id="none"),
        pytest.param(MetadataError("bad key"), False, id="metadata"),
        pytest.param(WatermarkError("corrupt"), False, id="watermark"),
        pytest.param(TransformError("missing column"), False, id="transform"),
        pytest.param(SqlExpressionError("not one expression"), False, id="sql-expression"),
        pytest.param(TransientError("hiccup"), True, id="transient"),
        pytest.param(CommitConflictError("concurrent writer"), True, id="commit-conflict"),
        pytest.param(SourceConnectionError("refused"), True, id="source-connection"),
        pytest.param(DataCoolieError("unknown"), True, id="plain-datacoolie-error"),
        pytest.param(OSError("disk"), True, id="os-error"),
        pytest.param(KeyboardInterrupt(), False, id="keyboard-interrupt"),
    ],
)
def test_is_retryable(error: BaseException | None, retryable: bool) -> None:
    assert is_retryable(error) is retryable


def test_success_needs_one_attempt() -> None:
    attempts, sleeps = Attempts(runtime()), Sleeps()

    result = RetryHandler(3, 5.0, sleep=sleeps).run(attempts)

    assert (result.status, result.retry_attempts, attempts.numbers, sleeps) == ("succeeded", 0, [0], [])


def test_transient_failures_are_retried_until_success() -> None:
    glitch = TransientError("storage hiccup")
    attempts, sleeps = Attempts(runtime("failed", glitch), runtime("failed", glitch), runtime()), Sleeps()

    result = RetryHandler(5, 5.0, sleep=sleeps).run(attempts)

    assert (result.status, result.retry_attempts) == ("succeeded", 2)
    assert attempts.numbers == [0, 1, 2]
    assert sleeps == [5.0, 10.0]


def test_terminal_failure_is_not_retried() -> None:
    attempts, sleeps = Attempts(runtime("failed", TransformError("no column 'amount'"))), Sleeps()

    result = RetryHandler(5, 5.0, sleep=sleeps).run(attempts)

    assert (result.status, result.retry_attempts, attempts.numbers, sleeps) == ("failed", 0, [0], [])


def test_failed_runtime_without_exception_is_final() -> None:
    attempts = Attempts(runtime("failed"))

    assert RetryHandler(5, 0.0, sleep=Sleeps()).run(attempts).retry_attempts == 0
    assert attempts.numbers == [0]


def test_skipped_is_not_retried() -> None:
    attempts = Attempts(runtime("skipped"))

    assert RetryHandler(5, 0.0, sleep=Sleeps()).run(attempts).status == "skipped"
    assert attempts.numbers == [0]


def test_retries_run_out_and_the_last_failure_is_returned() -> None:
    last = runtime("failed", OSError("still down"))
    attempts, sleeps = Attempts(runtime("failed", OSError("down")), last), Sleeps()

    result = RetryHandler(3, 2.0, sleep=sleeps).run(attempts)

    assert result is last
    assert (result.status, result.retry_attempts, result.error_message) == ("failed", 3, "still down")
    assert attempts.numbers == [0, 1, 2, 3]
    assert sleeps == [2.0, 4.0, 8.0]


def test_raised_errors_are_retried_then_reraised() -> None:
    final = OSError("gone for good")
    attempts, sleeps = Attempts(OSError("gone"), final), Sleeps()

    with pytest.raises(OSError, match="gone for good") as raised:
        RetryHandler(2, 1.0, sleep=sleeps).run(attempts)

    assert raised.value is final
    assert (attempts.numbers, sleeps) == ([0, 1, 2], [1.0, 2.0])


def test_raised_error_then_success() -> None:
    attempts = Attempts(TransientError("blip"), runtime())

    result = RetryHandler(2, 1.0, sleep=Sleeps()).run(attempts)

    assert (result.status, result.retry_attempts) == ("succeeded", 1)


def test_raised_terminal_error_is_not_retried() -> None:
    attempts = Attempts(MetadataError("unknown key 'tabel'"))

    with pytest.raises(MetadataError):
        RetryHandler(3, 1.0, sleep=Sleeps()).run(attempts)

    assert attempts.numbers == [0]


def test_keyboard_interrupt_propagates_at_once() -> None:
    attempts = Attempts(KeyboardInterrupt())

    with pytest.raises(KeyboardInterrupt):
        RetryHandler(3, 1.0, sleep=Sleeps()).run(attempts)

    assert attempts.numbers == [0]


def test_each_retry_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    glitch = TransientError("lock held")
    attempts = Attempts(runtime("failed", glitch), runtime("failed", glitch), runtime())

    with caplog.at_level(logging.INFO, logger="datacoolie.orchestration"):
        RetryHandler(3, 5.0, sleep=Sleeps()).run(attempts)

    assert [r.getMessage() for r in caplog.records] == [
        "retry 1/3 of orders in 5.0 s: lock held",
        "retry 2/3 of orders in 10.0 s: lock held",
    ]


def test_from_config() -> None:
    handler = RetryHandler.from_config(DataCoolieRunConfig(retry_count=4, retry_delay=20))

    assert (handler.retry_count, handler.delays) == (4, [20.0, 40.0, 60.0, 60.0])


def test_random_transient_faults_converge_through_the_executor() -> None:
    # 30 % of attempts fail before their write, chosen by a seed per (dataflow, attempt) so the
    # outcome does not depend on thread timing; the write happens once, on the successful attempt
    written: list[str] = []
    lock = threading.Lock()
    handler = RetryHandler(retry_count=10, retry_delay=0, sleep=lambda _s: None)
    dataflows = [flow(f"flow_{i:03}") for i in range(200)]
    faults = Counter[str]()

    def attempt(dataflow: DataFlow, number: int) -> DataFlowRuntimeInfo:
        if random.Random(f"{dataflow.name}:{number}").random() < 0.3:
            faults[str(dataflow.name)] += 1
            raise TransientError(f"injected fault in attempt {number} of {dataflow.name}")
        with lock:
            written.append(str(dataflow.dataflow_id))
        record = DataFlowRuntimeInfo(dataflow_id=str(dataflow.dataflow_id), dataflow_name=str(dataflow.name))
        record.finish("succeeded")
        return record

    def process(dataflow: DataFlow) -> DataFlowRuntimeInfo:
        return handler.run(lambda number: attempt(dataflow, number), name=dataflow.name)

    result = ParallelExecutor(4).execute(dataflows, process, grouped=False)

    assert (result.total, result.succeeded, result.failed, result.pending) == (200, 200, 0, 0)
    assert sorted(written) == sorted(str(d.dataflow_id) for d in dataflows)
    assert [r.retry_attempts for r in result.runtimes] == [faults[str(d.name)] for d in dataflows]
    assert sum(faults.values()) > 30  # the faults really happened
