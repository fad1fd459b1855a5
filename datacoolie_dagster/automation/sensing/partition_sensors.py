"""The partition sensor: runs for exactly the partitions new source data touches.

:func:`build_partition_sensors` builds ONE sensor (``datacoolie_partitions``) over every partitioned
table with an external source (files, Delta, SQLite/PostgreSQL). A partitioned table reading a table
of this metadata follows it through the automation or the watermark sensor (docs/automation.md),
never through this sensor.
Each evaluation reads what changed in those sources since its cursor (:mod:`.source_changes`):
the new files' window column, the Delta change between versions, the rows past the watermark.
The window values map to the table's partition keys (late data maps to its old window), and
the touched partitions are requested as a backfill would: contiguous keys in one run, at most
``max_partitions_per_run`` per run (the asset's ``BackfillPolicy``), with Dagster's
``asset_partition_range`` tags — a single key as an ordinary partition run.

* A run key names the table, its partitions and a digest of the source state seen, so each
  (table, partition, source version) runs once: a tick re-evaluated after a crash (the cursor not
  saved) asks for the same keys, and Dagster drops them, across daemon restarts.
* ``max_runs``: runs of a limited stage wait in the run queue on the stage's pool
  (:mod:`.limits`); the sensor requests them all and never drops one.
* First evaluation (no cursor), and a source the cursor does not hold yet (a table or dataflow new
  in the metadata, or the cursor deleted): the source's present state (file listing, Delta
  versions, largest watermark values; no data read) is the baseline and nothing is requested.
  Partitions already holding data are not replayed: switching the sensor on, or losing its
  cursor, never rebuilds a table; only data landing after that is requested.
* Values outside the partitions (before ``start``, after ``end``, or in the current, unfinished
  window) are counted in the sensor log and not requested.
* A source that cannot be read is named in the skip reason (or log) and its table's cursor entry is
  kept, so its change is seen once it is readable. An unreadable cursor raises
  :class:`~datacoolie_dagster.automation.sensing.sensors.SensorCursorError`.
* Not sensed: tables opted out with ``configure.dagster.sensor: false``, function sources, database
  sources without a watermark column, tables without a window column, and tables loaded with
  ``append`` or ``overwrite``. A partition run replays its window with the table's load strategy
  (as a DataCoolie replay does), so only ``merge_upsert``, ``merge_overwrite`` and ``scd2`` can run
  a window again without harm: a second ``append`` of a window would add its old rows again, an
  ``overwrite`` would replace the whole table by one window. Their stage job's loads still mark the
  partitions they touch.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import dagster as dg

from datacoolie_core import DataFlow
from datacoolie_core.api import SourceError
from datacoolie_core.columns import FILE_MODIFICATION_TIME
from datacoolie_dagster.automation.sensing.builder import SensorOutcome, build_sensing_sensor
from datacoolie_dagster.automation.sensing.sensable import is_sensable, senses_partitions
from datacoolie_dagster.automation.sensing.sensors import (
    AUTOMATED_TAG,
    TRIGGER_TAG,
    dump_cursor,
    parse_cursor,
    triggers_enabled,
)
from datacoolie_dagster.location.assets import TableAsset
from datacoolie_dagster.location.partitions import TablePartitioning, contiguous_chunks
from datacoolie_dagster.location.tables import SourceRef, source_refs

if TYPE_CHECKING:
    import polars as pl

    from datacoolie_dagster.automation.sensing.source_changes import Grain

PARTITION_SENSOR_NAME = "datacoolie_partitions"
REPLAYABLE_LOAD_TYPES = frozenset({"merge_upsert", "merge_overwrite", "scd2"})
"""Load types for which a window run again is harmless: the sensor requests only their tables."""
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"
_GRAINS = {"minutes": "minute", "hours": "hour", "days": "day", "weeks": "day", "months": "month", "years": "month"}


@dataclass(frozen=True)
class SensedSource:
    """One dataflow of a partitioned table: the refs it reads that are sensed, and its window column."""

    dataflow: DataFlow
    refs: tuple[SourceRef, ...]
    column: str

    @property
    def name(self) -> str:
        return str(self.dataflow.name or self.dataflow.dataflow_id)


@dataclass(frozen=True)
class PartitionedTable:
    """A partitioned destination table the partition sensor watches."""

    asset_key: dg.AssetKey
    partitioning: TablePartitioning
    sources: tuple[SensedSource, ...]
    upstream_keys: tuple[dg.AssetKey, ...] = ()
    """What the table depends on (its sources' assets, this metadata's tables among them)."""

    @property
    def name(self) -> str:
        return self.asset_key.to_user_string()


@dataclass(frozen=True)
class PartitionEvaluation:
    """The run requests of one evaluation, the next cursor, what was unreadable or skipped."""

    run_requests: list[dg.RunRequest]
    cursor: str
    unreadable: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    """Tables with window values outside their partitions (not requested)."""
    sensed: int = 0
    state: dict[str, dict[str, Any]] = field(default_factory=dict)
    """``{table: {dataflow: source state}}``: what the cursor keeps."""

    def skip_reason(self) -> str:
        if self.unreadable:
            return "; ".join(["sources that cannot be read: " + "; ".join(self.unreadable), *self.outside])
        return "; ".join([f"no new source data in any partition of the {self.sensed} sensed table(s)", *self.outside])


def build_partition_sensors(
    assets: Sequence[TableAsset],
    *,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    asset_job: str | None = None,
) -> list[dg.SensorDefinition]:
    """The partition sensor over the partitioned tables of ``assets`` ([] if none is sensed).

    ``asset_job``: the name of an asset job holding every sensed table (the code location passes
    Dagster's implicit ``__ASSET_JOB``); without it the sensor targets its tables directly.

    Example:
        >>> assets, _ = build_table_assets(dataflows, DataCoolieTranslator())
        >>> sensors = build_partition_sensors(assets, asset_job="__ASSET_JOB")
    """
    sensed = partitioned_tables(assets)
    if not sensed:
        return []

    def evaluate(context: dg.SensorEvaluationContext) -> SensorOutcome:
        evaluation = evaluate_partitions(sensed, context.cursor, sensor_name=PARTITION_SENSOR_NAME, job=asset_job)
        warnings = [evaluation.skip_reason()] if evaluation.unreadable else []
        return SensorOutcome(
            evaluation.run_requests, evaluation.cursor, evaluation.skip_reason(), evaluation.outside, warnings
        )

    sensor = build_sensing_sensor(
        name=PARTITION_SENSOR_NAME,
        description=f"Runs the partitions new source data touches ({len(sensed)} partitioned tables).",
        selection=[t.asset_key for t in sensed],
        asset_job=asset_job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        evaluate=evaluate,
    )
    return [sensor]


def replays_safely(dataflows: Sequence[DataFlow]) -> bool:
    """Whether running a window again leaves the table as one run would (see the module docstring)."""
    return all(d.destination.load_type in REPLAYABLE_LOAD_TYPES for d in dataflows)


def partitioned_tables(assets: Sequence[TableAsset], *, upstreams: bool = False) -> list[PartitionedTable]:
    """The tables the partition sensor watches, with their external sources (see the module docstring
    for what is left out). No I/O.

    ``upstreams``: instead, the partitioned readers of this metadata's tables that no automation
    condition follows, with those tables as their sources: the watermark sensor reads their changes
    (:mod:`.watermark_sensor`).
    """
    sensed = []
    for asset in assets:
        table, partitioning = asset.table, asset.partitioning
        if partitioning is None or not triggers_enabled(table) or not replays_safely(table.dataflows):
            continue
        if upstreams and asset.spec.automation_condition is not None:
            continue
        sources = []
        for dataflow in table.dataflows:
            refs = tuple(r for r in source_refs(dataflow) if (r in table.sources) != upstreams)
            column = partitioning.config.chunk_column or next(iter(dataflow.source.watermark_columns), None)
            sensable = is_sensable(dataflow, refs) and senses_partitions(dataflow)
            if column and sensable and _has_watermark(dataflow):
                sources.append(SensedSource(dataflow, refs, column))
        if sources:
            deps = tuple(d.asset_key for d in asset.spec.deps)
            sensed.append(PartitionedTable(asset.spec.key, partitioning, tuple(sources), deps))
    return sensed


def evaluate_partitions(
    tables: Sequence[PartitionedTable], cursor: str | None, *, sensor_name: str, job: str | None = None
) -> PartitionEvaluation:
    """Read what changed in each table's sources since ``cursor``; one request per run of partitions.

    Raises:
        SensorCursorError: ``cursor`` is not a cursor this sensor wrote.
    """
    previous = parse_cursor(cursor, sensor_name)
    evaluation = evaluate_tables(tables, previous, job=job, trigger="partition_sensor")
    return replace(evaluation, cursor=dump_cursor(evaluation.state))


def evaluate_tables(
    tables: Sequence[PartitionedTable],
    previous: dict[str, dict[str, Any]],
    *,
    job: str | None,
    trigger: str,
    held: frozenset[str] = frozenset(),
    missing_is_empty: bool = False,
) -> PartitionEvaluation:
    """:func:`evaluate_partitions` on a parsed cursor; the tables' next state is in ``state`` (no ``cursor``).

    ``held``: tables not read this time (their entry kept as it was); ``trigger`` tags the runs.
    ``missing_is_empty``: a source first seen unreadable is recorded as seen empty (an upstream table
    of this metadata not created yet: all it gets is new), not left to be the baseline when readable.
    """
    state = {t.name: previous[t.name] for t in tables if t.name in previous}  # forget unsensed tables
    requests: list[dg.RunRequest] = []
    unreadable: list[str] = []
    outside: list[str] = []
    for table in tables:
        if table.name in held:
            continue
        skipped: list[int] = []
        try:
            keys, state[table.name] = _table_change(table, previous.get(table.name, {}), skipped, missing_is_empty)
        except SourceError as e:
            unreadable.append(f"table '{table.name}': {e}")
            continue
        if sum(skipped):
            outside.append(f"table '{table.name}': {sum(skipped)} window value(s) outside its partitions not requested")
        requests += partition_run_requests(table, keys, _digest(state[table.name]), job, trigger)
    return PartitionEvaluation(requests, "", unreadable, outside, len(tables), state)


def _table_change(
    table: PartitionedTable, seen: dict[str, Any], skipped: list[int], missing_is_empty: bool = False
) -> tuple[set[str], dict[str, Any]]:
    # the readers (Polars, deltalake, sqlglot) load with the first evaluation, not with the code location
    from datacoolie_dagster.automation.sensing.source_changes import present_state, read_change

    partitioning = table.partitioning

    keys: set[str] = set()
    state: dict[str, Any] = {}
    for source in table.sources:
        if source.name not in seen:  # first seen now: its present is the baseline, not a change
            try:
                state[source.name] = present_state(source.dataflow, source.refs, source.column)
            except SourceError:
                if not missing_is_empty:
                    raise
                state[source.name] = {}
            continue

        def keys_of(values: pl.Series, column: str = source.column) -> set[str]:
            found, outside = partition_keys(partitioning, column, values)
            skipped.append(outside)
            return found

        change = read_change(
            source.dataflow, source.refs, source.column, seen.get(source.name), keys_of, _grain(partitioning)
        )
        keys |= change.keys
        state[source.name] = change.state
    return keys, state


def partition_keys(partitioning: TablePartitioning, column: str, values: pl.Series) -> tuple[set[str], int]:
    """The partition keys whose windows hold ``values`` of ``column``, and how many values fell outside.

    The mapping is :mod:`.touched`'s (naive datetimes are UTC, as the replay reads them); text (CSV)
    is parsed first. Outside: nulls, values before the first partition or after the last one, and
    values in a window that is no partition yet (the current, unfinished one).

    Raises:
        SourceError: values that are not dates or datetimes (integers for an integer ``step`` range).
    """
    import polars as pl

    from datacoolie_core.api import touched_windows
    from datacoolie_dagster.location.touched_partitions import column_window_spec, partition_rows

    values = _parsed(values)
    if values.null_count() == len(values):  # nothing new, or only nulls (a Null-typed series has no windows)
        return set(), len(values)
    touched = touched_windows(pl.DataFrame({column: values}), column_window_spec(partitioning, column))
    if touched is None:
        raise SourceError(f"window column '{column}' holds {values.dtype} values, which have no partition windows")
    found = partition_rows(partitioning, touched)
    keys = {k for k in found.keys if partitioning.partitions_def.has_partition_key(k)}
    return keys, found.outside + sum(n for k, n in found.rows.items() if k not in keys)


def partition_runs(partitioning: TablePartitioning, keys: set[str] | frozenset[str]) -> list[list[str]]:
    """``keys`` in window order, cut into runs: contiguous windows, at most the policy's partitions per run."""
    every = partitioning.partitions_def.get_partition_keys()
    todo = sorted(keys, key=lambda k: partitioning.window(k)[0])
    return contiguous_chunks(every, todo, partitioning.backfill_policy.max_partitions_per_run)


def partition_run_requests(
    table: PartitionedTable, keys: set[str], version: str, job: str | None, trigger: str = "partition_sensor"
) -> list[dg.RunRequest]:
    """One request per run of :func:`partition_runs`, keyed by (table, partitions, source version)."""
    requests = []
    for run in partition_runs(table.partitioning, keys):
        first, last = run[0], run[-1]
        span = first if first == last else f"{first}...{last}"
        tags = {TRIGGER_TAG: trigger, AUTOMATED_TAG: "true"}
        if first != last:
            tags |= {RANGE_START_TAG: first, RANGE_END_TAG: last}
        requests.append(
            dg.RunRequest(
                run_key=f"{table.name}:{span}@{version}",
                asset_selection=[table.asset_key],
                job_name=job,
                partition_key=first if first == last else None,
                tags=tags,
            )
        )
    return requests


def _parsed(values: pl.Series) -> pl.Series:
    """Text (a CSV column, a SQLite bucket) parsed as datetimes; other types as they are."""
    import polars as pl

    if values.dtype != pl.String:
        return values
    try:
        return values.str.to_datetime(strict=False, time_unit="us")
    except pl.exceptions.PolarsError as e:
        raise SourceError(f"window column values are not dates or datetimes: {e}; check chunk_column") from e


def _grain(partitioning: TablePartitioning) -> Grain:
    """How finely a database groups the window column for ``partitioning`` (see :mod:`.source_changes`)."""
    ((unit, amount),) = partitioning.config.chunk_interval.items()
    if unit == "step":
        start = partitioning.config.start
        assert isinstance(start, int)  # build_partitions_def refuses a step range without integer bounds
        return (start, amount)
    if partitioning.config.timezone != "UTC" and unit != "minutes":
        return "hour"  # windows start at a local midnight: a UTC hour is the coarsest safe cut
    return _GRAINS[unit]


def _has_watermark(dataflow: DataFlow) -> bool:
    """A database source is read past its watermark: without one there is no "new rows"."""
    if dataflow.source.connection.format != "sql":
        return True
    return any(c.lower() != FILE_MODIFICATION_TIME for c in dataflow.source.watermark_columns)


def _digest(state: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()[:12]
