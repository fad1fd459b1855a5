"""The CLI's one output boundary: everything written to stdout and stderr is masked.

Inside :func:`run_masked` both streams go through :func:`~datacoolie_core.redaction.mask`
(:func:`~datacoolie_core.redaction.masked_streams`), so every print, progress line, ``--json``
report, argparse message, Python last-resort log line and thread traceback is masked. An unexpected
exception is printed as a masked traceback (Python's own hook would print the raw chain) and the
command exits 1, as Python does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from datacoolie_core.redaction import format_exception, masked_streams

EXIT_UNEXPECTED = 1
"""An unexpected exception: what Python itself exits with on an uncaught one."""


def run_masked(command: Callable[[], int]) -> int:
    """``command()`` with masked output; an unexpected exception is printed masked, exit 1."""
    with masked_streams():
        try:
            return command()
        except Exception as e:
            sys.stderr.write(format_exception(e))
            return EXIT_UNEXPECTED
