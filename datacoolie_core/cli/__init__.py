"""The ``datacoolie`` command line.

Exit codes for every command: 0 success, 1 some dataflow failed, 2 usage or metadata error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from datacoolie_core.cli import run, state, validate
from datacoolie_core.cli.common import EXIT_DATAFLOW_FAILED, EXIT_OK, EXIT_USAGE

__all__ = ["EXIT_DATAFLOW_FAILED", "EXIT_OK", "EXIT_USAGE", "main"]


def main(argv: Sequence[str] | None = None) -> int:
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
