"""Shape checks of a read: the source has every column the metadata names, file by file.

A column missing from the data used to degrade silently: a file whose header lacks the watermark
column gave rows with a null watermark that never pass ``col > stored`` (the dataflow was "skipped,
no new source rows" forever); a file with a wrong header was merged as a null-key row plus junk
columns. Here such a read fails its dataflow before anything is written or saved, naming the
file(s), the columns expected (and the metadata key naming each) and the columns found.

Expected columns: the watermark columns and the replay chunk column (always from the source), plus
what the runner passes in :attr:`ReadRequest.expected_columns` (:func:`expected_columns`). Names
resolve by the one rule of :mod:`datacoolie_core.transforms.resolve`. Only schemas are looked at
(``collect_schema``): nothing is read to check.

Files of one source are unioned by column name (a column missing from some files is null there).
Spark's CSV reader instead takes the first file's header and reads the others by position, which
scrambles columns when headers differ; a file sharing no column at all with the first one is an
error here (a header-less CSV, whose first data row became the names, or a stray file).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from datacoolie_core.columns import FILE_COLUMNS, SYSTEM_COLUMNS, TRAILING_COLUMNS
from datacoolie_core.errors import SourceError, SourceShapeError, TransformError
from datacoolie_core.models.dataflow import MERGE_LOAD_TYPES, DataFlow, Source
from datacoolie_core.sources.base import ExpectedColumn, ReadRequest
from datacoolie_core.sources.window import is_pseudo
from datacoolie_core.suggestions import did_you_mean
from datacoolie_core.transforms.base import ColumnNameMode
from datacoolie_core.transforms.resolve import find_column, reserved_match

_MAX_FILES_LISTED = 5


def expected_columns(dataflow: DataFlow, mode: ColumnNameMode = "lower") -> tuple[ExpectedColumn, ...]:
    """The columns ``dataflow`` needs from its source besides the watermark columns.

    Merge keys of merge loads, partition columns without an expression, dedup keys and order columns
    (when dedup runs) and active schema hints (when the connection uses them and
    ``missing_column_policy`` is ``error``) — except the columns a transform creates (computed,
    hash, partition-expression and rename targets, framework columns).
    """
    destination, transform = dataflow.destination, dataflow.transform
    wanted: list[tuple[list[str], str]] = []
    if destination.load_type in MERGE_LOAD_TYPES:
        wanted.append((destination.merge_keys, "destination.merge_keys"))
    wanted.append(
        ([p.column for p in destination.partition_columns if not p.expression], "destination.partition_columns")
    )
    if dataflow.deduplicate_columns and dataflow.order_columns:
        wanted.append((transform.deduplicate_columns, "transform.deduplicate_columns"))
        wanted.append((transform.latest_data_columns, "transform.latest_data_columns"))
        if not transform.deduplicate_columns:
            wanted.append((destination.merge_keys, "destination.merge_keys"))
    if dataflow.source.connection.use_schema_hint and transform.configure.missing_column_policy == "error":
        wanted.append(([h.column_name for h in transform.schema_hints if h.is_active], "transform.schema_hints"))
    made = _created_columns(dataflow)
    keys: dict[str, list[str]] = {}
    for names, key in wanted:
        for name in names:
            if not reserved_match(name, made, mode):
                keys.setdefault(name, [])
                keys[name] += [] if key in keys[name] else [key]
    return tuple(ExpectedColumn(name, ", ".join(where)) for name, where in keys.items())


def _created_columns(dataflow: DataFlow) -> list[str]:
    transform = dataflow.transform
    return [
        *(c.column for c in transform.additional_columns),
        *(h.target_column for h in transform.hash_columns),
        *(p.column for p in dataflow.destination.partition_columns if p.expression),
        *(str(new) for new in transform.rename_columns.values()),
        *TRAILING_COLUMNS,
    ]


def required_columns(source: Source, request: ReadRequest) -> list[ExpectedColumn]:
    """Every column the read needs: watermark columns, the replay chunk column, the request's expected ones."""
    required = [ExpectedColumn(c, "source.watermark_columns") for c in source.watermark_columns if not is_pseudo(c)]
    if request.read_range is not None and not is_pseudo(request.read_range.column):
        required.append(ExpectedColumn(request.read_range.column, "replay chunk_column"))
    return [*required, *request.expected_columns]


def check_columns(names: Sequence[str], source: Source, request: ReadRequest, *, label: str) -> None:
    """Fail the read when the source's columns ``names`` lack a required column.

    Raises:
        SourceShapeError: naming the missing columns with their metadata keys, and the columns found.
    """
    missing = missing_columns(names, required_columns(source, request), request.column_name_mode)
    if missing:
        raise SourceShapeError(
            f"{label}: the source lacks {_listing(missing, names)}; found columns: {_found(names)}; "
            "nothing was loaded; add the column(s) to the source or fix the metadata"
        )


def check_files(scans: Sequence[tuple[str, pl.LazyFrame]], source: Source, request: ReadRequest, *, label: str) -> None:
    """Fail the read when a file lacks a required column, or shares no column with the first file.

    Args:
        scans: ``(path, lazy frame)`` of every file the read will use, in read order, before the file
            columns are added.

    Raises:
        SourceShapeError: naming each odd file, the expected columns and the file's own columns; or a
            file with a column named like a framework column.
        SourceError: a file's schema cannot be read.
    """
    required = required_columns(source, request)
    raw = [(path, _file_columns(path, lf, label)) for path, lf in scans]
    for path, names in raw:
        check_framework_columns(names, source, label=label, where=f"file '{path}'")
    schemas = [(path, _business(names)) for path, names in raw]
    schemas = [(path, names) for path, names in schemas if names]  # an empty file contributes no row
    odd = [(path, names, missing) for path, names in schemas
           if (missing := missing_columns(names, required, request.column_name_mode))]  # fmt: skip
    if odd:
        shown = "; ".join(
            f"file '{path}' lacks {_listing(missing, names)} (its columns: {_found(names)})"
            for path, names, missing in odd[:_MAX_FILES_LISTED]
        )
        more = f"; and {len(odd) - _MAX_FILES_LISTED} more" if len(odd) > _MAX_FILES_LISTED else ""
        raise SourceShapeError(
            f"{label}: {len(odd)} of {len(schemas)} file(s) lack expected columns: {shown}{more}; "
            "nothing was loaded; fix those files or move them out of the folder, or fix the metadata"
        )
    _check_overlap(schemas, label)


def check_framework_columns(names: Sequence[str], source: Source, *, label: str, where: str = "the source") -> None:
    """Refuse source columns named like the framework's (``__created_at``, ``__file_name``, ``__valid_from`` ...).

    The framework sets those columns itself, so a user's column of that name would be replaced
    without a word. An earlier framework write is told apart by its columns: a lakehouse source
    (Delta, Iceberg), or a source carrying all four system columns (``__created_at``,
    ``__updated_at``, ``__updated_by``, ``__dataflow_run_id``; what every write adds, a flat file
    output included). Its framework columns are replaced, as in DataCoolie (docs/columns.md).

    Raises:
        SourceShapeError: naming the columns and the fix.
    """
    if source.connection.is_lakehouse:
        return
    clashes = [name for name in names if reserved_match(name, TRAILING_COLUMNS)]
    written = {reserved_match(name, SYSTEM_COLUMNS) for name in clashes}
    if clashes and not written.issuperset(SYSTEM_COLUMNS):
        raise SourceShapeError(
            f"{label}: {where} has column(s) {', '.join(repr(c) for c in clashes)} named like the framework's own "
            "columns, which the framework sets itself and would replace; nothing was loaded; rename them at the "
            "source (e.g. in the query, or the file's header)"
        )


def missing_columns(
    names: Sequence[str], required: Sequence[ExpectedColumn], mode: ColumnNameMode
) -> list[ExpectedColumn]:
    """The required columns ``names`` does not have (an ambiguous match counts as missing)."""
    missing = []
    for column in required:
        try:
            found = find_column(names, column.name, mode)
        except TransformError:
            found = None
        if found is None:
            missing.append(column)
    return missing


def _check_overlap(schemas: Sequence[tuple[str, list[str]]], label: str) -> None:
    if len(schemas) < 2:
        return
    first_path, first = schemas[0]
    lowered = {name.lower() for name in first}
    for path, names in schemas[1:]:
        if not lowered & {name.lower() for name in names}:
            raise SourceShapeError(
                f"{label}: file '{path}' shares no column with file '{first_path}' (columns: {_found(first)}); "
                f"its columns: {_found(names)}; its header is missing or wrong (with header=true a CSV's first "
                "line gives the names); nothing was loaded; fix the file or move it out of the folder"
            )


def _file_columns(path: str, lf: pl.LazyFrame, label: str) -> list[str]:
    try:
        return lf.collect_schema().names()
    except (pl.exceptions.PolarsError, OSError) as e:
        raise SourceError(f"{label}: cannot read the columns of file '{path}': {e}; check the file") from e


def _business(names: Sequence[str]) -> list[str]:
    return [name for name in names if name not in FILE_COLUMNS]


def _listing(missing: Sequence[ExpectedColumn], names: Sequence[str]) -> str:
    return ", ".join(f"'{c.name}' ({c.key}{did_you_mean(c.name, _business(names))})" for c in missing)


def _found(names: Sequence[str]) -> str:
    return ", ".join(_business(names)) or "none"
