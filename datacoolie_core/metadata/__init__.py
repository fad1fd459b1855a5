"""Metadata providers: where connections, dataflows and watermarks come from."""

from datacoolie_core.metadata.file_provider import FileProvider
from datacoolie_core.metadata.loader import read_metadata_file
from datacoolie_core.metadata.validation import ValidatedDocument, validate_document

__all__ = ["FileProvider", "ValidatedDocument", "read_metadata_file", "validate_document"]
