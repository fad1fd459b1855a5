"""The DataCoolie error tree.

Every error the engine raises on purpose is a :class:`DataCoolieError`. Branches name what went
wrong (metadata, watermark state, ...); the :class:`TransientError` / :class:`TerminalError` markers
tell the retry handler whether another attempt can succeed. Errors hold structured fields and build
their message in ``__init__``; they pickle (process pools, Dagster) because ``__reduce__`` replays the
constructor arguments. Their text is masked: no registered secret shows in ``str(error)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from datacoolie_core.redaction import format_exception, mask

Severity = Literal["error", "warning"]


class DataCoolieError(Exception):
    """Root of every error raised by datacoolie_core on purpose.

    Its text is masked (:func:`~datacoolie_core.redaction.mask`): a message built from a driver
    error or a path never shows a registered secret, wherever it is printed or logged.
    """

    def __str__(self) -> str:
        return mask(super().__str__())


class TransientError(DataCoolieError):
    """Marker: the same attempt may succeed if retried (I/O hiccup, lock contention)."""


class TerminalError(DataCoolieError):
    """Marker: retrying cannot help (bad metadata, bad SQL, corrupt state)."""


@dataclass(frozen=True)
class MetadataIssue:
    """One problem found in a metadata document.

    ``path`` is a JSON path into the document (``dataflows[3].source.watermark_column``, ``$`` for
    the root); ``message`` says what is wrong and, where one exists, how to fix it.
    """

    path: str
    message: str
    severity: Severity = "error"
    file: str | None = None
    subject: str | None = None
    """The object the path points into, by name (``dataflow 'orders_to_silver'``)."""

    def __str__(self) -> str:
        where = f"{self.file}: " if self.file else ""
        prefix = "warning: " if self.severity == "warning" else ""
        subject = f" ({self.subject})" if self.subject else ""
        return f"{where}{prefix}{self.path}{subject}: {self.message}"

    def to_dict(self) -> dict[str, str | None]:
        return {
            "file": self.file,
            "path": self.path,
            "subject": self.subject,
            "message": self.message,
            "severity": self.severity,
        }


class MetadataError(TerminalError):
    """A metadata document (or one object in it) is invalid.

    Carries every issue found, so one run of ``datacoolie validate`` reports them all.
    """

    def __init__(self, issues: Sequence[MetadataIssue] | str, *, file: str | None = None) -> None:
        if isinstance(issues, str):
            issues = [MetadataIssue(path="$", message=issues, file=file)]
        self.issues: tuple[MetadataIssue, ...] = tuple(issues)
        self.file = file
        errors = [i for i in self.issues if i.severity == "error"] or list(self.issues)
        head = f"{len(errors)} metadata error(s)" + (f" in {file}" if file else "")
        super().__init__(head + ":\n" + "\n".join(f"  {i}" for i in errors))

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_metadata_error, (self.issues, self.file))


def _rebuild_metadata_error(issues: tuple[MetadataIssue, ...], file: str | None) -> MetadataError:
    return MetadataError(issues, file=file)


class WatermarkError(TerminalError):
    """A stored watermark cannot be read, written or merged.

    A corrupt watermark is never treated as "first run": reading everything again would silently
    duplicate data.
    """

    def __init__(self, message: str, *, dataflow_id: str | None = None, path: str | None = None) -> None:
        self.message = message
        self.dataflow_id = dataflow_id
        self.path = path
        where = ", ".join(
            part
            for part in (
                f"dataflow {dataflow_id}" if dataflow_id else "",
                (f"at {path}" if "://" in path else f"file {path}") if path else "",  # a database row or URL
            )
            if part
        )
        super().__init__(f"{message}" + (f" ({where})" if where else ""))

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_watermark_error, (self.message, self.dataflow_id, self.path))


def _rebuild_watermark_error(message: str, dataflow_id: str | None, path: str | None) -> WatermarkError:
    return WatermarkError(message, dataflow_id=dataflow_id, path=path)


class SourceError(DataCoolieError):
    """A source cannot be read (missing path, unreadable file, database error)."""


class TransformError(TerminalError):
    """A transformer cannot apply its metadata to the data (missing column, bad literal, type clash)."""


class DestinationError(DataCoolieError):
    """A destination cannot be written."""


class CommitConflictError(DestinationError, TransientError):
    """Another writer committed to the same table concurrently; retrying can succeed."""


class SourceConnectionError(SourceError, TransientError):
    """A source's server or storage could not be reached; another attempt may succeed."""


class SourceShapeError(SourceError, TerminalError):
    """The source's columns do not fit the metadata (a file lacks a watermark column, a merge key or a
    hinted column); the same files fail the same way on every attempt, so it is not retried."""


class MaskedError(DataCoolieError):
    """Stands in for an error whose text held a secret: its type name and masked traceback only.

    Raised ``from None`` at an output boundary (a Dagster step), so nothing downstream serializes
    the original exception or its chained causes.
    """

    def __init__(self, error_type: str, traceback_text: str) -> None:
        self.error_type = error_type
        self.traceback_text = traceback_text
        last = traceback_text.rstrip().splitlines()[-1] if traceback_text.strip() else error_type
        super().__init__(f"{last}\n\nThe original traceback, secrets masked:\n{traceback_text}")

    @classmethod
    def of(cls, error: BaseException) -> MaskedError:
        return cls(type(error).__name__, format_exception(error))

    def __reduce__(self) -> tuple[object, ...]:
        return (MaskedError, (self.error_type, self.traceback_text))
