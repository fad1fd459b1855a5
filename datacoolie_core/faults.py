"""Named crash points for fault-injection tests.

``DATACOOLIE_CRASH_AT=<name>`` makes the process kill itself with SIGKILL when it reaches that
point, so tests can prove that a crash between two durable steps loses and duplicates nothing.
Unset (production), a crash point costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

ENV_VAR = "DATACOOLIE_CRASH_AT"

BEFORE_COMMIT = "before_commit"
"""A load strategy has planned its write and is about to commit it (scd2)."""
AFTER_COMMIT = "after_commit"
"""After the destination commit, before the watermark save."""
BETWEEN_COMMITS = "between_commits"
"""Between the two commits of a two-step load strategy."""
DURING_FILE_OVERWRITE = "during_file_overwrite"
"""After a flat-file overwrite staged its new files, before it swaps them in."""


def crash_point(name: str) -> None:
    """Die here, as a power cut would, if the environment asks for it."""
    if os.environ.get(ENV_VAR) == name:
        os.kill(os.getpid(), signal.SIGKILL)
