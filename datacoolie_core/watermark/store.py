"""State stores: where watermarks, commit records and the one-writer-per-table locks live.

Two implementations keep the same contract (:class:`StateStore`):

* :class:`~datacoolie_core.watermark.file_store.FileWatermarkStore`, the zero-setup default: files
  under a state root, ``flock`` locks; every process sharing the state root takes turns, which is
  one host (or one shared POSIX filesystem).
* :class:`~datacoolie_core.watermark.postgres_store.PostgresStateStore`, chosen by a
  ``postgresql://`` state URL: rows in PostgreSQL tables, advisory locks; every host reaching the
  database takes turns.

A record is addressed as the file store lays it out: a *folder* (one per dataflow,
``{stage}_{name}_{dataflow_id}``) and a *file name* (:data:`STATE_FILES`), so both stores hold
the same keys and ``datacoolie state migrate`` copies one into the other one to one.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

from datacoolie_core.errors import DataCoolieError

STATE_URL_VARIABLE = "DATACOOLIE_STATE_URL"
"""The environment variable the CLI and the code location read a state URL from."""
STATE_URL_SCHEMES = ("postgresql", "postgres")

WATERMARK_RECORD = "watermark_value.json"
JOURNAL_RECORD = "pending_commit.json"
STATE_FILES = (WATERMARK_RECORD, JOURNAL_RECORD)
"""The records of a dataflow's state: its watermark and its commit journal record."""


class StateStore(Protocol):
    """Opaque text per (folder, record), atomic replacement, and locks shared by every process.

    * ``read`` returns the stored text exactly as written, or ``None`` when there is none; a
      record that exists but cannot be read is a :class:`~datacoolie_core.errors.WatermarkError`,
      never ``None`` (damaged state is not a first run).
    * ``write`` replaces the text atomically (readers see the old or the new text). Inside
      ``lock(folder)`` it belongs to the lock's unit of work: the read-merge-write of a watermark
      lands whole or not at all. ``durable=False`` may trade durability for speed (a record the
      next run repairs anyway); ``job_id`` / ``dataflow_run_id`` feed an audit trail if the store has one.
    * ``lock(folder)`` excludes every other holder of the same folder's lock, across threads and
      processes, for one read-merge-write; not re-entrant.
    * ``named_lock(name)`` excludes every other holder of ``name`` (one writer per table) for as
      long as the block runs; it is released if the holding process dies.
    * ``entries`` lists every record (for ``datacoolie state migrate``).
    """

    def read(self, folder: str, file_name: str = WATERMARK_RECORD) -> str | None: ...

    def write(
        self,
        folder: str,
        text: str,
        file_name: str = WATERMARK_RECORD,
        *,
        durable: bool = True,
        job_id: str | None = None,
        dataflow_run_id: str | None = None,
    ) -> None: ...

    def delete(self, folder: str, file_name: str) -> None: ...

    def lock(self, folder: str) -> contextlib.AbstractContextManager[None]: ...

    def named_lock(self, name: str) -> contextlib.AbstractContextManager[None]: ...

    def location(self, folder: str, file_name: str = WATERMARK_RECORD) -> str:
        """Where a record lives, for messages (a file path, or table and key); never a secret."""
        ...

    def entries(self) -> Iterator[tuple[str, str, str]]:
        """Every stored record as ``(folder, file_name, text)``, sorted."""
        ...

    def close(self) -> None: ...


def is_state_url(value: object) -> bool:
    """Whether ``value`` names a state database (``postgresql://…``) rather than a state folder.

    Decided by the scheme alone, so a URL that does not parse (``[`` in its password) is still one.
    """
    if not isinstance(value, str) or "://" not in value:
        return False
    return value.split("://", 1)[0].lower() in STATE_URL_SCHEMES


_URL_RESERVED = "#/?@[]"
"""Characters a URL's userinfo must percent-encode: unencoded, they end the userinfo or the host early."""


def check_state_url(url: str) -> None:
    """Refuse a state URL whose user or password holds an unencoded ``#``, ``/``, ``?``, ``@``, ``[`` or ``]``.

    Such a URL is misread by every parser (Python's and libpq's alike: the password becomes part of
    the host, the path or the fragment), so no redaction could find its password. Its likely
    password (between the first ``:`` and the last ``@``) is registered as a secret first, so
    whatever prints the URL afterwards masks it; the error never shows the URL.

    Raises:
        DataCoolieError: naming the characters to encode and the alternatives.
    """
    rest = url.split("://", 1)[1] if "://" in url else url
    userinfo, at, _ = rest.rpartition("@")
    user, colon, password = userinfo.partition(":")
    if at and colon and password:
        from datacoolie_core.redaction import register_secret  # the registry imports nothing of ours

        register_secret(password, users=[user])
    reserved = sorted({c for c in userinfo if c in _URL_RESERVED}) if at else []
    if not reserved:
        try:
            urlsplit(url).port  # noqa: B018 - raises on a bad host or port
            return
        except ValueError:
            reserved = []
    shown = ", ".join(f"'{c}' as %{ord(c):02X}" for c in reserved) or "every reserved character"
    raise DataCoolieError(
        "the state URL does not parse: its user or password must percent-encode "
        f"{shown} (the URL is not shown, to keep its password out of the output); encode them, or leave "
        "the password out of the URL and set PGPASSWORD or ~/.pgpass"
    )


def open_state_store(location: str | os.PathLike[str]) -> StateStore:
    """The store a state location names: a ``postgresql://`` URL, or a folder (the watermark root).

    Raises:
        DataCoolieError: a URL of another scheme (``mysql://``…), which no store serves.
    """
    if is_state_url(location):
        check_state_url(str(location))
        from datacoolie_core.watermark.postgres_store import PostgresStateStore  # psycopg2 only when used

        return PostgresStateStore(str(location))
    text = os.fspath(location)
    if "://" in text:
        raise DataCoolieError(
            f"state location {redact_url(text)!r} is not supported: use a folder or a "
            "postgresql://user@host:port/database URL"
        )
    from datacoolie_core.watermark.file_store import FileWatermarkStore

    return FileWatermarkStore(text)


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and logs).

    A URL whose userinfo holds unencoded reserved characters (see :func:`check_state_url`) shows
    ``***`` for the whole userinfo; one that does not parse at all shows only its scheme.
    """
    scheme, separator, rest = url.partition("://")
    userinfo, at, after = rest.rpartition("@")
    if separator and at and any(c in userinfo for c in _URL_RESERVED):
        return f"{scheme}://***@{after}"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad host or port
    except ValueError:
        return f"{scheme}://***" if separator else "***"
    query = re.sub(r"(?i)(^|&)(password=)[^&]*", r"\1\2***", parts.query)  # libpq takes ?password= too
    if parts.password is None:
        return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address goes back in brackets
        host = f"[{host}]"
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port is not None else "")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
