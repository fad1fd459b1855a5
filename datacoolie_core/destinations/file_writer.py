"""The flat-file writer: parquet, csv, json, jsonl and avro folders (D-14, F-20).

Load types are ``append`` and ``overwrite`` only. Writes are staged in a hidden work folder beside the
target (``<parent>/.<table>.datacoolie/``) and committed by a rename:

- append adds NEW files named ``part-<app hash>-<sequence:010d>-<uuid8>.<ext>`` (never overwriting an
  earlier file, even within the same second); the sequence in the name makes the marker visible
  exactly when the data is, so :meth:`FileWriter.committed_sequence` is the largest one found.
- overwrite stages the complete new folder, then swaps it in (an atomic exchange where the OS has
  one, else "rename the old aside, rename the new in, delete the old").

A commit record written atomically after staging is the commit point. A crash before it leaves the
old content and a staging folder that the next write (or ``committed_sequence``) deletes; a crash
after it is rolled forward by that same repair. The hidden ``.datacoolie-sequences`` ledger inside
an overwritten folder carries the sequences of the app ids whose files the overwrite replaced (fan-in).
Writers of one folder are serialised with a file lock; one host at a time is assumed.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import hashlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import polars as pl

from datacoolie_core import faults
from datacoolie_core.destinations.base import CommitMarker, ReplaceWindow, next_marker
from datacoolie_core.destinations.delta_writer import resolve_columns, table_path
from datacoolie_core.errors import DestinationError
from datacoolie_core.models.dataflow import Destination
from datacoolie_core.models.runtime import DestinationRuntimeInfo

FILE_LOAD_TYPES = ("append", "overwrite")
LEDGER = ".datacoolie-sequences"
_PART = re.compile(r"^part-(?P<app>[0-9a-f]{12})-(?P<seq>\d{10})-[0-9a-f]{8}\.")
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_UNPARTITIONABLE = ("json", "avro")
_SINKS: dict[str, Callable[[pl.DataFrame, Path, str], None]] = {
    "parquet": lambda df, path, _: df.write_parquet(path),
    "csv": lambda df, path, _: df.write_csv(path),
    "json": lambda df, path, _: df.write_json(path),
    "jsonl": lambda df, path, _: df.write_ndjson(path),
    "avro": lambda df, path, name: _avro_ready(df).write_avro(path, name=name),
}


class FileWriter:
    """Writes one flat-file format; see :class:`~datacoolie_core.destinations.base.Writer`."""

    def __init__(self, fmt: str) -> None:
        self.format = fmt

    def committed_sequence(self, destination: Destination, app_id: str) -> int | None:
        root = Path(table_path(destination))
        with _translate_errors(destination, root):
            if _work_dir(root).is_dir():  # only a writer leaves work to repair; a plain query creates nothing
                with _locked(root):
                    _repair(root)
            return _scan_sequences(root).get(_app_hash(app_id))

    def write(
        self,
        frame: pl.DataFrame,
        destination: Destination,
        *,
        marker: CommitMarker,
        window: ReplaceWindow | None = None,
    ) -> DestinationRuntimeInfo:
        self._check(destination, window)
        root = Path(table_path(destination))
        partitions = resolve_columns(
            frame, [p.column for p in destination.partition_columns], what="partition", table=destination.table
        )
        with _translate_errors(destination, root), _locked(root):
            _repair(root)
            done = _scan_sequences(root).get(_app_hash(marker.app_id))
            marker = next_marker(marker, done)
            assert marker.sequence is not None
            if done is not None and done >= marker.sequence:
                return DestinationRuntimeInfo(
                    operation_type=destination.load_type, commit_sequence=done, recovered=True
                )
            target = root / _date_folder(destination) if not partitions else root
            return self._write_new(frame, destination, target, partitions, marker)

    def _write_new(
        self,
        frame: pl.DataFrame,
        destination: Destination,
        target: Path,
        partitions: tuple[str, ...],
        marker: CommitMarker,
    ) -> DestinationRuntimeInfo:
        """Stage the batch, then commit it as an append or as an overwrite of ``target``."""
        txn = _Txn(Path(table_path(destination)), uuid.uuid4().hex[:16])
        sizes = self._stage(frame, txn, partitions, marker, destination.table)
        if destination.load_type == "append":
            removed = _commit(txn, "append", target)
        else:
            sequences = _scan_sequences(target) | {_app_hash(marker.app_id): int(marker.sequence or 0)}
            _write_ledger(txn.stage, txn.id, sequences)
            faults.crash_point(faults.DURING_FILE_OVERWRITE)
            removed = _commit(txn, "overwrite", target)
        return DestinationRuntimeInfo(
            operation_type=destination.load_type,
            rows_written=frame.height,
            rows_inserted=frame.height,
            files_added=len(sizes),
            bytes_added=sum(sizes),
            files_removed=removed[0],
            bytes_removed=removed[1],
            commit_sequence=marker.sequence,
        )

    def _check(self, destination: Destination, window: ReplaceWindow | None) -> None:
        where = f"destination table '{destination.table}' ({self.format})"
        if destination.load_type not in FILE_LOAD_TYPES:
            raise DestinationError(
                f"{where}: load_type '{destination.load_type}' is not supported for files; "
                f"allowed: {', '.join(FILE_LOAD_TYPES)} (full_load = overwrite). Use a delta destination to merge"
            )
        if window is not None:
            raise DestinationError(f"{where}: replace_by_watermark needs a delta destination with merge_overwrite")
        if destination.partition_columns and self.format in _UNPARTITIONABLE:
            raise DestinationError(
                f"{where}: partitioning not supported for {self.format}; remove partition_columns or use "
                "parquet, csv or jsonl"
            )

    def _stage(
        self, frame: pl.DataFrame, txn: _Txn, partitions: tuple[str, ...], marker: CommitMarker, name: str
    ) -> list[int]:
        """Write the batch under the staging folder (hive ``col=value/`` folders), synced; the file sizes."""
        groups = (
            frame.partition_by(list(partitions), as_dict=True, include_key=False, maintain_order=True)
            if partitions
            else {(): frame}
        )
        sizes = []
        for values, part in groups.items():
            folder = txn.stage.joinpath(*(_hive(c, v) for c, v in zip(partitions, values, strict=True)))
            folder.mkdir(parents=True, exist_ok=True)
            file = (
                folder / f"part-{_app_hash(marker.app_id)}-{marker.sequence:010d}-{uuid.uuid4().hex[:8]}.{self.format}"
            )
            _SINKS[self.format](part, file, name)
            _fsync(file)
            sizes.append(file.stat().st_size)
        return sizes


class _Txn:
    """One staged write: ``<work>/<id>/`` (staged tree), ``<id>.json`` (commit record), ``<id>.old/``."""

    def __init__(self, root: Path, txn_id: str) -> None:
        self.id = txn_id
        self.work = _work_dir(root)
        self.stage = self.work / txn_id
        self.record = self.work / f"{txn_id}.json"
        self.old = self.work / f"{txn_id}.old"


def _commit(txn: _Txn, kind: str, target: Path) -> tuple[int, int]:
    """Write the commit record (the commit point), then apply it. Returns (files, bytes) replaced."""
    removed = (0, 0)
    if kind == "overwrite" and target.exists():
        old_files = _data_files(target)
        removed = (len(old_files), sum(f.stat().st_size for f in old_files))
    tmp = txn.work / f".{txn.id}.json.tmp"
    tmp.write_text(json.dumps({"kind": kind, "target": str(target)}), encoding="utf-8")
    _fsync(tmp)
    os.replace(tmp, txn.record)
    _fsync(txn.work)
    _apply(txn, kind, target)
    return removed


def _apply(txn: _Txn, kind: str, target: Path) -> None:
    """Roll a committed transaction forward; safe to repeat after a crash at any step."""
    if kind == "append" and txn.stage.exists():
        for file in _data_files(txn.stage):
            destination = target / file.relative_to(txn.stage)
            destination.parent.mkdir(parents=True, exist_ok=True)
            os.replace(file, destination)
        shutil.rmtree(txn.stage)
    elif kind == "overwrite" and _ledger(target).get("txn") != txn.id and txn.stage.exists():
        _swap_in(txn.stage, target, txn.old)
    shutil.rmtree(txn.stage, ignore_errors=True)  # after an exchange it holds the old content
    shutil.rmtree(txn.old, ignore_errors=True)
    if target.parent.exists():
        _fsync(target.parent)
    txn.record.unlink(missing_ok=True)


def _swap_in(stage: Path, target: Path, old: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        os.rename(stage, target)
    elif not _exchange(stage, target):
        os.rename(target, old)
        os.rename(stage, target)


def _repair(root: Path) -> None:
    """Finish committed transactions and discard uncommitted staging left by a crashed writer."""
    work = _work_dir(root)
    if not work.is_dir():
        return
    for entry in work.iterdir():
        if entry.name.startswith(".") and entry.name.endswith(".tmp"):
            entry.unlink()
        elif entry.suffix == ".json":
            record = json.loads(entry.read_text(encoding="utf-8"))
            _apply(_Txn(root, entry.stem), record["kind"], Path(record["target"]))
    for entry in work.iterdir():
        if entry.is_dir() and not (work / f"{entry.name.removesuffix('.old')}.json").exists():
            shutil.rmtree(entry)


def _scan_sequences(root: Path) -> dict[str, int]:
    """Largest committed sequence per app hash: from file names and overwrite ledgers under ``root``."""
    found: dict[str, int] = {}
    for folder, _, names in os.walk(root):
        for name in names:
            entries = _ledger(Path(folder)).get("sequences", {}) if name == LEDGER else {}
            match = _PART.match(name)
            if match:
                entries = {match["app"]: int(match["seq"])}
            for app, seq in entries.items():
                found[app] = max(found.get(app, seq), seq)
    return found


def _write_ledger(folder: Path, txn_id: str, sequences: dict[str, int]) -> None:
    ledger = folder / LEDGER
    ledger.write_text(json.dumps({"txn": txn_id, "sequences": sequences}, sort_keys=True), encoding="utf-8")
    _fsync(ledger)


def _ledger(folder: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((folder / LEDGER).read_text(encoding="utf-8")))
    except FileNotFoundError:
        return {}


def _data_files(folder: Path) -> list[Path]:
    return [Path(d) / n for d, _, names in os.walk(folder) for n in names if not n.startswith(".")]


def _date_folder(destination: Destination) -> str:
    """D-14: ``configure.date_folder_partitions`` of the connection, resolved with the UTC time now."""
    pattern = destination.connection.configure.date_folder_partitions
    if not pattern:
        return ""
    now = datetime.now(UTC)
    values = {"year": f"{now:%Y}", "month": f"{now:%m}", "day": f"{now:%d}", "hour": f"{now:%H}"}
    try:
        folder = pattern.format_map(values)
    except (KeyError, ValueError, IndexError) as e:
        raise DestinationError(
            f"destination table '{destination.table}': date_folder_partitions {pattern!r} is not a valid "
            "pattern; use {year}, {month}, {day} and {hour} placeholders, e.g. '{year}/{month}/{day}'"
        ) from e
    if Path(folder).is_absolute() or ".." in Path(folder).parts:
        raise DestinationError(f"date_folder_partitions {pattern!r} must stay under the table folder")
    return folder


def _hive(column: str, value: Any) -> str:
    text = _HIVE_NULL if value is None else quote(str(value), safe="")
    return f"{quote(column, safe='')}={text}"


def _avro_ready(frame: pl.DataFrame) -> pl.DataFrame:
    """The Avro writer has no zoned timestamp, time or duration types: write those as their strings."""
    unsupported = [
        name
        for name, dtype in frame.schema.items()
        if (isinstance(dtype, pl.Datetime) and dtype.time_zone) or isinstance(dtype, (pl.Time, pl.Duration))
    ]
    return frame.with_columns(pl.col(unsupported).cast(pl.String)) if unsupported else frame


def _app_hash(app_id: str) -> str:
    return hashlib.sha256(app_id.encode("utf-8")).hexdigest()[:12]


def _work_dir(root: Path) -> Path:
    return root.parent / f".{root.name}.datacoolie"


@contextlib.contextmanager
def _translate_errors(destination: Destination, root: Path) -> Iterator[None]:
    try:
        yield
    except (OSError, ValueError, pl.exceptions.PolarsError) as e:
        raise DestinationError(
            f"destination table '{destination.table}' at {root}: file write failed: {type(e).__name__}: {e}. "
            "An interrupted write is finished or discarded by the next write; check permissions and free space"
        ) from e


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    work = _work_dir(root)
    work.mkdir(parents=True, exist_ok=True)
    with open(work / ".lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two directories (Linux ``renameat2``); ``False`` where unsupported."""
    renameat2 = getattr(_libc, "renameat2", None)
    if renameat2 is None:
        return False
    return renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0
