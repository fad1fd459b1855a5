"""Dataflow-scoped retry with doubling, capped delays (DataCoolie O-09).

A retry re-runs the whole attempt (read with the watermark, transform, write, save). Whether an error
is worth another attempt is decided by the error tree's markers: a :class:`TerminalError` (bad
metadata, bad SQL, corrupt watermark, a transform that cannot apply) fails the same way every time, so
it is never retried; anything else may be an I/O hiccup and is.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from datacoolie_core.errors import TerminalError, TransientError
from datacoolie_core.models.run_config import DataCoolieRunConfig
from datacoolie_core.models.runtime import DataFlowRuntimeInfo

logger = logging.getLogger("datacoolie.orchestration")

MAX_DELAY_SECONDS = 60.0


def retry_delays(retry_count: int, retry_delay: float, *, max_delay: float = MAX_DELAY_SECONDS) -> list[float]:
    """The sleep before each retry: ``min(retry_delay * 2**n, max_delay)`` for ``n`` in ``0..retry_count-1``.

    Raises:
        ValueError: a negative count or delay.
    """
    if retry_count < 0 or retry_delay < 0 or max_delay < 0:
        raise ValueError(
            f"retry_count, retry_delay and max_delay must not be negative "
            f"(got {retry_count}, {retry_delay}, {max_delay}); use 0 to disable retries"
        )
    return [min(retry_delay * 2**n, max_delay) for n in range(retry_count)]


def is_retryable(error: BaseException | None) -> bool:
    """Whether another attempt can succeed after ``error``.

    ``TerminalError`` -> no; ``TransientError`` -> yes; any other ``Exception`` -> yes (unknown
    failures are given the benefit of the doubt, as DataCoolie does); ``None`` or a
    ``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt``, ``SystemExit``) -> no.
    """
    if isinstance(error, TerminalError):
        return False
    if isinstance(error, TransientError):
        return True
    return isinstance(error, Exception)


class RetryHandler:
    """Runs one dataflow's attempts until one does not fail retryably, or retries run out.

    Example:
        >>> handler = RetryHandler.from_config(config)
        >>> runtime = handler.run(lambda attempt: run_once(fresh_copy(dataflow), attempt))
    """

    def __init__(
        self,
        retry_count: int = 0,
        retry_delay: float = 5.0,
        *,
        max_delay: float = MAX_DELAY_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Args:
            retry_count: Retries after the first attempt.
            retry_delay: Base delay in seconds; doubles on each retry.
            max_delay: Cap on one delay.
            sleep: Waits between attempts (a parameter so tests and callers can avoid real sleeps).

        Raises:
            ValueError: a negative count or delay.
        """
        self.delays = retry_delays(retry_count, retry_delay, max_delay=max_delay)
        self.retry_count = retry_count
        self._sleep = sleep

    @classmethod
    def from_config(cls, config: DataCoolieRunConfig) -> RetryHandler:
        """The handler of a run configuration's ``retry_count`` / ``retry_delay``."""
        return cls(retry_count=config.retry_count, retry_delay=config.retry_delay)

    def run(self, attempt: Callable[[int], DataFlowRuntimeInfo], *, name: str | None = None) -> DataFlowRuntimeInfo:
        """Call ``attempt(0)``, ``attempt(1)``, ... until it succeeds, is skipped or fails for good.

        A returned runtime with status ``failed`` is retried when its ``.exception`` is retryable
        (a failed runtime without an exception is final). The runtime returned has
        ``retry_attempts = attempts - 1``. An exception *raised* by ``attempt`` gets the same retry
        decision; when it is final it propagates (the executor turns it into a failed runtime).
        ``KeyboardInterrupt`` and ``SystemExit`` always propagate at once.

        Args:
            attempt: One whole attempt; receives the 0-based attempt number.
            name: The dataflow's name for the retry log when ``attempt`` raises (a returned runtime
                names itself).
        """
        number = 0
        while True:
            try:
                runtime = attempt(number)
            except Exception as error:
                if not self._will_retry(number, error):
                    raise
                self._wait(number, name or "dataflow", error)
            else:
                runtime.retry_attempts = number
                if runtime.status != "failed" or not self._will_retry(number, runtime.exception):
                    return runtime
                self._wait(number, runtime.dataflow_name, runtime.error_message or runtime.exception)
            number += 1

    def _will_retry(self, number: int, error: BaseException | None) -> bool:
        return number < len(self.delays) and is_retryable(error)

    def _wait(self, number: int, name: str, error: object) -> None:
        delay = self.delays[number]
        logger.info("retry %d/%d of %s in %.1f s: %s", number + 1, self.retry_count, name, delay, error)
        self._sleep(delay)
