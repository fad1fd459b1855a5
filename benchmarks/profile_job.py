"""Where one job's time and memory go: cProfile plus RSS sampled with the stack that holds it.

    .venv/bin/python benchmarks/profile_job.py SCENARIO [--impl ours] [--workdir /tmp/datacoolie-bench]
                                               [--top 25] [--filter datacoolie_core]

Runs one job of bench.py (its data must exist: run bench.py once with the same --workdir) in this
process, after preparing its state as bench.py does. Prints the top functions by cumulative time
(restricted to ``--filter``, every thread), then the peak RSS and the innermost ``--filter`` frames
(with their caller) that were running whenever RSS was within 10 % of that peak. Polars and delta-rs allocate outside
Python's allocator, so tracemalloc cannot see their frames; sampling RSS can.
"""

from __future__ import annotations

import argparse
import collections
import sys
import threading
import time
from pathlib import Path
from types import FrameType

from dataset import prepare_state
from harness import profile_all_threads
from jobs import IMPORTS, RUNNERS

PAGE_KIB = 4


class RssSampler(threading.Thread):
    """Every ``interval`` s: this process's RSS and the innermost ``package`` frames of the other threads."""

    def __init__(self, package: str, interval: float = 0.005) -> None:
        super().__init__(daemon=True)
        self.package, self.interval = package, interval
        self.samples: list[tuple[float, list[str]]] = []
        self.done = threading.Event()

    def run(self) -> None:
        with open("/proc/self/statm") as statm:
            while not self.done.wait(self.interval):
                statm.seek(0)
                rss_mib = int(statm.read().split()[1]) * PAGE_KIB / 1024
                own = threading.get_ident()
                frames = [f for ident, f in sys._current_frames().items() if ident != own]
                self.samples.append((rss_mib, [name for f in frames for name in self._stack(f)]))

    def _stack(self, frame: FrameType | None) -> list[str]:
        """The innermost ``package`` frame of a thread's stack, and the one that called it."""
        names: list[str] = []
        while frame is not None and len(names) < 2:
            if self.package in frame.f_code.co_filename:
                names.append(f"{Path(frame.f_code.co_filename).stem}:{frame.f_code.co_name}")
            frame = frame.f_back
        return [" < ".join(names)] if names else []

    def near_peak(self, within: float = 0.9) -> tuple[float, collections.Counter[str]]:
        peak = max(rss for rss, _ in self.samples)
        counts = collections.Counter(n for rss, names in self.samples if rss >= within * peak for n in set(names))
        return peak, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario")
    parser.add_argument("--impl", default="ours", choices=sorted(RUNNERS))
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/datacoolie-bench"))
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--filter", default="datacoolie_core", help="package whose functions are listed")
    args = parser.parse_args()
    root = args.workdir.resolve()
    prepare_state(root, args.scenario)
    for module in IMPORTS[args.impl]:
        __import__(module)
    sampler = RssSampler(args.filter)
    sampler.start()
    started = time.perf_counter()
    _, stats = profile_all_threads(RUNNERS[args.impl], root, args.scenario)
    seconds = time.perf_counter() - started
    sampler.done.set()
    sampler.join()
    print(f"{args.impl} {args.scenario}: {seconds:.2f} s under cProfile (all threads)")
    stats.sort_stats("cumulative").print_stats(args.filter, args.top)
    peak, counts = sampler.near_peak()
    print(f"peak RSS {peak:.0f} MiB; innermost {args.filter} frames while RSS >= 90 % of it (samples):")
    for name, count in counts.most_common(args.top):
        print(f"  {count:6d}  {name}")


if __name__ == "__main__":
    main()
