"""FileProvider: metadata from one JSON or YAML file, watermarks in files beside it (P-01, P-07, P-10)."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from datacoolie_core.errors import DataCoolieError, WatermarkError
from datacoolie_core.metadata.loader import read_metadata_file
from datacoolie_core.metadata.selection import (
    matching_schema_hints,
    normalize_names,
    normalize_paths,
    with_shared_schema_hints,
)
from datacoolie_core.metadata.validation import ValidatedDocument, validate_document
from datacoolie_core.models.connection import Connection
from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.models.transform import SchemaHint
from datacoolie_core.watermark.file_store import WATERMARK_FILE_NAME, FileWatermarkStore
from datacoolie_core.watermark.journal import PENDING_COMMIT_FILE_NAME
from datacoolie_core.watermark.store import StateStore, is_state_url, open_state_store, redact_url

WATERMARK_FOLDER = "watermarks"
_LOG = logging.getLogger("datacoolie.metadata")


class FileProvider:
    """Serve connections, dataflows and watermarks of one DataCoolie metadata file.

    Construction touches no file; the file is read and validated once, by :meth:`initialize` or the
    first getter. A document with any error raises :class:`~datacoolie_core.errors.MetadataError`
    listing them all, so nothing runs on a partly valid file. Watermarks live at ``<root>/{stage}_{name}_{dataflow_id}/watermark_value.json``,
    DataCoolie's layout, so existing state is picked up unchanged.

    Args:
        config_path: the metadata file (``.json``, ``.yaml`` or ``.yml``).
        watermark_base_path: the watermark root itself; wins over ``state_base_path``.
        state_base_path: a state root; watermarks go to ``<state_base_path>/watermarks``.
            Without either, ``<folder of config_path>/watermarks``.
        state_url: a state database (``postgresql://…``) instead of files: watermarks, commit
            records and writer locks for several hosts (see ``docs/state-store.md``); excludes
            ``watermark_base_path`` and ``state_base_path``.
        sql_base_path: one or several roots for ``.sql`` query references.

    Example:
        >>> provider = FileProvider("metadata/pipeline.json")
        >>> for dataflow in provider.get_dataflows(stage="landing2silver"):
        ...     print(dataflow.name)
    """

    def __init__(
        self,
        config_path: str | os.PathLike[str],
        *,
        watermark_base_path: str | os.PathLike[str] | None = None,
        state_base_path: str | os.PathLike[str] | None = None,
        sql_base_path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
        state_url: str | None = None,
    ) -> None:
        self.config_path = Path(config_path)
        self.state_url = state_url
        root = _watermark_root(self.config_path, watermark_base_path, state_base_path, state_url)
        self.watermark_base_path: Path | None = root
        """The file store's watermark folder; ``None`` when the state is in a database."""
        self.sql_base_paths: tuple[Path, ...] = tuple(Path(p) for p in normalize_paths(sql_base_path))
        """SQL roots this provider's configuration declares (``.sql`` query references)."""
        self._store: StateStore = FileWatermarkStore(root) if root is not None else open_state_store(str(state_url))
        self._lock = threading.Lock()
        self._document: ValidatedDocument | None = None

    def initialize(self) -> None:
        """Read and validate the file (once; later calls do nothing).

        Getters initialize on first use; a driver calls this explicitly after its loggers are active,
        so the provider's warnings are captured. Validation warnings go to the ``datacoolie.metadata``
        logger.

        Raises:
            MetadataError: the file cannot be read or has any error (all of them are listed).
        """
        with self._lock:
            if self._document is not None:
                return
            document = validate_document(read_metadata_file(self.config_path), file=str(self.config_path))
            for issue in document.warnings:
                _LOG.warning("%s", issue)
            document.raise_on_errors()
            self._connections = {c.name: c for c in document.connections}
            self._connections_by_id = {str(c.connection_id): c for c in document.connections}
            self._dataflows = {str(d.dataflow_id): d for d in document.dataflows}
            self._attached = {
                id_: with_shared_schema_hints(d, document.schema_hints) for id_, d in self._dataflows.items()
            }
            self._document = document

    @property
    def document(self) -> ValidatedDocument:
        """The validated document (initializes on first use)."""
        self.initialize()
        assert self._document is not None
        return self._document

    # --- connections ----------------------------------------------------------------------

    def get_connections(self, active_only: bool = True) -> list[Connection]:
        self.initialize()
        return [c for c in self._connections.values() if c.is_active or not active_only]

    def get_connection_by_name(self, name: str) -> Connection | None:
        self.initialize()
        return self._connections.get(name)

    def get_connection_by_id(self, connection_id: str) -> Connection | None:
        self.initialize()
        return self._connections_by_id.get(connection_id)

    # --- dataflows ------------------------------------------------------------------------

    def get_dataflows(
        self,
        stage: str | Sequence[str] | None = None,
        active_only: bool = True,
        attach_schema_hints: bool = True,
    ) -> list[DataFlow]:
        """Dataflows in document order, filtered by stage (``"a"``, ``"a,b"``, ``["a", "b"]``).

        ``None`` or ``""`` selects every stage. Stage order implies no execution order. Shared
        ``schema_hints`` are attached unless the dataflow has its own or ``attach_schema_hints`` is off.
        """
        self.initialize()
        stages = set(normalize_names(stage))
        pool = self._attached if attach_schema_hints else self._dataflows
        return [d for d in pool.values() if (not stages or d.stage in stages) and (d.is_active or not active_only)]

    def get_dataflow_by_id(self, dataflow_id: str, attach_schema_hints: bool = True) -> DataFlow | None:
        self.initialize()
        return (self._attached if attach_schema_hints else self._dataflows).get(dataflow_id)

    def get_maintenance_dataflows(
        self, connection: str | Sequence[str] | None = None, active_only: bool = True
    ) -> list[DataFlow]:
        """Dataflows writing lakehouse tables, optionally only those of the named (or id'd) connections."""
        wanted = set(normalize_names(connection))
        return [
            d
            for d in self.get_dataflows(active_only=active_only, attach_schema_hints=False)
            if d.destination.connection.is_lakehouse
            and (not wanted or {d.destination.connection.name, str(d.destination.connection.connection_id)} & wanted)
        ]

    def get_schema_hints(self, connection_id: str, table_name: str, schema_name: str | None = None) -> list[SchemaHint]:
        """Active shared hints for a source table (see :func:`matching_schema_hints`)."""
        self.initialize()
        conn = self._connections_by_id.get(connection_id)
        if conn is None:
            return []
        return matching_schema_hints(self.document.schema_hints, conn, table_name, schema_name)

    # --- watermarks (raw JSON text, DataCoolie ADR-0004) ----------------------------------

    def watermark_folder(self, dataflow_id: str) -> str:
        """``{stage}_{name}_{dataflow_id}``, empty parts left out; the bare id for unknown dataflows."""
        self.initialize()
        dataflow = self._dataflows.get(dataflow_id)
        parts = [dataflow.stage, dataflow.name] if dataflow else []
        return "_".join(p for p in (*parts, dataflow_id) if p)

    def watermark_path(self, dataflow_id: str) -> Path:
        """The watermark file (file store only; :meth:`watermark_location` names any store's record)."""
        if not isinstance(self._store, FileWatermarkStore):
            raise WatermarkError(
                f"the state is not in files but in {self._store.location(self.watermark_folder(dataflow_id))}"
            )
        return self._store.path_for(self.watermark_folder(dataflow_id))

    def watermark_location(self, dataflow_id: str) -> str:
        """Where the watermark lives (a file path, or a table and key), for messages."""
        return self._store.location(self.watermark_folder(dataflow_id))

    def journal_location(self, dataflow_id: str) -> str:
        """Where the commit journal record lives, for messages."""
        return self._store.location(self.watermark_folder(dataflow_id), PENDING_COMMIT_FILE_NAME)

    @property
    def state_store(self) -> StateStore:
        """The store holding this provider's watermarks, commit records and writer locks."""
        return self._store

    def get_watermark(self, dataflow_id: str) -> str | None:
        return self._store.read(self.watermark_folder(dataflow_id))

    def update_watermark(
        self,
        dataflow_id: str,
        value: str,
        *,
        job_id: str | None = None,
        dataflow_run_id: str | None = None,
    ) -> None:
        """Replace the stored text atomically. ``job_id``/``dataflow_run_id`` are kept where the store keeps history."""
        self._store.write(self.watermark_folder(dataflow_id), value, job_id=job_id, dataflow_run_id=dataflow_run_id)

    def delete_watermark(self, dataflow_id: str) -> None:
        """Remove the stored watermark (a deliberate ``datacoolie state reset``)."""
        self._store.delete(self.watermark_folder(dataflow_id), WATERMARK_FILE_NAME)

    def get_pending_commit(self, dataflow_id: str) -> str | None:
        """The pending-commit record beside the watermark (see ``watermark.journal``)."""
        return self._store.read(self.watermark_folder(dataflow_id), PENDING_COMMIT_FILE_NAME)

    def set_pending_commit(self, dataflow_id: str, value: str | None, *, durable: bool = True) -> None:
        folder = self.watermark_folder(dataflow_id)
        if value is None:
            self._store.delete(folder, PENDING_COMMIT_FILE_NAME)
        else:
            self._store.write(folder, value, PENDING_COMMIT_FILE_NAME, durable=durable)

    def watermark_lock(self, dataflow_id: str) -> contextlib.AbstractContextManager[None]:
        """Exclusive access to one dataflow's watermark across threads and processes."""
        return self._store.lock(self.watermark_folder(dataflow_id))

    def destination_lock(self, destination_key: str) -> contextlib.AbstractContextManager[None]:
        """Exclusive access to one destination table across threads and processes (one writer).

        The lock lives beside the watermarks (``<watermarks>/.locks/writer-<sha256>.lock``), so every
        process sharing the state root — runs of several Dagster run workers — takes turns; with a
        state URL it is a PostgreSQL advisory lock, shared by every host.
        """
        digest = hashlib.sha256(destination_key.encode("utf-8")).hexdigest()[:32]
        return self._store.named_lock(f"writer-{digest}")

    # --- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Release the state store's connections (files hold none)."""
        self._store.close()

    def __enter__(self) -> FileProvider:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _watermark_root(config_path: Path, watermark_base_path: Any, state_base_path: Any, state_url: Any) -> Path | None:
    """The watermark folder of the file store; ``None`` with a state URL (which excludes the folders)."""
    if state_url is not None:
        given = [
            n for n, v in (("watermark_base_path", watermark_base_path), ("state_base_path", state_base_path)) if v
        ]
        if given:
            raise DataCoolieError(f"state_url and {given[0]} both say where the state lives; pass only one of them")
        if not is_state_url(state_url):
            raise DataCoolieError(
                f"state_url {redact_url(str(state_url))!r} is not a postgresql://user@host:port/database URL; "
                "a state folder is state_base_path"
            )
        return None
    if watermark_base_path is not None:
        return Path(watermark_base_path)
    if state_base_path is not None:
        return Path(state_base_path) / WATERMARK_FOLDER
    return config_path.parent / WATERMARK_FOLDER
