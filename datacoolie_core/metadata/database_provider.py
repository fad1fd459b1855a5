"""DatabaseProvider: metadata and watermarks in a SQLite or PostgreSQL database (DataCoolie P-11).

The provider is given a SQLAlchemy URL naming the workspace, ``postgresql://user@host/db?workspace_id=sales``
or ``sqlite:///metadata.db?workspace_id=sales`` (or ``workspace_id=`` as an argument), and reads the
workspace's rows of :mod:`.database_schema` (deleted rows left out) into one metadata document,
validated exactly like a metadata file: every issue is listed, with the table, row id and column.

Watermarks live in ``dc_framework_watermarks``. A save is one transaction that holds a database
lock for the dataflow while :class:`~datacoolie_core.watermark.manager.WatermarkManager` reads,
merges (a watermark never moves backward) and writes: PostgreSQL takes a transaction advisory lock,
SQLite ``BEGIN IMMEDIATE``, so processes on other machines sharing the database take turns too. The
write moves ``current_value`` to ``previous_value``. Unlike DataCoolie, a database that cannot be
reached is an error (:class:`WatermarkError`), never "no watermark": a run that cannot read its
watermark stops instead of reading everything again.

The commit journal and the one-writer-per-table locks live in the local state root
(``state_base_path``), as with the API provider. The URL's password is never logged: it is
registered as a secret and every message shows the URL with ``***``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from datacoolie_core.errors import MetadataError, MetadataIssue, WatermarkError
from datacoolie_core.metadata.database_schema import (
    CONNECTIONS,
    DATAFLOWS,
    SCHEMA_HINTS,
    TABLES,
    WATERMARKS,
    build_document,
)
from datacoolie_core.metadata.file_provider import FileProvider
from datacoolie_core.metadata.validation import ValidatedDocument, validate_document
from datacoolie_core.redaction import mask, register_secret

WORKSPACE_PARAMETER = "workspace_id"


class DatabaseProvider(FileProvider):
    """Serve one workspace's connections, dataflows, schema hints and watermarks from a database.

    Args:
        url: a SQLAlchemy URL; its ``workspace_id`` query parameter names the workspace.
        state_base_path: the local state root (commit journal and table-writer locks).
        workspace_id: the workspace, when the URL does not name it.

    Example:
        >>> provider = DatabaseProvider("sqlite:///meta.db?workspace_id=sales", state_base_path="state")
        >>> provider.get_dataflows(stage="landing2bronze")  # doctest: +SKIP
    """

    def __init__(
        self,
        url: str,
        *,
        state_base_path: str | os.PathLike[str] | None = None,
        state_url: str | None = None,
        workspace_id: str | None = None,
    ) -> None:
        parsed = sa.engine.make_url(url)
        register_secret(parsed.password if isinstance(parsed.password, str) else None)
        workspace = workspace_id or parsed.query.get(WORKSPACE_PARAMETER)
        parsed = parsed.difference_update_query([WORKSPACE_PARAMETER])
        self.url = parsed.render_as_string(hide_password=True)
        """The URL as shown in messages (password hidden)."""
        if parsed.drivername == "postgresql":  # SQLAlchemy 2.1 defaults to psycopg 3; psycopg2 is installed
            parsed = parsed.set(drivername="postgresql+psycopg2")
        super().__init__(self.url, state_base_path=state_base_path, state_url=state_url)
        self.config_path = None  # type: ignore[assignment]  # no file: wiring must not treat it as one
        self.watermark_base_path = None  # watermarks live in the database
        if not isinstance(workspace, str) or not workspace:
            raise MetadataError(
                f"metadata database {self.url} needs a workspace: add ?{WORKSPACE_PARAMETER}=<workspace> to the URL",
                file=self.url,
            )
        self.workspace_id = workspace
        self._sqlite = parsed.get_backend_name() == "sqlite"
        if self._sqlite and parsed.database not in (None, "", ":memory:") and not Path(parsed.database).is_file():
            raise MetadataError(f"the SQLite metadata database {parsed.database} does not exist", file=self.url)
        self._engine = _engine(parsed, sqlite=self._sqlite)
        self._held = threading.local()

    # --- metadata -----------------------------------------------------------------------------

    def read_document(self) -> ValidatedDocument:
        """Read and validate the workspace's rows (:meth:`initialize` calls this once).

        Raises:
            MetadataError: the database cannot be read (the rows' own issues are in the result).
        """
        try:
            with self._engine.connect() as conn:
                rows = [self._live_rows(conn, t) for t in (CONNECTIONS, DATAFLOWS, SCHEMA_HINTS)]
        except sa.exc.SQLAlchemyError as e:
            hint = "; create them with DatabaseProvider.create_tables()" if _missing_table(e) else ""
            raise MetadataError(f"cannot read the metadata database: {_describe(e)}{hint}", file=self.url) from e
        built = build_document(*rows)
        document = validate_document(built.document, file=self.url)
        issues = [MetadataIssue(i.path, i.message, i.severity, file=self.url) for i in built.issues]
        issues += [built.locate(i, self.url) for i in document.issues]
        return ValidatedDocument(
            document.connections, document.dataflows, document.schema_hints, tuple(issues), self.url,
            document.invalid_dataflows,
        )  # fmt: skip

    def _live_rows(self, conn: sa.Connection, table: sa.Table) -> list[dict[str, Any]]:
        """The workspace's rows not soft-deleted, in a stable order (by name; hints by table and position)."""
        order = [table.c[c] for c in ("name", "table_name", "ordinal_position", "column_name") if c in table.c]
        query = (
            sa.select(table)
            .where(table.c.workspace_id == self.workspace_id, table.c.deleted_at.is_(None))
            .order_by(*order, *table.primary_key.columns)
        )
        return [dict(row._mapping) for row in conn.execute(query)]

    def create_tables(self) -> None:
        """Create the four ``dc_framework_*`` tables (those missing)."""
        TABLES.create_all(self._engine)

    def drop_tables(self) -> None:
        TABLES.drop_all(self._engine)

    # --- watermarks ---------------------------------------------------------------------------

    def watermark_path(self, dataflow_id: str) -> str:  # type: ignore[override]  # a row, for messages
        return f"{self.url} {WATERMARKS.name}[dataflow_id={dataflow_id}]"

    def watermark_folder(self, dataflow_id: str) -> str:
        return dataflow_id  # the local journal folder

    def get_watermark(self, dataflow_id: str) -> str | None:
        """The stored text; ``None`` only when the table has no row (or a null value) for the dataflow."""
        query = sa.select(WATERMARKS.c.current_value).where(WATERMARKS.c.dataflow_id == dataflow_id)
        with self._transaction(dataflow_id) as conn:
            row = conn.execute(query).first()
        return None if row is None else row[0]

    def update_watermark(
        self, dataflow_id: str, value: str, *, job_id: str | None = None, dataflow_run_id: str | None = None
    ) -> None:
        """Store ``value`` (the old one becomes ``previous_value``), in the lock's transaction if held."""
        now = sa.func.now()
        audit = {"job_id": job_id, "dataflow_run_id": dataflow_run_id, "updated_at": now}
        update = (
            WATERMARKS.update()
            .where(WATERMARKS.c.dataflow_id == dataflow_id)
            .values(previous_value=WATERMARKS.c.current_value, current_value=value, **audit)
        )
        with self._transaction(dataflow_id) as conn:
            if conn.execute(update).rowcount:
                return
            try:
                with conn.begin_nested():  # a concurrent first save without the lock: update theirs
                    row = {"watermark_id": str(uuid.uuid4()), "dataflow_id": dataflow_id, "current_value": value}
                    conn.execute(WATERMARKS.insert().values(**row, **audit))
            except sa.exc.IntegrityError:
                conn.execute(update)

    def delete_watermark(self, dataflow_id: str) -> None:
        """Remove the stored watermark (a deliberate reset)."""
        with self._transaction(dataflow_id) as conn:
            conn.execute(WATERMARKS.delete().where(WATERMARKS.c.dataflow_id == dataflow_id))

    @contextlib.contextmanager
    def watermark_lock(self, dataflow_id: str) -> Iterator[None]:
        """One transaction holding the dataflow's database lock; reads and writes inside it use it.

        Commits when the block ends, rolls back when it raises: a save is all or nothing.
        """
        held = self._held.__dict__.setdefault("connections", {})
        try:
            conn = self._engine.connect()
        except sa.exc.SQLAlchemyError as e:
            raise _watermark_error(e, self.url, dataflow_id) from e
        try:
            with _translated(self.url, dataflow_id), conn.begin():
                if not self._sqlite:  # SQLite: BEGIN IMMEDIATE already holds the database's write lock
                    conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_lock_key(dataflow_id))))
                held[dataflow_id] = conn
                try:
                    yield
                finally:
                    del held[dataflow_id]
        finally:
            conn.close()

    @contextlib.contextmanager
    def _transaction(self, dataflow_id: str) -> Iterator[sa.Connection]:
        """The lock's connection when this thread holds it, else a transaction of its own."""
        held = self._held.__dict__.get("connections", {}).get(dataflow_id)
        if held is not None:
            with _translated(self.url, dataflow_id):
                yield held
            return
        with _translated(self.url, dataflow_id), self._engine.begin() as conn:
            yield conn

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> DatabaseProvider:
        return self


def _engine(url: sa.URL, *, sqlite: bool) -> sa.Engine:
    if not sqlite:
        return sa.create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": 10})
    engine = sa.create_engine(url, connect_args={"timeout": 30})

    # pysqlite starts transactions lazily and DEFERRED; an IMMEDIATE one takes the write lock at
    # BEGIN, so a watermark's read-merge-write excludes other processes (SQLAlchemy's documented recipe).
    @sa.event.listens_for(engine, "connect")
    def _autocommit_driver(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None

    @sa.event.listens_for(engine, "begin")
    def _begin_immediate(conn: sa.Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _lock_key(dataflow_id: str) -> int:
    """A signed 64-bit advisory lock key for the dataflow (stable across processes)."""
    digest = hashlib.sha256(f"datacoolie-watermark:{dataflow_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@contextlib.contextmanager
def _translated(url: str, dataflow_id: str) -> Iterator[None]:
    try:
        yield
    except sa.exc.SQLAlchemyError as e:
        raise _watermark_error(e, url, dataflow_id) from e


def _watermark_error(error: Exception, url: str, dataflow_id: str) -> WatermarkError:
    return WatermarkError(
        f"the metadata database {url} failed (an outage is not 'no watermark'; nothing was saved): {_describe(error)}",
        dataflow_id=dataflow_id,
    )


def _describe(error: Exception) -> str:
    original = getattr(error, "orig", None) or error
    return f"{type(original).__name__}: {mask(str(original).strip().splitlines()[0] if str(original).strip() else '')}"


def _missing_table(error: Exception) -> bool:
    text = str(getattr(error, "orig", error)).lower()
    return "no such table" in text or ("relation" in text and "does not exist" in text)
