"""Where metadata lives, named by one string: a file, a metadata API URL or a database URL.

``--metadata``, ``DataCoolieDriver(metadata_base_path=…)``, ``datacoolie validate`` and the Dagster
code location accept the same three forms:

* a file (``.json``, ``.yaml``, ``.yml``, ``.xlsx``), or a folder holding one: :class:`FileProvider`;
* ``https://host/…/workspaces/<workspace>`` (or ``http://``): :class:`APIProvider`;
* ``sqlite:///metadata.db?workspace_id=<ws>`` or ``postgresql://user@host/db?workspace_id=<ws>``:
  :class:`DatabaseProvider`.

The API and database providers keep their commit journal and locks in a local state root, so they
need ``state_base_path``. Their modules (httpx, SQLAlchemy) are imported only when such a URL is used.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from datacoolie_core.errors import DataCoolieError
from datacoolie_core.metadata.validation import ValidatedDocument

if TYPE_CHECKING:
    from datacoolie_core.metadata.api_provider import APIProvider
    from datacoolie_core.metadata.database_provider import DatabaseProvider

API_SCHEMES = ("http://", "https://")
DATABASE_SCHEMES = ("sqlite", "postgresql")


def is_api_url(value: object) -> bool:
    return isinstance(value, str) and value.startswith(API_SCHEMES)


def is_database_url(value: object) -> bool:
    """``sqlite:///…``, ``postgresql://…``, ``postgresql+psycopg2://…``."""
    if not isinstance(value, str) or "://" not in value:
        return False
    return value.split("://", 1)[0].split("+", 1)[0] in DATABASE_SCHEMES


def is_metadata_url(value: object) -> bool:
    """Whether a metadata location names an API or a database rather than a file."""
    return is_api_url(value) or is_database_url(value)


def url_provider(
    url: str, state_base_path: str | os.PathLike[str] | None, state_url: str | None = None
) -> APIProvider | DatabaseProvider:
    """The provider of a metadata API or database URL; its locks and commit journal need a state root or
    a state database (``state_url``).

    Raises:
        DataCoolieError: neither ``state_base_path`` nor ``state_url``.
    """
    if state_base_path is None and state_url is None:
        kind = "an API" if is_api_url(url) else "a database"
        raise DataCoolieError(
            f"metadata from {kind} ({_shown(url)}) needs a state path (--state-path / state_base_path) or a "
            "state URL (--state-url / state_url): locks and the commit journal are kept there"
        )
    if is_api_url(url):
        from datacoolie_core.metadata.api_provider import APIProvider  # httpx only when an API is used

        return APIProvider(url, state_base_path=state_base_path, state_url=state_url)
    from datacoolie_core.metadata.database_provider import DatabaseProvider  # SQLAlchemy only for a database

    return DatabaseProvider(url, state_base_path=state_base_path, state_url=state_url)


def validate_location(location: str) -> ValidatedDocument:
    """Every issue of the metadata at ``location`` (a file or a URL), without running anything.

    Raises:
        MetadataError: the metadata cannot be read at all (file missing, API or database down).
    """
    if not is_metadata_url(location):
        from datacoolie_core.metadata.loader import load_document

        return load_document(location)
    provider = url_provider(location, Path(tempfile.gettempdir()) / "datacoolie-validate")
    try:
        return provider.read_document()
    finally:
        provider.close()


def _shown(url: str) -> str:
    """The URL without its password, for messages."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at or ":" not in credentials:
        return url
    return f"{scheme}{sep}{credentials.split(':', 1)[0]}:***@{host}"
