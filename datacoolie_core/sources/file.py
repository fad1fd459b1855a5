"""The file reader: parquet, csv, json, jsonl, avro and excel folders (DataCoolie S-09 … S-17).

The source folder is ``base_path/schema_name/table`` (relative paths resolve against the working
directory). It is listed, not globbed: files with the format's extension (``excel`` -> ``.xlsx``),
non-recursive unless ``connection.configure.use_hive_partitioning`` (then recursive, and parquet
gets Hive ``key=value`` columns typed as Spark types them, :mod:`hive`). Names starting with ``.`` or ``_`` (``_SUCCESS``, ``.crc``,
``_delta_log``) are skipped, as Spark and Hive do. Files are read in (mtime, path) order, so a read
is deterministic.

Each file is scanned on its own and tagged with ``__file_name``, ``__file_path`` (as listed) and
``__file_modification_time`` (UTC); the scans are concatenated with ``diagonal_relaxed``, so a
column missing from some files is null there and differing dtypes widen to a common type.

``__file_modification_time`` in ``watermark_columns`` prunes files *before* reading: only files with
mtime ``> stored`` (replay: ``start <=`` mtime ``< end``); its new watermark is the newest mtime
read. Like DataCoolie, this pruning applies in addition to (not OR-ed with) the data columns' window.
Date-folder partitions (``date_folder_partitions``, S-12): only the files of the date folders that
meet the stored ``__date_folder_partition__`` (or a replay range on it) are listed
(:mod:`date_folders`); the new watermark records the newest folder read.

CSV and JSON lines are read as Spark 3.5 reads them, with Spark's option names and defaults: CSV
columns are text unless ``inferSchema`` (decided over every row of every file) or a schema hint types
them (:mod:`csv_text`, :mod:`csv_types`; ``docs/files.md``).
"""

from __future__ import annotations

import io
import logging
import os
import random
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

from datacoolie_core.columns import (
    DATE_FOLDER_PARTITION,
    FILE_COLUMNS,
    FILE_MODIFICATION_TIME,
    FILE_NAME,
    FILE_PATH,
)
from datacoolie_core.errors import SourceError
from datacoolie_core.models.dataflow import Source
from datacoolie_core.platform.paths import ensure_confined
from datacoolie_core.platform.storage import is_object_store, storage_options_for
from datacoolie_core.sources.base import ReadRange, ReadRequest, ReadResult, SourceScan
from datacoolie_core.sources.collect_and_watermark import collect_scan, lower_bounds, plan_read, source_label
from datacoolie_core.sources.csv_types import infer_and_cast
from datacoolie_core.sources.date_folders import find_date_folders, folder_bounds, source_levels, watermark_value
from datacoolie_core.sources.excel import read_excel
from datacoolie_core.sources.hive import partition_columns, with_partitions
from datacoolie_core.sources.options import csv_options, json_options, polars_options
from datacoolie_core.sources.remote_files import (
    check_object_unchanged,
    list_remote_files,
    readable_path,
    refuse_date_folders,
    settle_mark,
    settled,
)
from datacoolie_core.sources.shape import check_files
from datacoolie_core.sources.window import coerce_bound, lookup
from datacoolie_core.transforms.system_columns import UTC_EPOCH, UTC_MICROS, utc_literal

logger = logging.getLogger(__name__)

_MAX_FUTURE_SHOWN = 5
"""Future-stamped files named in the warning (then a count)."""

EXTENSIONS = {"parquet": ".parquet", "csv": ".csv", "json": ".json", "jsonl": ".jsonl", "avro": ".avro",
              "excel": ".xlsx"}  # fmt: skip


@dataclass(frozen=True)
class FileInfo:
    """One listed file: its path as listed (relative if the base path is), name and mtime (UTC)."""

    path: str
    name: str
    modified: datetime
    size: int | None = None
    """Bytes when listed (``None``: unknown); with ``modified``, how a changed file is recognised."""


class FileReader:
    """Reads a folder of files of the connection's format."""

    def read(self, source: Source, request: ReadRequest) -> ReadResult | None:
        scan = self.scan(source, request)
        return None if scan is None else collect_scan(scan)

    def scan(self, source: Source, request: ReadRequest) -> SourceScan | None:
        """The read planned lazily: files listed and pruned, shapes checked, nothing else read."""
        label = source_label(source)
        fmt = source.connection.format or "parquet"
        folder = _folder(source, label)
        hive = source.connection.configure.use_hive_partitioning
        mark = settle_mark()  # before listing: S3's whole-second LastModified (remote_files.settled)
        listed, folder_of = _listing(source, request, folder, EXTENSIONS[fmt], recursive=hive, label=label)
        mtime = any(_is_mtime(c) for c in source.watermark_columns)
        files = settled(prune_by_mtime(listed, source, request, label=label), mtime, mark)
        if mtime and request.read_range is None:
            files = without_future_files(files, datetime.now(UTC), label=label)
        for info in files:  # a file read through a symlink out of the root is refused (docs/confinement.md)
            ensure_confined(source.connection.base_path or folder, info.path, what="source file")
        action: dict[str, Any] = {"path": folder, "format": fmt, "files_listed": len(listed),
                                  "files_read": [f.path for f in files]}  # fmt: skip
        if not files:
            return None
        scans = list(zip(_scan_files(files, fmt, source.read_options, hive=hive, label=label), files, strict=True))
        parts = partition_columns([f.path for f in files], folder, label=label) if hive and fmt == "parquet" else {}
        kept = [(f, with_partitions(lf, parts.get(f.path, []))) for lf, f in scans if lf is not None]
        if not kept:
            return None
        check_files([(f.path, frame) for f, frame in kept], source, request, label=label)
        frames = [_tag(frame, f) for f, frame in kept]
        lf = pl.concat(frames, how="diagonal_relaxed")
        if fmt == "csv":
            lf = _inferred(lf, source, label)
        pseudo: dict[str, Any] = {
            key: max(f.modified for f in files) for key in source.watermark_columns if _is_mtime(key)
        }
        if folder_of:  # S-12: the newest date folder a file was read from
            pseudo[DATE_FOLDER_PARTITION] = watermark_value(max(folder_of[f.path] for f in files))
            action["date_folders_read"] = sorted({os.path.dirname(f.path) for f in files})
        return plan_read(
            lf,
            source,
            request,
            source_action=action,
            pseudo_watermark=pseudo,
            check_unchanged=lambda: check_unchanged(files, label),
            size_hint=sum(f.size or 0 for f in files),
        )


def check_unchanged(files: list[FileInfo], label: str) -> None:
    """Raise when a listed file was modified, replaced or removed since it was listed.

    A streamed write counts its rows and takes its watermark in an aggregate read beside the
    write's own: both must have read the same bytes, or the watermark could pass rows never written.
    """
    for info in files:
        if is_object_store(info.path):
            check_object_unchanged(info.path, info.modified, info.size, label)
            continue
        try:
            stat = os.stat(info.path)
        except OSError as e:
            raise SourceError(f"{label}: file '{info.path}' disappeared during the read ({e}); run again") from e
        if _mtime(stat.st_mtime_ns) != info.modified or (info.size is not None and stat.st_size != info.size):
            raise SourceError(
                f"{label}: file '{info.path}' changed during the read; nothing was written, run again "
                "(land files under a temporary name and rename them when complete)"
            )


def list_source_files(source: Source, *, label: str) -> list[FileInfo]:
    """Every file the reader could read for ``source`` (all date folders, no watermark), by (mtime, path).

    What a change sensor fingerprints: a date-folder source's files sit in its date folders.

    Raises:
        SourceError: no path, a missing folder, or an unreadable date-folder pattern.
    """
    fmt = source.connection.format or "parquet"
    hive = source.connection.configure.use_hive_partitioning
    return _listing(source, ReadRequest(), _folder(source, label), EXTENSIONS[fmt], recursive=hive, label=label)[0]


def _listing(
    source: Source, request: ReadRequest, folder: str, extension: str, *, recursive: bool, label: str
) -> tuple[list[FileInfo], dict[str, datetime]]:
    """The files to consider, and (date-folder sources, S-12) each file's folder date."""
    levels = source_levels(source, label)
    if levels is None:
        return list_files(folder, extension, recursive=recursive, label=label), {}
    refuse_date_folders(folder, label)
    lower, upper = folder_bounds(source, request, label)
    if not os.path.isdir(folder):
        list_files(folder, extension, recursive=recursive, label=label)  # raises the missing-folder error
    listed: list[FileInfo] = []
    folder_of: dict[str, datetime] = {}
    for date_folder in find_date_folders(folder, levels, lower=lower, upper=upper, label=label):
        for info in list_files(date_folder.path, extension, recursive=recursive, label=label):
            listed.append(info)
            folder_of[info.path] = date_folder.start
    return sorted(listed, key=lambda f: (f.modified, f.path)), folder_of


def _inferred(lf: pl.LazyFrame, source: Source, label: str) -> pl.LazyFrame:
    """CSV with ``inferSchema``: Spark infers over every row of every file, so types come from the union."""
    options = csv_options(source.read_options, label=label)
    if not options.infer_schema:
        return lf
    business = [c for c in lf.collect_schema() if c not in FILE_COLUMNS]
    try:
        return infer_and_cast(lf, business, options)
    except (pl.exceptions.PolarsError, OSError) as e:
        raise SourceError(f"{label}: cannot infer the CSV schema (inferSchema): {e}; check the files") from e


def list_files(folder: str, extension: str, *, recursive: bool, label: str) -> list[FileInfo]:
    """Files under ``folder`` ending in ``extension`` (case-insensitive), sorted by (mtime, path).

    Raises:
        SourceError: the folder does not exist or cannot be listed.
    """
    if is_object_store(folder):
        return list_remote_files(folder, extension, recursive=recursive, label=label, make=FileInfo)
    if not os.path.isdir(folder):
        raise SourceError(
            f"{label}: folder '{folder}' does not exist (resolved against {os.getcwd()}); "
            "fix base_path/schema_name/table, or create the folder"
        )
    try:
        found = [
            FileInfo(path=path, name=entry.name, modified=_mtime(stat.st_mtime_ns), size=stat.st_size)
            for path, entry in _walk(folder, recursive)
            if entry.name.lower().endswith(extension) and entry.is_file()
            if (stat := entry.stat()) is not None
        ]
    except OSError as e:
        raise SourceError(f"{label}: cannot list folder '{folder}': {e}; check its permissions") from e
    return sorted(found, key=lambda f: (f.modified, f.path))


def prune_by_mtime(files: list[FileInfo], source: Source, request: ReadRequest, *, label: str) -> list[FileInfo]:
    """The files a ``__file_modification_time`` watermark or replay range lets through."""
    if request.read_range is not None:
        return _in_range(files, request.read_range, label) if _is_mtime(request.read_range.column) else files
    key = next((c for c in source.watermark_columns if _is_mtime(c)), None)
    stored = lookup(lower_bounds(source, request), key) if key else None
    if stored is None:
        return files
    bound = _utc_bound(stored, label)
    return [f for f in files if f.modified > bound]


def without_future_files(files: list[FileInfo], now: datetime, *, label: str) -> list[FileInfo]:
    """``files`` less those modified after ``now`` (a clock ahead on the share), with a warning naming them.

    Under a ``__file_modification_time`` watermark the newest mtime read becomes the stored bound:
    one file stamped a year ahead would lift it a year ahead, and every file landing meanwhile
    (mtime below it) would be skipped for good. So the watermark never passes the listing's own
    time: a future file waits, named in a warning on every run, until the clock reaches its mtime
    (or its mtime is corrected, e.g. with ``touch``), and is read then (docs/state.md).
    """
    future = [f for f in files if f.modified > now]
    if future:
        shown = ", ".join(f"'{f.path}' ({f.modified.isoformat()})" for f in future[:_MAX_FUTURE_SHOWN])
        more = f" and {len(future) - _MAX_FUTURE_SHOWN} more" if len(future) > _MAX_FUTURE_SHOWN else ""
        logger.warning(
            "%s: %d file(s) are modified in the future (after %s): %s%s; they are left for a later run so the "
            "__file_modification_time watermark does not jump ahead and skip the files landing meanwhile; fix "
            "the clock of the share or the files' modification times to read them now",
            label,
            len(future),
            now.isoformat(),
            shown,
            more,
        )
    return [f for f in files if f.modified <= now]


def scan_file(path: str, fmt: str, options: dict[str, Any], *, hive: bool, label: str) -> pl.LazyFrame | None:
    """A lazy frame of one file (json, avro and excel are read eagerly, as Polars has no scan for them).

    CSV and JSON lines are read as Spark reads them (:mod:`csv_text`, :func:`scan_jsonl`); a CSV file
    without a line is ``None``.
    """
    try:
        if fmt == "parquet":
            return pl.scan_parquet(
                path,
                hive_partitioning=hive,
                storage_options=storage_options_for(path),
                **polars_options(pl.scan_parquet, options, label=label),
            )
        if fmt == "csv":  # the CSV tokenizer's modules load for CSV reads only (~5 ms a process)
            from datacoolie_core.sources.csv_text import read_csv_strings

            return read_csv_strings(path, csv_options(options, label=label), label=label)
        if fmt == "jsonl":
            return scan_jsonl(path, options, label=label)
        if fmt == "json":
            return pl.read_json(path).lazy()  # DataCoolie ignores read options for json (S-16)
        if fmt == "avro":
            return pl.read_avro(path).lazy()
        return read_excel(path, options, label=label)
    except (pl.exceptions.PolarsError, OSError, ValueError, TypeError) as e:
        raise SourceError(f"{label}: cannot read file '{path}': {e}; check the file and source.read_options") from e


def _scan_files(
    files: list[FileInfo], fmt: str, options: dict[str, Any], *, hive: bool, label: str
) -> list[pl.LazyFrame | None]:
    """One lazy frame per file. JSON lines infer their types over every line, as Spark does, which
    costs Polars about 1.6 parses of the file on top of the read: the files' schemas are inferred
    side by side (Polars releases the GIL), which halves that wall time on two cores. (One at a time
    was measured too: no lower peak RSS, 1.7x the in-process time; docs/dev/perf-write.md.)"""

    def scan(f: FileInfo) -> pl.LazyFrame | None:  # a remote csv/json file is read from a local copy
        return scan_file(readable_path(f.path, fmt, f.modified, f.size), fmt, options, hive=hive, label=label)

    if fmt != "jsonl" or len(files) < 2:
        return [scan(f) for f in files]
    with ThreadPoolExecutor(max_workers=min(len(files), os.cpu_count() or 1)) as pool:
        return list(pool.map(scan, files))


def scan_jsonl(path: str, options: dict[str, Any], *, label: str) -> pl.LazyFrame:
    """One JSON-lines file as Spark reads it: types inferred over every line, columns sorted by name.

    Spark's JSON inference: integers -> bigint, other numbers -> double, a mix with text -> string,
    objects -> struct (fields sorted by name), an all-null column -> string; ``primitivesAsString``
    reads numbers and booleans as their text. ``multiLine`` reads the file as one JSON document.
    """
    spark = json_options(options, label=label)
    if spark.multi_line:
        lf = pl.read_json(path).lazy()
        inferred = lf.collect_schema()
    else:
        inferred = _jsonl_schema(path, spark.sampling_ratio)
    target = {name: _spark_json_dtype(inferred[name], spark.primitives_as_string) for name in sorted(inferred)}
    if spark.multi_line:
        return lf.select(pl.col(name).cast(dtype) for name, dtype in target.items())
    return pl.scan_ndjson(path, schema=target)


SAMPLING_SEED = 1
"""The seed of the line sample, as Spark seeds its sample for schema inference."""
_SAMPLE_ALL_ABOVE = 0.99
"""Spark types every line when ``samplingRatio`` is above this (no sampling pass at all)."""


def _jsonl_schema(path: str, ratio: float) -> pl.Schema:
    """The schema of a JSON-lines file, widened over every line, or over a sample of ``ratio`` of them.

    Spark's ``samplingRatio``: above 0.99 every line is typed; below, each line is kept with
    probability ``ratio`` (a Bernoulli sample, seeded) and only the kept lines are typed. Spark's
    sample cannot be reproduced line for line (its generator and partitioning differ), so what is
    guaranteed is Spark's contract: the schema is the widening over a subset of the lines, never
    empty (the first line is used if the sample is), deterministic for a given file.
    """
    if ratio <= _SAMPLE_ALL_ABOVE:
        with open(path, "rb") as file:
            lines = [line for line in file.read().splitlines(keepends=True) if line.strip()]
        if lines:
            return _sampled_schema(lines, ratio)
    return pl.scan_ndjson(path, infer_schema_length=None).collect_schema()


def _sampled_schema(lines: list[bytes], ratio: float) -> pl.Schema:
    draw = random.Random(SAMPLING_SEED).random
    sample = [line for line in lines if draw() < ratio] or lines[:1]
    return pl.read_ndjson(io.BytesIO(b"".join(sample)), infer_schema_length=None).schema


def _spark_json_dtype(declared: PolarsDataType, as_string: bool) -> pl.DataType:
    dtype: pl.DataType = declared() if isinstance(declared, type) else declared
    if isinstance(dtype, pl.Struct):
        fields = sorted(dtype.fields, key=lambda f: f.name)
        return pl.Struct({f.name: _spark_json_dtype(f.dtype, as_string) for f in fields})
    if isinstance(dtype, pl.List):
        return pl.List(_spark_json_dtype(dtype.inner, as_string))
    if dtype == pl.Null or (as_string and (dtype.is_numeric() or dtype == pl.Boolean)):
        return pl.String()
    return dtype


def _tag(lf: pl.LazyFrame, info: FileInfo) -> pl.LazyFrame:
    return lf.with_columns(  # str literals are String; a dtype= would build a Series per literal
        pl.lit(info.name).alias(FILE_NAME),
        pl.lit(info.path).alias(FILE_PATH),
        utc_literal(info.modified).alias(FILE_MODIFICATION_TIME),
    )


def _folder(source: Source, label: str) -> str:
    if not source.connection.configure.date_folder_partitions and any(
        c.lower() == DATE_FOLDER_PARTITION for c in source.watermark_columns
    ):
        raise SourceError(
            f"{label}: watermark column {DATE_FOLDER_PARTITION} needs connection.configure.date_folder_partitions; "
            "set the pattern of the folders (e.g. '{year}/{month}/{day}') or remove the column"
        )
    path = source.path
    if not path:
        raise SourceError(f"{label}: a file source needs connection base_path and table; set configure.base_path")
    if "://" in path and not is_object_store(path):
        raise SourceError(f"{label}: path '{path}' is not a local folder nor an object store (s3, abfss, gs)")
    return path


def _walk(folder: str, recursive: bool) -> Iterator[tuple[str, os.DirEntry[str]]]:
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name.startswith((".", "_")):
                continue
            path = os.path.join(folder, entry.name)
            if recursive and entry.is_dir():
                yield from _walk(path, recursive)
            else:
                yield path, entry


def _mtime(ns: int) -> datetime:
    # Microseconds: the precision a stored watermark keeps, so "mtime > stored" is stable.
    return UTC_EPOCH + timedelta(microseconds=ns // 1000)


def _in_range(files: list[FileInfo], read_range: ReadRange, label: str) -> list[FileInfo]:
    start = _utc_bound(read_range.start, label) if read_range.start is not None else None
    end = _utc_bound(read_range.end, label) if read_range.end is not None else None
    return [f for f in files if (start is None or f.modified >= start) and (end is None or f.modified < end)]


def _utc_bound(value: Any, label: str) -> datetime:
    try:
        bound: datetime = coerce_bound(value, UTC_MICROS)[0]
    except (ValueError, TypeError) as e:
        raise SourceError(
            f"{label}: {FILE_MODIFICATION_TIME} bound {value!r} is not a timestamp ({e}); fix or delete the stored watermark"
        ) from e
    return bound


def _is_mtime(column: str) -> bool:
    return column.lower() == FILE_MODIFICATION_TIME
