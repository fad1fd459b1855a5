"""What new source data holds in a window column: the readers of the partition sensor.

Each reader compares a source with the state the previous evaluation left (``None``: never seen,
so everything is new) and returns a :class:`Change`: the partitions the new data touches and the
state to keep. It reads as little as it can:

* Files: only the files newer than the newest one seen (same mtime: not among the names seen at
  it), and of those only the window column (their mtime for ``__file_modification_time``).
* Delta: the change between the version seen and the latest one. With the change data feed on,
  ``load_cdf`` (inserted rows and update post-images); else the files added between the versions
  (the difference of the two versions' add actions): a Delta partition value or the min/max
  statistics of the window column when they fall in one window, else the file's window column.
* Databases (SQLite, PostgreSQL, MySQL/MariaDB; SQL Server and Oracle untested): ONE aggregation over the rows past the watermark seen,
  ``SELECT <window bucket>, MAX(<watermark>)… WHERE <watermark> > <seen> GROUP BY <bucket>``, so a
  late row (new watermark, old window) touches its old window.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

import polars as pl
import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError
from sqlglot import exp

from datacoolie_core import DataFlow
from datacoolie_core.api import (
    EXTENSIONS,
    FileInfo,
    SourceError,
    fetch_rows,
    files_fingerprint,
    folder_date_of,
    identifier,
    jsonable,
    open_delta,
    scan_file,
    source_files,
    source_label,
    source_query,
)
from datacoolie_core.columns import DATE_FOLDER_PARTITION, FILE_MODIFICATION_TIME
from datacoolie_dagster.automation.sensing.sensable import ref_name
from datacoolie_dagster.location.tables import SourceRef

KeysOf = Callable[[pl.Series], set[str]]
"""Window column values -> the partition keys whose windows hold them (values outside: none)."""

Grain = str | tuple[int, int]
"""How a database groups the window column: ``minute``, ``hour``, ``day``, ``month``, or
``(start, step)`` for integer ranges."""

_NEW_ROWS = ("insert", "update_postimage")
_MYSQL_BUCKETS = {"minute": "%Y-%m-%d %H:%i:00", "hour": "%Y-%m-%d %H:00:00", "day": "%Y-%m-%d %H:00:00",
                  "month": "%Y-%m-%d %H:00:00"}  # fmt: skip
"""Never coarser than an hour, as PostgreSQL's: Python maps the hours to windows in the partitions' zone."""
_SQLITE_BUCKETS = {"minute": "%Y-%m-%d %H:%M:00", "hour": "%Y-%m-%d %H:00:00", "day": "%Y-%m-%d",
                   "month": "%Y-%m-01"}  # fmt: skip


@dataclass(frozen=True)
class Change:
    """The partitions new source data touches, and the source's state after it (JSON-able)."""

    keys: frozenset[str]
    state: dict[str, Any]


def read_change(
    dataflow: DataFlow, refs: Sequence[SourceRef], column: str, before: dict[str, Any] | None, keys_of: KeysOf,
    grain: Grain,
) -> Change:  # fmt: skip
    """The change in ``dataflow``'s ``refs`` since ``before``, mapped to partition keys by ``keys_of``.

    Raises:
        SourceError: the source, or its window column, cannot be read.
    """
    fmt = dataflow.source.connection.format or ""
    label = source_label(dataflow.source)
    if fmt == "delta":
        return _delta_change(refs, column, before, keys_of, label)
    if fmt in EXTENSIONS:
        return _file_change(dataflow, column, before, keys_of, label)
    if fmt == "sql":
        return _database_change(dataflow, column, before, keys_of, grain, label)
    raise SourceError(f"{label}: format '{fmt}' cannot be sensed by partition")


def present_state(dataflow: DataFlow, refs: Sequence[SourceRef], column: str) -> dict[str, Any]:
    """The state :func:`read_change` would keep after reading everything, read without the data.

    The baseline of a source the sensor sees for the first time: the file listing, the Delta
    versions, the largest watermark values (one ``MAX`` query). ``column`` is not read.

    Raises:
        SourceError: the source cannot be read.
    """
    fmt = dataflow.source.connection.format or ""
    label = source_label(dataflow.source)
    if fmt == "delta":
        return {
            "delta_versions": {
                ref_name(ref): int(open_delta([ref.path, ref.fallback_path], label).version()) for ref in refs
            }
        }
    if fmt in EXTENSIONS:
        return _files_state(source_files(dataflow, label))
    if fmt == "sql":
        return {"max": _database_maxima(dataflow, label)}
    raise SourceError(f"{label}: format '{fmt}' cannot be sensed by partition (window column '{column}')")


# --- files ----------------------------------------------------------------------------------------


def _file_change(dataflow: DataFlow, column: str, before: dict[str, Any] | None, keys_of: KeysOf, label: str) -> Change:
    files = source_files(dataflow, label)
    state = _files_state(files)
    if state == before:
        return Change(frozenset(), state)
    new = _new_files(files, before)
    if column.lower() == FILE_MODIFICATION_TIME:
        return Change(frozenset(keys_of(pl.Series([f.modified for f in new]))), state)
    if column.lower() == DATE_FOLDER_PARTITION:  # S-12: a file's window is its folder's date
        dates = [folder_date_of(dataflow.source, f.path, label=label) for f in new]
        return Change(frozenset(keys_of(pl.Series(dates, dtype=pl.Datetime("us", "UTC")))), state)
    source = dataflow.source
    hive = source.connection.configure.use_hive_partitioning
    keys: set[str] = set()
    for info in new:
        frame = scan_file(info.path, source.connection.format or "", source.read_options, hive=hive, label=label)
        if frame is not None:
            keys |= keys_of(_window_column(frame, column, f"{label}: file '{info.path}'"))
    return Change(frozenset(keys), state)


def _files_state(files: Sequence[FileInfo]) -> dict[str, Any]:
    """The listing's fingerprint and the files at its newest modification time."""
    state = files_fingerprint(files)
    state["latest"] = sorted(f.path for f in files if f.modified.isoformat() == state["modified"])
    return state


def _new_files(files: Sequence[FileInfo], before: dict[str, Any] | None) -> list[FileInfo]:
    """Files newer than the newest seen, or as new but not among the files seen at that mtime."""
    if not before or before.get("modified") is None:
        return list(files)
    newest, seen = before["modified"], set(before.get("latest") or ())
    return [f for f in files if (m := f.modified.isoformat()) > newest or (m == newest and f.path not in seen)]


def _window_column(frame: pl.LazyFrame, column: str, where: str) -> pl.Series:
    try:
        return frame.select(pl.col(column)).collect().to_series()
    except (pl.exceptions.PolarsError, OSError) as e:
        raise SourceError(f"{where}: cannot read the window column '{column}': {e}; check chunk_column") from e


# --- Delta ----------------------------------------------------------------------------------------


def _delta_change(
    refs: Sequence[SourceRef], column: str, before: dict[str, Any] | None, keys_of: KeysOf, label: str
) -> Change:
    seen = (before or {}).get("delta_versions") or {}
    versions: dict[str, int] = {}
    keys: set[str] = set()
    for ref in refs:
        table = open_delta([ref.path, ref.fallback_path], label)
        name, version = ref_name(ref), int(table.version())
        versions[name] = version
        if seen.get(name) != version:
            keys |= _delta_keys(table, seen.get(name), column, keys_of, f"{label}: Delta table '{name}'")
    return Change(frozenset(keys), {"delta_versions": versions})


def _delta_keys(table: DeltaTable, seen: int | None, column: str, keys_of: KeysOf, where: str) -> set[str]:
    if seen is not None and table.metadata().configuration.get("delta.enableChangeDataFeed") == "true":
        try:
            reader = table.load_cdf(seen + 1, table.version(), columns=[column, "_change_type"])
            changes = pl.from_arrow(pa.RecordBatchReader.from_stream(reader).read_all())
            assert isinstance(changes, pl.DataFrame)
            return keys_of(changes.filter(pl.col("_change_type").is_in(_NEW_ROWS))[column])
        except DeltaError:
            pass  # the feed was off for some version in between: the log's added files tell it instead
    keys: set[str] = set()
    for path, low, high in _added_files(table, seen, column):
        bounds = keys_of(pl.Series([low, high])) if low is not None and high is not None else set()
        if len(bounds) == 1:  # every row of the file lies in one window: no need to read it
            keys |= bounds
        else:
            keys |= keys_of(_window_column(pl.scan_parquet(path), column, f"{where}, file '{path}'"))
    return keys


def _added_files(table: DeltaTable, seen: int | None, column: str) -> list[tuple[str, Any, Any]]:
    """``(path, min, max)`` of the window column in each file added since version ``seen``."""
    now = pl.DataFrame(pa.table(table.get_add_actions(flatten=True)))
    if seen is not None:
        try:
            old = DeltaTable(table.table_uri, version=seen).get_add_actions(flatten=True)
            now = now.filter(~pl.col("path").is_in(pa.table(old).column("path").to_pylist()))
        except (DeltaError, OSError):
            pass  # version `seen` is no longer in the log: every current file counts as added
    root = table.table_uri
    root = unquote(urlparse(root).path) if root.startswith("file://") else root.rstrip("/")
    columns = (
        [f"partition.{column}"] * 2 if f"partition.{column}" in now.columns else [f"min.{column}", f"max.{column}"]
    )
    low, high = (now[c].to_list() if c in now.columns else [None] * now.height for c in columns)
    paths = [os.path.join(root, unquote(p)) for p in now["path"].to_list()]
    return list(zip(paths, low, high, strict=True))


# --- databases ------------------------------------------------------------------------------------


def _database_change(
    dataflow: DataFlow, column: str, before: dict[str, Any] | None, keys_of: KeysOf, grain: Grain, label: str
) -> Change:
    watermarks = [c for c in dataflow.source.watermark_columns if c.lower() != FILE_MODIFICATION_TIME]
    if not watermarks:
        raise SourceError(f"{label}: a database source is sensed by partition only with a watermark column")
    seen = (before or {}).get("max") or {}
    connection, dialect, base = source_query(dataflow, label)
    bucket = _bucket(_column(column, dialect), grain, dialect)
    query = exp.select(bucket, *(exp.Max(this=_column(c, dialect)) for c in watermarks))
    query = query.from_(base.subquery(exp.to_identifier("t", quoted=True))).group_by(bucket.copy())
    past = [
        exp.GT(this=_column(c, dialect), expression=_literal(seen[c])) for c in watermarks if seen.get(c) is not None
    ]
    if past:
        query = query.where(exp.or_(*past))
    rows = fetch_rows(connection, dialect, query, label, "read the windows of the new rows")
    maxima = {}
    for i, name in enumerate(watermarks, start=1):
        values = [row[i] for row in rows if row[i] is not None]
        maxima[name] = jsonable(max(values)) if values else seen.get(name)
    return Change(frozenset(keys_of(pl.Series([row[0] for row in rows]))), {"max": maxima})


def _database_maxima(dataflow: DataFlow, label: str) -> dict[str, Any]:
    """``{watermark column: MAX(column)}`` over the whole source, as :func:`_database_change` keeps them."""
    watermarks = [c for c in dataflow.source.watermark_columns if c.lower() != FILE_MODIFICATION_TIME]
    if not watermarks:
        raise SourceError(f"{label}: a database source is sensed by partition only with a watermark column")
    connection, dialect, base = source_query(dataflow, label)
    query = exp.select(*(exp.Max(this=_column(c, dialect)) for c in watermarks))
    query = query.from_(base.subquery(exp.to_identifier("t", quoted=True)))
    (row,) = fetch_rows(connection, dialect, query, label, "read the largest watermark values")
    return {name: jsonable(value) for name, value in zip(watermarks, row, strict=True)}


def _bucket(column: exp.Expr, grain: Grain, dialect: str) -> exp.Expr:
    """The window column cut to ``grain``: few groups, each inside one partition."""
    if isinstance(grain, tuple):  # integer ranges: the start of the step the value falls in
        start, step = (exp.Literal.number(n) for n in grain)
        offset = exp.Mod(this=exp.Paren(this=exp.Sub(this=column, expression=start)), expression=step)
        return exp.Sub(this=column.copy(), expression=exp.Paren(this=offset))
    if dialect == "sqlite":  # SQLite timestamps are ISO text: cut the text
        return exp.Anonymous(this="strftime", expressions=[exp.Literal.string(_SQLITE_BUCKETS[grain]), column])
    if dialect == "mysql":  # MySQL/MariaDB (sessions in UTC): the hour or minute, back as a DATETIME
        cut = exp.Anonymous(this="DATE_FORMAT", expressions=[column, exp.Literal.string(_MYSQL_BUCKETS[grain])])
        return exp.cast(cut, exp.DataType.build("DATETIME", dialect="mysql"))
    # PostgreSQL: date_trunc of a timestamptz works in the session's time zone, so never coarser than an
    # hour (an hour is an hour in every whole-hour zone): Python maps the hours to their windows
    unit = "minute" if grain == "minute" else "hour"
    return exp.Anonymous(this="date_trunc", expressions=[exp.Literal.string(unit), column])


def _column(name: str, dialect: str) -> exp.Column:
    return exp.column(identifier(name, dialect))


def _literal(value: Any) -> exp.Expr:
    """A watermark seen, as the database returned it (SQLite's text compares as text)."""
    if isinstance(value, bool | int | float):
        return exp.Literal.number(value)
    return exp.Literal.string(str(value))
