"""SIGTERM and SIGINT stop a command promptly, at any point, with exit code ``128 + signum``.

DataCoolie's runner (contract X-15) closes the driver once and exits ``128 + signum``. We do the
same, in two steps:

1. the Python handler raises a ``KeyboardInterrupt`` (see :func:`interrupt`) in the main thread,
   so ``with`` blocks close the driver and the command returns ``128 + signum`` without a traceback;
2. a watchdog thread, woken through :func:`signal.set_wakeup_fd` (written by the C-level handler
   the instant the signal arrives), ends the process with ``os._exit(128 + signum)`` if it is still
   alive :data:`GRACE_SECONDS` later (the main thread waiting on a dataflow that does not return),
   or at once on a second signal.

Limit: a thread holding the GIL in one long C call delays both steps until the call returns;
the metadata bounds (``datacoolie_core.input_bounds``) keep such calls short, and Polars and delta-rs
release the GIL.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

GRACE_SECONDS = 3.0
"""How long a clean stop may take after the first signal before the process is ended by force."""
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def interrupt(signum: int) -> KeyboardInterrupt:
    """A ``KeyboardInterrupt`` that remembers its signal (``.signum``), so the exit code can be ``128 + signum``.

    A plain ``KeyboardInterrupt``, not a subclass: every layer that already handles Ctrl-C (the
    driver closing its session) handles SIGTERM the same way.
    """
    error = KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")
    error.signum = signum  # type: ignore[attr-defined]
    return error


def exit_code_of(error: KeyboardInterrupt) -> int:
    """``128 + signum`` of a signal's interrupt; 130 (SIGINT) for a plain ``KeyboardInterrupt``."""
    return 128 + int(getattr(error, "signum", signal.SIGINT))


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Install the handlers and the watchdog for the duration of a command (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)  # the C handler must never block on a full pipe
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    previous = {signum: signal.signal(signum, _raise) for signum in STOP_SIGNALS}
    threading.Thread(target=_watch, args=(read_fd,), name="datacoolie-signals", daemon=True).start()
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(previous_fd)
        os.close(write_fd)  # the watchdog sees end-of-file and leaves, unless a signal already came


def _raise(signum: int, frame: Any) -> None:
    raise interrupt(signum)


def _watch(read_fd: int) -> None:
    """Wait for a stop signal; then give the main thread ``GRACE_SECONDS`` before ending the process."""
    received: int | None = None
    deadline = 0.0
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while True:
            timeout = None if received is None else max(0.0, deadline - time.monotonic())
            if not select.select([pipe], [], [], timeout)[0]:
                _force_exit(received or signal.SIGTERM)  # the grace period is over
            data = pipe.read(64) or b""
            if not data:  # the command left stop_on_signals
                if received is None:
                    return
                time.sleep(max(0.0, deadline - time.monotonic()))  # shutting down: hold the deadline
                _force_exit(received)
            signums = [s for s in data if s in STOP_SIGNALS]
            if signums and received is not None:
                _force_exit(signums[-1])  # a second signal: stop now
            if signums:
                received, deadline = signums[0], time.monotonic() + GRACE_SECONDS
                name = signal.Signals(received).name
                os.write(2, f"\n{name} received: stopping (at most {GRACE_SECONDS:g}s; again to stop now)\n".encode())


def _force_exit(signum: int) -> None:
    name = signal.Signals(signum).name
    os.write(2, f"\nstopped by {name}: the command did not stop cleanly within {GRACE_SECONDS:g}s\n".encode())
    os._exit(128 + signum)
