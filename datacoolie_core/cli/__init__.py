"""The ``datacoolie`` command line.

Exit codes for every command: 0 success, 1 some dataflow failed, 2 usage or metadata error
(1 also for an unexpected exception, whose traceback is printed with secrets masked),
``128 + signum`` when stopped by SIGTERM (143) or SIGINT (130) (see ``cli.signals``). Everything the
commands write goes through one masking boundary (:mod:`datacoolie_core.cli.output`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from datacoolie_core.cli import run, state, validate
from datacoolie_core.cli.common import EXIT_DATAFLOW_FAILED, EXIT_OK, EXIT_USAGE
from datacoolie_core.cli.output import run_masked
from datacoolie_core.cli.signals import exit_code_of, stop_on_signals

__all__ = ["EXIT_DATAFLOW_FAILED", "EXIT_OK", "EXIT_USAGE", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    return run_masked(lambda: _stoppable(argv))


def _stoppable(argv: Sequence[str] | None) -> int:
    with stop_on_signals():
        try:
            return _main(argv)
        except KeyboardInterrupt as e:  # SIGINT / SIGTERM anywhere: no traceback, 128 + signum
            print(f"\ninterrupted ({e or 'stopped by SIGINT'})", file=sys.stderr)
            return exit_code_of(e)


def _main(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(
        prog="datacoolie",
        description="Metadata-driven ETL on Polars + Delta Lake, compatible with DataCoolie metadata.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    validate.add_parser(commands)
    run.add_parsers(commands)
    state.add_parser(commands)
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
