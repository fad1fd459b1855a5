"""Metadata providers: where connections, dataflows and watermarks come from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datacoolie_core.lazy import lazy_exports

if TYPE_CHECKING:
    from datacoolie_core.metadata.api_provider import APIProvider
    from datacoolie_core.metadata.database_provider import DatabaseProvider
    from datacoolie_core.metadata.file_provider import FileProvider
    from datacoolie_core.metadata.loader import read_metadata_file
    from datacoolie_core.metadata.validation import ValidatedDocument, validate_document

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "APIProvider": "datacoolie_core.metadata.api_provider",
        "DatabaseProvider": "datacoolie_core.metadata.database_provider",
        "FileProvider": "datacoolie_core.metadata.file_provider",
        "read_metadata_file": "datacoolie_core.metadata.loader",
        "ValidatedDocument": "datacoolie_core.metadata.validation",
        "validate_document": "datacoolie_core.metadata.validation",
    },
)

__all__ = [
    "APIProvider",
    "DatabaseProvider",
    "FileProvider",
    "ValidatedDocument",
    "read_metadata_file",
    "validate_document",
]
