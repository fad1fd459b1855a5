"""The ``datacoolie`` command line.

Exit codes for every command: 0 success, 1 some dataflow failed, 2 usage or metadata error
(1 also for an unexpected exception, whose traceback is printed with secrets masked),
``128 + signum`` when stopped by SIGTERM (143) or SIGINT (130) (see ``cli.signals``). Everything the
commands write goes through one masking boundary (:mod:`datacoolie_core.cli.output`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from datacoolie_core.cli.common import EXIT_DATAFLOW_FAILED, EXIT_OK, EXIT_USAGE
from datacoolie_core.cli.output import run_masked
from datacoolie_core.cli.parsers import HANDLERS, build_parser
from datacoolie_core.cli.signals import exit_code_of, stop_on_signals
from datacoolie_core.lazy import load
from datacoolie_core.process_exit import skip_final_collection

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
    args = build_parser().parse_args(argv)
    skip_final_collection()  # every command is one process: its exit needs no last full collection
    handler = load(HANDLERS[args.command])  # only the command that runs imports what it needs
    return int(handler(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
