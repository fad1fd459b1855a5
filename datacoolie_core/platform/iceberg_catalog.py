"""The pyiceberg catalog of a lakehouse connection with ``format: iceberg``, and the table it names.

Connection (``connection.configure``):

* ``catalog_properties``: pyiceberg catalog properties, passed to ``pyiceberg.catalog.load_catalog``
  as written (``{"type": "sql", "uri": "sqlite:///lake/catalog.db"}``, ``{"type": "rest", "uri":
  "https://…", "credential": "…"}``). Missing keys come from pyiceberg's own configuration
  (``~/.pyiceberg.yaml``, ``PYICEBERG_CATALOG__<NAME>__<KEY>`` environment variables), so a secret
  never has to sit in the metadata file. A SQLite catalog file's folder is created.
* ``catalog`` (or the connection's top-level ``catalog``): the catalog's name; default the
  connection's name.
* ``base_path``: the warehouse folder when the properties name none, and where a new table is
  created (``base_path/<schema_name>/<table>``, as a Delta table would be): the table's location is
  then known without asking the catalog.

A table is ``<namespace>.<table>``; the namespace is the connection's ``database`` and the
dataflow's ``schema_name`` (either or both, in that order).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from datacoolie_core.errors import CommitConflictError, DataCoolieError, DestinationError, SourceError
from datacoolie_core.models.coerce import build_path
from datacoolie_core.models.connection import Connection

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

_CATALOGS: dict[tuple[str, tuple[tuple[str, str], ...]], Catalog] = {}
_LOCK = threading.Lock()


def catalog_name(connection: Connection) -> str:
    return connection.catalog or connection.name


def identifier(connection: Connection, schema_name: str | None, table: str | None, *, what: str) -> tuple[str, ...]:
    """``(namespace..., table)`` of a source or destination table.

    Raises:
        SourceError: (for a source, else :class:`DestinationError`) no table, or no namespace.
    """
    error = SourceError if what == "source" else DestinationError
    namespace = [p for p in (connection.database, schema_name) if p]
    if not table:
        raise error(f"{what} on Iceberg connection '{connection.name}': set table (the Iceberg table name)")
    if not namespace:
        raise error(
            f"{what} table '{table}' on Iceberg connection '{connection.name}' has no namespace; "
            f"set {what}.schema_name or the connection's database"
        )
    return (*namespace, table)


def table_uri(connection: Connection, schema_name: str | None, table: str | None) -> str | None:
    """Where a table lives when it is known without the catalog (``base_path/schema/table``), else ``None``."""
    base = connection.base_path
    return build_path(base, schema_name, table) if base and table else None


def get_catalog(connection: Connection) -> Catalog:
    """The connection's catalog, loaded once per process and set of properties.

    Raises:
        DestinationError: pyiceberg is not installed, or the catalog cannot be loaded.
    """
    properties = _properties(connection)
    key = (catalog_name(connection), tuple(sorted(properties.items())))
    with _LOCK:
        if key not in _CATALOGS:
            _CATALOGS[key] = _load(connection, properties)
        return _CATALOGS[key]


def _properties(connection: Connection) -> dict[str, str]:
    properties = {k: str(v) for k, v in (connection.configure.catalog_properties or {}).items()}
    if "warehouse" not in properties and connection.base_path:
        properties["warehouse"] = file_uri(connection.base_path)
    uri = properties.get("uri", "")
    if uri.startswith("sqlite:///"):  # SQLite does not create the folder of its file
        folder = os.path.dirname(uri.removeprefix("sqlite:///"))
        if folder:
            os.makedirs(folder, exist_ok=True)
    return properties


def _load(connection: Connection, properties: Mapping[str, str]) -> Catalog:
    try:
        from pyiceberg.catalog import load_catalog
    except ImportError as e:
        raise DestinationError(
            f"connection '{connection.name}' has format 'iceberg', which needs pyiceberg: "
            "pip install 'datacoolie-dagster[iceberg]'"
        ) from e
    try:
        return load_catalog(catalog_name(connection), **properties)
    except Exception as e:  # pyiceberg raises ValueError, NotInstalledError, SQLAlchemy and HTTP errors
        raise DestinationError(
            f"connection '{connection.name}': cannot load Iceberg catalog '{catalog_name(connection)}': "
            f"{type(e).__name__}: {_redacted(str(e), properties)}; check configure.catalog_properties "
            "(type, uri, warehouse) or pyiceberg's configuration"
        ) from e


def file_uri(path: str) -> str:
    """``path`` as a URI pyiceberg's FileIO accepts: a local path becomes ``file:///absolute``."""
    if urlparse(path).scheme and len(urlparse(path).scheme) > 1:  # not a Windows drive letter
        return path
    return "file://" + os.path.abspath(path)


def load_table(catalog: Catalog, ident: tuple[str, ...]) -> Table | None:
    """The table at its current snapshot, or ``None`` when the catalog has no such table."""
    from pyiceberg.exceptions import NoSuchTableError

    try:
        return catalog.load_table(ident)
    except NoSuchTableError:
        return None


def ensure_namespace(catalog: Catalog, namespace: tuple[str, ...]) -> None:
    catalog.create_namespace_if_not_exists(namespace)


@contextmanager
def translate_errors(ident: tuple[str, ...], *, source: bool = False) -> Iterator[None]:
    """pyiceberg failures as our errors; a concurrent commit is transient (retry the write)."""
    from pyiceberg.exceptions import CommitFailedException, TableAlreadyExistsError

    name = f"Iceberg table '{'.'.join(ident)}'"
    try:
        yield
    except DataCoolieError:
        raise
    except (CommitFailedException, TableAlreadyExistsError) as e:
        raise CommitConflictError(
            f"{name}: another writer committed concurrently ({e}); nothing was written, retry the write"
        ) from e
    except Exception as e:
        error = SourceError if source else DestinationError
        raise error(f"{name}: {'read' if source else 'write'} failed: {type(e).__name__}: {e}") from e


def _redacted(text: str, properties: Mapping[str, Any]) -> str:
    """``text`` without the values of :func:`catalog_secrets` of ``properties``."""
    for secret in catalog_secrets(properties):
        text = text.replace(secret, "***")
    return text


SECRET_WORDS = ("secret", "password", "token", "credential", "key")
"""A catalog property whose name holds one of these words is a secret (``credential``, ``s3.secret-access-key``)."""


def catalog_secrets(properties: Mapping[str, Any]) -> set[str]:
    """The secret values of catalog properties: secret-named ones, and the password of any URI."""
    found: set[str] = set()
    for key, value in properties.items():
        if value and any(word in key.lower() for word in SECRET_WORDS):
            found.add(str(value))
        password = urlparse(str(value)).password if isinstance(value, str) and "://" in value else None
        if password:
            found.add(password)
    return found
