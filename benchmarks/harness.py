"""Measuring child processes and summarizing rounds: shared by the benchmark scripts.

A :class:`Sample` is one fresh process: its wall time from spawn to exit (whole process, imports
included), the in-process time it reports itself, its CPU time (user + system) and its peak RSS,
both from ``wait4``'s resource usage of that one child. Ratios are taken per round (both runs of
a round are adjacent in time, so the machine's load hits them alike) and summarized as the median
with the spread (min-max) over rounds.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

METRICS = {
    "seconds": "in-process s",
    "job_cpu": "in-process CPU s",
    "wall": "whole process s",
    "cpu": "CPU s",
    "peak_rss_mib": "peak RSS MiB",
}


@dataclass(frozen=True)
class Sample:
    seconds: float
    """The job as the child times it, after its imports."""
    imports: float
    wall: float
    cpu: float
    peak_rss_mib: float
    reported: dict[str, Any] = field(default_factory=dict)
    """Everything else the child printed on its last line (e.g. bench_many's phases)."""

    def get(self, metric: str) -> float:
        value: float = self.reported[metric] if metric in self.reported else getattr(self, metric)
        return value


class ChildFailed(RuntimeError):
    def __init__(self, argv: Sequence[str], code: int, stderr: str) -> None:
        super().__init__(f"{' '.join(argv)} exited {code}:\n{stderr[-3000:]}")


def run_child(argv: Sequence[str], env: dict[str, str] | None = None) -> Sample:
    """Run ``argv`` in a fresh process; it prints ``{"seconds": ..., "imports": ...}`` as its last line.

    A small launcher process (this module as a script) starts it: on Linux a child's ``ru_maxrss``
    starts from the peak RSS of the process that forked it (it survives ``exec``), so the child must
    not be forked from this benchmark process, which holds the data it prepared.
    """
    done = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise ChildFailed(argv, done.returncode, done.stderr)
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    reported = json.loads(measured.pop("stdout").strip().splitlines()[-1])
    seconds, imports = reported.pop("seconds"), reported.pop("imports", 0.0)
    return Sample(seconds=seconds, imports=imports, **measured, reported=reported)


def launch(argv: Sequence[str]) -> int:
    """Run ``argv``, then print its wall time, CPU time, peak RSS (its own ``wait4`` usage) and stdout."""
    with tempfile.TemporaryFile("w+") as out:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, text=True)  # stderr passes through
        _, status, usage = os.wait4(process.pid, 0)  # this child's own rusage (Popen.wait would discard it)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        stdout = out.read()
    if process.returncode != 0:
        return process.returncode
    cpu = usage.ru_utime + usage.ru_stime
    print(json.dumps({"wall": wall, "cpu": cpu, "peak_rss_mib": usage.ru_maxrss / 1024, "stdout": stdout}))
    return 0


def rotated(items: Sequence[str], round_: int) -> list[str]:
    """Round ``r`` starts with item ``r mod n``: every implementation goes first, second, ... in turn."""
    shift = round_ % len(items)
    return [*items[shift:], *items[:shift]]


def spread(values: Sequence[float], digits: int = 2) -> str:
    """``median (min-max)``."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def ratios(samples: Sequence[Sample], baseline: Sequence[Sample], metric: str) -> list[float]:
    """Per-round ratios of ``metric``: ``samples[i] / baseline[i]``."""
    return [s.get(metric) / b.get(metric) for s, b in zip(samples, baseline, strict=True)]


def profile_all_threads(function: Callable[..., T], *args: Any) -> tuple[T, pstats.Stats]:
    """``function(*args)`` under cProfile in EVERY thread it starts, with the stats merged.

    Plain cProfile sees only the calling thread, which in a driver just waits on futures. Worker
    threads' times add up, so totals can exceed the wall time.
    """
    workers: list[cProfile.Profile] = []

    def start_in_new_thread(*_: Any) -> None:
        profiler = cProfile.Profile()
        workers.append(profiler)
        profiler.enable()  # replaces this hook for the rest of the thread's life

    main = cProfile.Profile()
    threading.setprofile(start_in_new_thread)
    main.enable()
    try:
        result = function(*args)
    finally:
        main.disable()
        threading.setprofile(None)
    stats = pstats.Stats(main)
    for profiler in workers:
        stats.add(profiler)
    return result, stats


def compile_sources(*packages: str) -> None:
    """Byte-compile ``packages`` (default: ours) once, as installing a wheel does.

    With an editable install and ``PYTHONDONTWRITEBYTECODE`` set (this project's machine sets it),
    no ``.pyc`` is ever written for our sources: every child process would compile about 100
    modules (~0.1 s) that an installed package, DataCoolie's or Polars', loads precompiled.
    ``compileall`` writes them anyway; stale ones are recompiled by their source's mtime.
    """
    import compileall
    import importlib.util

    for package in packages or ("datacoolie_core", "datacoolie_dagster"):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin is not None:
            compileall.compile_dir(os.path.dirname(spec.origin), quiet=1)


def environment() -> dict[str, str]:
    """The children's environment: Polars on 2 threads unless the caller chose otherwise."""
    return os.environ | {"POLARS_MAX_THREADS": os.environ.get("POLARS_MAX_THREADS", "2")}


if __name__ == "__main__":
    sys.exit(launch(sys.argv[1:]))
