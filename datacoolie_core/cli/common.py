"""Shared pieces of the CLI commands."""

from __future__ import annotations

EXIT_OK = 0
EXIT_DATAFLOW_FAILED = 1
EXIT_USAGE = 2

STATE_URL_HELP = (
    "state database instead of files, postgresql://user@host:port/db, shared by every host "
    "(default: $DATACOOLIE_STATE_URL unless --state-path is given)"
)


def state_location(args: object) -> tuple[str | None, str | None]:
    """``(state_path, state_url)`` of a command: the flags, else ``$DATACOOLIE_STATE_URL``.

    An explicit ``--state-path`` wins over the environment variable.

    Raises:
        DataCoolieError: both flags were given.
    """
    import os

    from datacoolie_core.errors import DataCoolieError
    from datacoolie_core.watermark.store import STATE_URL_VARIABLE, check_state_url, is_state_url

    path, url = getattr(args, "state_path", None), getattr(args, "state_url", None)
    if path is not None and url is not None:
        raise DataCoolieError("pass --state-path or --state-url, not both: they name two different stores")
    if path is None and url is None:
        url = os.environ.get(STATE_URL_VARIABLE) or None
    if url is not None and is_state_url(url):
        check_state_url(url)
    return path, url
