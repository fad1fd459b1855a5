"""File sources on object storage: what the file reader does differently for an ``s3://`` folder.

The listing comes from the store (size and ``LastModified`` of each object, :mod:`platform.object_store`),
parquet is scanned where it lies by Polars' cloud reader, and the formats whose readers open files
themselves (csv, json lines, json, avro, excel) read a local copy fetched once per object version.
``__file_path`` stays the object's URL either way. Date-folder partitions are not supported there yet.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol, TypeVar

from datacoolie_core.errors import SourceError
from datacoolie_core.platform.object_store import ObjectInfo, fetch_object, head_object, list_objects
from datacoolie_core.platform.storage import is_object_store, storage_options_for

CLOUD_SCANNED = ("parquet",)
"""Formats Polars scans on the object store itself; the others read a local copy."""


class Listed(Protocol):
    """What the reader's file records have: a path and a modification time."""

    @property
    def path(self) -> str: ...
    @property
    def modified(self) -> datetime: ...


Info = TypeVar("Info", bound=Listed)


def list_remote_files(
    folder: str, extension: str, *, recursive: bool, label: str, make: Callable[[str, str, datetime, int], Info]
) -> list[Info]:
    """The folder's files as ``make(path, name, modified, size)``, sorted by (modified, path)."""
    try:
        objects = list_objects(folder, extension, _options(folder), recursive=recursive)
    except SourceError as e:
        raise SourceError(f"{label}: {e}") from e.__cause__
    return [make(o.path, o.name, o.modified, o.size) for o in objects]


def settle_mark() -> datetime:
    """Taken before listing: files modified at or after this second are not settled yet (:func:`settled`)."""
    return datetime.now(UTC).replace(microsecond=0)


def settled(files: list[Info], mtime_watermark: bool, mark: datetime) -> list[Info]:
    """``files`` without the remote ones of the listing's own second, when the watermark is their mtime.

    S3 keeps ``LastModified`` in whole seconds. A file landing after the listing but within the
    second of the newest file read would carry the watermark's own value and be skipped for good
    (the watermark reads ``> stored``), so that second's files are left for the next run. Only an
    mtime watermark needs it: leaving files out under a data-column watermark would let it pass
    their rows.
    """
    if not mtime_watermark:
        return files
    return [f for f in files if not (is_object_store(f.path) and f.modified >= mark)]


def readable_path(path: str, fmt: str, modified: datetime, size: int | None) -> str:
    """Where a reader opens the file: the path itself, or a local copy of a remote non-parquet object."""
    if not is_object_store(path) or fmt in CLOUD_SCANNED:
        return path
    name = path.rsplit("/", 1)[-1]
    info = ObjectInfo(path, name, modified, size or 0)
    return fetch_object(info, _options(path))


def check_object_unchanged(path: str, modified: datetime, size: int | None, label: str) -> None:
    """Raise when the object was replaced or removed since it was listed (see ``file.check_unchanged``)."""
    now = head_object(path, _options(path))
    if now is None:
        raise SourceError(f"{label}: file '{path}' disappeared during the read; run again")
    if now.modified != modified or (size is not None and now.size != size):
        raise SourceError(
            f"{label}: file '{path}' changed during the read; nothing was written, run again "
            "(land files under a temporary name and copy them in when complete)"
        )


def refuse_date_folders(folder: str, label: str) -> None:
    """Date-folder partitions walk folders; object storage has none to walk here yet."""
    if is_object_store(folder):
        raise SourceError(
            f"{label}: date_folder_partitions is not supported on object storage ('{folder}'); "
            "use the __file_modification_time watermark, or a local folder"
        )


def _options(path: str) -> dict[str, str]:
    return storage_options_for(path) or {}
