"""A process that ran DataCoolie exits without a last walk of every object by the cyclic collector.

When the interpreter exits it runs one more full collection, which walks every tracked object:
after the driver's imports (pydantic and its ~30 models, Polars, deltalake) that is about 50 ms
of CPU, a tenth of a short ``datacoolie run`` or Dagster step process
(``benchmarks/bench.py``, ``docs/dev/perf-start.md``). Freezing the objects in an ``atexit`` hook
moves them out of that collection's reach.

What still happens at exit: the hooks registered before this one run after it (atexit is last
in, first out), so ``logging.shutdown`` still flushes the log handlers and ``weakref.finalize``
callbacks still run; the standard streams are flushed. What no longer happens: the collector does
not finalize the objects still alive at exit, so a ``__del__`` of such an object may not run (an
object a module global holds, an object in a garbage cycle). Python does not promise those
either ("It is not guaranteed that ``__del__()`` methods are called for objects that still exist
when the interpreter exits", the data model reference), and nothing of DataCoolie's relies on
them: commits, watermarks and journals are written, synced and closed before a run returns.
While the process runs, collections are untouched. ``tests/core/test_process_exit.py`` pins both
lists.
"""

from __future__ import annotations

import atexit
import gc

_registered = False


def skip_final_collection() -> None:
    """Register (once per process) the ``atexit`` hook that freezes the objects alive at exit."""
    global _registered
    if not _registered:
        _registered = True
        atexit.register(gc.freeze)
