"""State in PostgreSQL: the store for several hosts (``--state-url postgresql://…``).

Same contract as the file store (:class:`~datacoolie_core.watermark.store.StateStore`), in tables
of the schema ``datacoolie_state`` (created on first use when the user may, else by a DBA from
``docs/state-store.md``):

* ``watermarks`` — one row per dataflow folder: the serialized watermark (``text``, stored and
  returned byte for byte; never ``jsonb``, which would reorder keys and reformat numbers), plus
  the job and dataflow run that saved it; ``watermark_history`` keeps every save (run bookkeeping).
* ``commit_journal`` — one row per dataflow folder: its pending/settled commit record.

``lock(folder)`` opens a transaction holding ``pg_advisory_xact_lock``; every read and write of
that folder inside the block, in the same thread, runs in that transaction, so a watermark's
read-merge-write is one transaction under one lock, committed when the block ends (rolled back
on an error). ``named_lock(name)`` (one writer per table) is a session ``pg_advisory_lock`` on a
connection used by nothing else while held: PostgreSQL releases it when that connection ends,
also when the holding process is killed.

Plain psycopg2, not SQLAlchemy: it is already a pinned dependency (PostgreSQL sources,
dagster-postgres), the store issues a handful of fixed statements, and an advisory lock needs
exact control of which connection and transaction it lives on.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg2
import psycopg2.errors
import psycopg2.extensions
from psycopg2 import sql

from datacoolie_core.errors import WatermarkError
from datacoolie_core.redaction import register_secret
from datacoolie_core.watermark.file_store import _check_folder
from datacoolie_core.watermark.serializer import STATE_FIX
from datacoolie_core.watermark.store import JOURNAL_RECORD, WATERMARK_RECORD, check_state_url, redact_url

DEFAULT_SCHEMA = "datacoolie_state"
TABLES = {WATERMARK_RECORD: "watermarks", JOURNAL_RECORD: "commit_journal"}
"""Record (the file store's file name) -> its table."""
HISTORY_TABLE = "watermark_history"
APPLICATION_NAME = "datacoolie-state"
"""Shown in ``pg_stat_activity``, so a held writer lock can be traced to its holder."""
MAX_IDLE_CONNECTIONS = 8
LOCK_WAIT_SLICE = "1s"
"""A lock wait is cut in slices this long, so a waiting thread still takes signals."""

_DDL = """
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.watermarks (
    state_key text PRIMARY KEY,
    value text NOT NULL,
    job_id text,
    dataflow_run_id text,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {schema}.commit_journal (
    state_key text PRIMARY KEY,
    value text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {schema}.watermark_history (
    id bigserial PRIMARY KEY,
    state_key text NOT NULL,
    value text NOT NULL,
    job_id text,
    dataflow_run_id text,
    saved_at timestamptz NOT NULL DEFAULT now()
);
"""


class PostgresStateStore:
    """Watermarks, commit records and writer locks in one PostgreSQL database.

    Args:
        url: ``postgresql://user[:password]@host[:port]/database`` (libpq URL; a password may also
            come from ``PGPASSWORD`` or ``~/.pgpass``). The password is registered as a secret and
            never appears in messages.
        schema: the schema holding the tables.

    Example:
        >>> store = PostgresStateStore("postgresql://etl@db.internal/etl_state")  # doctest: +SKIP
    """

    def __init__(self, url: str, *, schema: str = DEFAULT_SCHEMA) -> None:
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
            raise ValueError(f"invalid state schema {schema!r}: lower-case letters, digits and '_'")
        check_state_url(url)
        parts = urlsplit(url)
        for password in [parts.password, *parse_qs(parts.query).get("password", [])]:
            register_secret(password, users=[parts.username])
        self.url = url
        self.schema = schema
        self.described = redact_url(url)
        """The URL without its password: what messages show."""
        self._pool = _Pool(url, self.described)
        self._ready = False
        self._ready_guard = threading.Lock()
        self._bound = threading.local()  # folder -> the connection of this thread's open lock(folder)

    # --- records ------------------------------------------------------------------------------

    def read(self, folder: str, file_name: str = WATERMARK_RECORD) -> str | None:
        table = self._table(file_name)
        query = sql.SQL("SELECT value FROM {} WHERE state_key = %s").format(table)
        rows = self._run(folder, query, (_check_folder(folder),), fetch=True, where=self.location(folder, file_name))
        if not rows:
            return None
        value = rows[0][0]
        if not isinstance(value, str):  # NULL: tables made by hand without the NOT NULL of the DDL
            raise WatermarkError(
                f"state row is damaged (value is {value!r}). It is NOT treated as a first run. Fix: {STATE_FIX}",
                path=self.location(folder, file_name),
            )
        return value

    def write(
        self,
        folder: str,
        text: str,
        file_name: str = WATERMARK_RECORD,
        *,
        durable: bool = True,
        job_id: str | None = None,
        dataflow_run_id: str | None = None,
    ) -> None:
        """Upsert the record (one transaction, or the open ``lock(folder)``'s); a watermark save is also kept in history.

        ``durable=False`` commits with ``synchronous_commit = off`` (a server crash may lose it).
        """
        table, key = self._table(file_name), _check_folder(folder)
        statements: list[tuple[sql.Composable, tuple[Any, ...]]] = []
        if not durable:
            statements.append((sql.SQL("SET LOCAL synchronous_commit = off"), ()))
        if file_name == WATERMARK_RECORD:
            statements += [
                (_UPSERT_WATERMARK.format(table), (key, text, job_id, dataflow_run_id)),
                (_INSERT_HISTORY.format(self._history()), (key, text, job_id, dataflow_run_id)),
            ]
        else:
            statements.append((_UPSERT_RECORD.format(table), (key, text)))
        self._run_all(folder, statements, where=self.location(folder, file_name))

    def delete(self, folder: str, file_name: str) -> None:
        query = sql.SQL("DELETE FROM {} WHERE state_key = %s").format(self._table(file_name))
        self._run(folder, query, (_check_folder(folder),), where=self.location(folder, file_name))

    def location(self, folder: str, file_name: str = WATERMARK_RECORD) -> str:
        """``<url without password> <schema>.<table> state_key='<folder>'``: what a damaged-row error names."""
        return f"{self.described} {self.schema}.{TABLES.get(file_name, file_name)} state_key={folder!r}"

    def entries(self) -> Iterator[tuple[str, str, str]]:
        """Every record as ``(folder, file_name, text)``, sorted like the file store's."""
        found: list[tuple[str, str, str]] = []
        for file_name in TABLES:
            query = sql.SQL("SELECT state_key, value FROM {}").format(self._table(file_name))
            for key, value in self._run(None, query, (), fetch=True, where=f"{self.described} {self.schema}"):
                if not isinstance(value, str):
                    raise WatermarkError(
                        f"state row is damaged (value is {value!r})", path=self.location(key, file_name)
                    )
                found.append((key, file_name, value))
        yield from sorted(found)

    # --- locks --------------------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self, folder: str) -> Iterator[None]:
        """One transaction holding the folder's advisory lock; reads and writes of the folder join it."""
        key, bound = _lock_key("watermark", _check_folder(folder)), self._bindings()
        if folder in bound:
            raise WatermarkError("the watermark lock is not re-entrant", path=self.location(folder))
        self._ensure_tables()
        connection = self._pool.get()
        committed = False
        try:
            with _translated(self.location(folder)):
                _wait_for_lock(connection, "SELECT pg_advisory_xact_lock(%s)", key)
            bound[folder] = connection
            yield
            with _translated(self.location(folder)):
                connection.commit()
            committed = True
        finally:
            bound.pop(folder, None)
            self._pool.put(connection, rollback=not committed)

    @contextlib.contextmanager
    def named_lock(self, name: str) -> Iterator[None]:
        """Hold the session advisory lock ``name`` on a connection nothing else uses meanwhile.

        Waits while another session holds it (as ``flock`` does); freed by PostgreSQL when the
        holding connection ends, so a killed holder never leaves the table locked.
        """
        key, where = _lock_key("named", _check_folder(name)), f"{self.described} advisory lock {name!r}"
        connection = self._pool.get()
        locked = False
        try:
            with _translated(where):
                _wait_for_lock(connection, "SELECT pg_advisory_lock(%s)", key)
                connection.commit()  # the session lock outlives the transaction; the connection idles
                locked = True
            yield
        finally:
            self._unlock(connection, key, where, locked=locked)

    def _unlock(self, connection: Any, key: int, where: str, *, locked: bool) -> None:
        if not locked:
            self._pool.put(connection, rollback=True)
            return
        try:
            with _translated(where), connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", (key,))
                connection.commit()
        except WatermarkError:
            self._pool.discard(connection)  # closing the session frees the lock as surely
            raise
        self._pool.put(connection)

    def close(self) -> None:
        """Close the idle connections (a held lock's connection closes when its block ends)."""
        self._pool.close()

    # --- plumbing -----------------------------------------------------------------------------

    def _table(self, file_name: str) -> sql.Composed:
        table = TABLES.get(file_name)
        if table is None:
            raise WatermarkError(f"the PostgreSQL state store keeps {', '.join(TABLES)}; {file_name!r} is none of them")
        return sql.SQL("{}.{}").format(sql.Identifier(self.schema), sql.Identifier(table))

    def _history(self) -> sql.Composed:
        return sql.SQL("{}.{}").format(sql.Identifier(self.schema), sql.Identifier(HISTORY_TABLE))

    def _bindings(self) -> dict[str, Any]:
        bound: dict[str, Any] | None = getattr(self._bound, "folders", None)
        if bound is None:
            bound = self._bound.folders = {}
        return bound

    def _run(
        self, folder: str | None, query: sql.Composable, params: tuple[Any, ...], *, where: str, fetch: bool = False
    ) -> list[tuple[Any, ...]]:
        return self._run_all(folder, [(query, params)], where=where, fetch=fetch)

    def _run_all(
        self,
        folder: str | None,
        statements: list[tuple[sql.Composable, tuple[Any, ...]]],
        *,
        where: str,
        fetch: bool = False,
    ) -> list[tuple[Any, ...]]:
        """Run ``statements`` in the folder's open lock transaction, else in a transaction of their own."""
        held = self._bindings().get(folder) if folder is not None else None
        if held is not None:
            return _execute(held, statements, where, fetch=fetch)
        self._ensure_tables()
        connection = self._pool.get()
        ok = False
        try:
            rows = _execute(connection, statements, where, fetch=fetch)
            with _translated(where):
                connection.commit()
            ok = True
            return rows
        finally:
            self._pool.put(connection, rollback=not ok)

    def _ensure_tables(self) -> None:
        """Create the schema and tables once per store, under a lock (concurrent DDL would collide)."""
        if self._ready:
            return
        with self._ready_guard:
            if self._ready:
                return
            connection = self._pool.get()
            ok = False
            try:
                with _translated(f"{self.described} {self.schema}"), connection.cursor() as cursor:
                    names = [f"{self.schema}.{t}" for t in (*TABLES.values(), HISTORY_TABLE)]
                    cursor.execute("SELECT " + ", ".join(["to_regclass(%s)"] * len(names)), names)
                    row = cursor.fetchone()
                    if row is None or None in row:  # only then: a user without CREATE works on tables a DBA made
                        cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key("schema", self.schema),))
                        cursor.execute(sql.SQL(_DDL).format(schema=sql.Identifier(self.schema)))
                    connection.commit()
                ok = True
            finally:
                self._pool.put(connection, rollback=not ok)
            self._ready = True


_UPSERT_WATERMARK = sql.SQL(
    "INSERT INTO {} (state_key, value, job_id, dataflow_run_id, updated_at) VALUES (%s, %s, %s, %s, now()) "
    "ON CONFLICT (state_key) DO UPDATE SET value = EXCLUDED.value, job_id = EXCLUDED.job_id, "
    "dataflow_run_id = EXCLUDED.dataflow_run_id, updated_at = EXCLUDED.updated_at"
)
_UPSERT_RECORD = sql.SQL(
    "INSERT INTO {} (state_key, value, updated_at) VALUES (%s, %s, now()) "
    "ON CONFLICT (state_key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at"
)
_INSERT_HISTORY = sql.SQL("INSERT INTO {} (state_key, value, job_id, dataflow_run_id) VALUES (%s, %s, %s, %s)")


def _execute(
    connection: Any, statements: list[tuple[sql.Composable, tuple[Any, ...]]], where: str, *, fetch: bool
) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    with _translated(where), connection.cursor() as cursor:
        for query, params in statements:
            cursor.execute(query, params)
        if fetch:
            rows = list(cursor.fetchall())
    return rows


def _wait_for_lock(connection: Any, statement: str, key: int) -> None:
    """Take an advisory lock, waiting as long as it takes, in slices of :data:`LOCK_WAIT_SLICE`.

    One blocking wait inside libpq cannot be interrupted; between slices the waiting thread takes
    signals (Ctrl-C, a Dagster run termination), as a thread waiting on ``flock`` does. The lock is
    taken in a transaction that stays open (``lock_timeout`` back to its default for the rest of it).
    """
    while True:
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT_SLICE}'")
                cursor.execute(statement, (key,))
                cursor.execute("SET LOCAL lock_timeout TO DEFAULT")
            return
        except psycopg2.errors.LockNotAvailable:
            connection.rollback()  # still held by another session: queue again


def _lock_key(kind: str, name: str) -> int:
    """A stable signed 64-bit advisory lock key; the kind keeps watermark and writer locks apart."""
    digest = hashlib.sha256(f"datacoolie/{kind}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@contextlib.contextmanager
def _translated(where: str) -> Iterator[None]:
    """psycopg2 errors become :class:`WatermarkError` naming the store (never its password)."""
    try:
        yield
    except psycopg2.Error as e:
        detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise WatermarkError(f"PostgreSQL state store failed: {detail}", path=where) from e


class _Pool:
    """Idle connections for reuse; a connection is used by one thread at a time.

    A forked child drops its parent's idle connections without closing them: they share the
    parent's sockets, and closing would end the parent's sessions and free the locks they hold.
    psycopg2 closes a garbage-collected connection only in the process that opened it (2.9.13,
    ``test_a_forked_child_leaves_its_parents_sessions_alone``).
    """

    def __init__(self, url: str, described: str) -> None:
        self._url, self._described = url, described
        self._idle: list[Any] = []
        self._guard = threading.Lock()
        self._pid = os.getpid()

    def get(self) -> Any:
        with self._guard:
            if self._pid != os.getpid():
                self._idle, self._pid = [], os.getpid()
            if self._idle:
                return self._idle.pop()
        with _translated(self._described):
            return psycopg2.connect(self._url, application_name=APPLICATION_NAME, client_encoding="UTF8")

    def put(self, connection: Any, *, rollback: bool = False) -> None:
        if rollback and not connection.closed:
            try:
                connection.rollback()
            except psycopg2.Error:
                self.discard(connection)
                return
        idle = psycopg2.extensions.TRANSACTION_STATUS_IDLE
        usable = not connection.closed and connection.get_transaction_status() == idle
        with self._guard:
            if self._pid != os.getpid():
                return  # opened before a fork: the parent's session, dropped unclosed (see the class)
            if usable and len(self._idle) < MAX_IDLE_CONNECTIONS:
                self._idle.append(connection)
                return
        self.discard(connection)

    def discard(self, connection: Any) -> None:
        with contextlib.suppress(psycopg2.Error):
            connection.close()

    def close(self) -> None:
        with self._guard:
            idle, self._idle = self._idle, []
        for connection in idle:
            self.discard(connection)
