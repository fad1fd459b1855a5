"""The watermark sensor: tables follow a table of this metadata loaded outside Dagster, and the
partitioned readers no automation condition can follow.

One sensor (``datacoolie_watermarks``), two duties (docs/automation.md has the table of who requests what):

* **Watermarks moved outside Dagster.** It watches the watermark of every dataflow whose destination
  another table of the metadata reads. When one advances — a ``datacoolie run`` from cron or CI, a
  replay — the readers are requested: unpartitioned ones together in ONE run (the multi-asset
  orders them along the lineage), a partitioned reader of partitioned tables once per window
  between the old and the new watermark, on its window column. A reader with an automation
  condition is left to the automation when the instance recorded the load (a Dagster run, or a
  CLI run with ``DAGSTER_HOME`` set: its runless materialization names the dataflow run that wrote
  the watermark).
* **Exact readers** (:func:`exact_readers`): a partitioned table (``merge_upsert``,
  ``merge_overwrite``, ``scd2``) reading an unpartitioned table of this metadata has no automation
  condition (every window would depend on the whole upstream). Each tick reads the upstream's
  Delta change since the version seen, as the partition sensor reads an external Delta source, and
  requests exactly the windows its new rows fall in (late rows included), whoever loaded it.

**The race.** A Dagster run saves a table's watermark as its commit lands but records the
materialization later (a stage run: after its whole driver run). A table that a run not yet
finished may write (its asset selection holds it, or it is a stage job of the table's stage) is
*held*: its watermark change and its exact readers wait in the cursor until the run finished, and
are then judged on what the instance recorded. So a Dagster run never has its readers requested
both by the automation and by this sensor, and no exact reader runs before its upstream's run ended.

**Cursor.** ``{"format": 2, "watermarks": {dataflow name: stored text}, "tables": {reader: {dataflow:
upstream state}}}``, packed (:func:`.builder.pack_cursor`); a watermark no partitioned reader maps
to windows is kept as ``"#<digest>"``. The first evaluation (and one after the cursor was deleted) only records: a
watermark or a Delta version present before the sensor started is not a change, so switching it on
requests nothing (an upstream table not created yet is recorded as seen empty). Run keys name the
reader, its windows and a digest of the new state: the same change seen twice (a crash before the
cursor was saved, a daemon restart) is deduplicated by Dagster. An unreadable cursor raises
:class:`~datacoolie_dagster.automation.sensing.sensors.SensorCursorError`; an unreadable watermark is named
in the skip reason and its cursor entry kept, so the change is seen once it reads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from datacoolie_core.api import WatermarkError
from datacoolie_dagster import constants
from datacoolie_dagster.automation.sensing.builder import (
    SensorOutcome,
    build_sensing_sensor,
    pack_cursor,
    unpack_cursor,
)
from datacoolie_dagster.automation.sensing.partition_sensors import (
    PartitionedTable,
    evaluate_tables,
    partitioned_tables,
    replays_safely,
)
from datacoolie_dagster.automation.sensing.sensors import (
    AUTOMATED_TAG,
    TRIGGER_TAG,
    SensorCursorError,
    triggers_enabled,
)
from datacoolie_dagster.automation.sensing.watermark_feed import WatermarkFeed, WatermarkReading, windows_between
from datacoolie_dagster.location.assets import TableAsset
from datacoolie_dagster.location.jobs import ALL_STAGES_JOB
from datacoolie_dagster.location.tables import identifier

WATERMARK_SENSOR_NAME = "datacoolie_watermarks"
CURSOR_FORMAT = 2
LEGACY_CURSOR_FORMAT = 1
"""Plain JSON keyed by dataflow id, every watermark as text: still read."""
DIGEST_MARK = "#"
"""Marks a watermark the cursor keeps as a digest (no partitioned reader needs its text)."""
RECENT_MATERIALIZATIONS = 50
"""How many of a table's latest materializations are searched for the run that wrote a watermark."""


@dataclass(frozen=True)
class WatchedDataflow:
    """A dataflow whose watermark the sensor watches, its table and the tables reading that table."""

    dataflow_id: str
    table_key: dg.AssetKey
    readers: tuple[TableAsset, ...]
    """Readers to request; the exact readers (:func:`exact_readers`) are left out."""
    name: str = ""
    """The dataflow's name: its key in the cursor (names compress; generated ids do not)."""

    @property
    def cursor_key(self) -> str:
        return self.name or self.dataflow_id

    @property
    def keeps_text(self) -> bool:
        """Whether the cursor keeps the watermark text: a partitioned reader maps old..new to windows."""
        return any(r.partitioning is not None for r in self.readers)

    def token_of(self, reading: WatermarkReading) -> str:
        """``<dataflow>@<digest of the watermark>``: names one change in run keys and notes."""
        return f"{self.dataflow_id}@{_text_digest(reading.text)}"

    def stored(self, reading: WatermarkReading) -> str:
        """What the cursor keeps of ``reading``: its text, or a digest when no reader needs the text."""
        return reading.text if self.keeps_text else DIGEST_MARK + _text_digest(reading.text)

    def unchanged(self, before: str | None, reading: WatermarkReading) -> bool:
        return before in (reading.text, DIGEST_MARK + _text_digest(reading.text))


@dataclass(frozen=True)
class WatermarkChange:
    dataflow: WatchedDataflow
    old: str | None
    """The text seen before (``None``: none, or only its digest was kept)."""
    new: WatermarkReading
    old_known: bool = True
    """``False``: the cursor kept only a digest (the dataflow had no partitioned reader then)."""

    @property
    def token(self) -> str:
        return self.dataflow.token_of(self.new)


@dataclass(frozen=True)
class WatermarkEvaluation:
    run_requests: list[dg.RunRequest]
    cursor: str
    changed: int = 0
    unreadable: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Changes left to the automation, windows that could not be derived."""

    def skip_reason(self) -> str:
        parts = [f"{self.changed} watermark(s) moved, nothing to request"] if self.changed else ["no watermark moved"]
        return "; ".join(parts + self.notes + [f"unreadable: {u}" for u in self.unreadable])


def watched_dataflows(assets: Sequence[TableAsset]) -> list[WatchedDataflow]:
    """Every dataflow writing a table that another (triggerable) table reads. No I/O.

    Readers read exactly (:func:`exact_readers`) are not listed: their upstream's change is read instead.
    """
    by_table = {a.table.key: a for a in assets}
    exact = {t.asset_key for t in exact_readers(assets)}
    readers: dict[str, list[TableAsset]] = {}
    for asset in assets:
        if triggers_enabled(asset.table) and asset.spec.key not in exact:
            for upstream in asset.table.upstream:
                readers.setdefault(upstream, []).append(asset)
    return [
        WatchedDataflow(str(d.dataflow_id), by_table[key].spec.key, tuple(found), str(d.name or d.dataflow_id))
        for key, found in readers.items()
        if key in by_table
        for d in by_table[key].table.dataflows
    ]


def exact_readers(assets: Sequence[TableAsset]) -> list[PartitionedTable]:
    """Partitioned readers of this metadata's tables that no automation condition follows, with those
    tables as their sources: each tick reads the upstream's Delta change and requests exactly the
    windows its rows fall in (the partition sensor's reader). No I/O."""
    return partitioned_tables(assets, upstreams=True)


def build_watermark_sensor(
    assets: Sequence[TableAsset],
    feed: WatermarkFeed,
    *,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    asset_job: str | None = None,
) -> list[dg.SensorDefinition]:
    """The sensor requesting the readers of a table whose watermark moved ([] when nothing reads one).

    ``feed`` reads the watermarks (:class:`~datacoolie_dagster.automation.sensing.watermark_feed.FileWatermarkFeed`
    for the file store). ``asset_job``: the job the runs launch under, as for the source sensor.
    """
    watched, exact = watched_dataflows(assets), exact_readers(assets)
    if not watched and not exact:
        return []
    readers = {r.spec.key for w in watched for r in w.readers} | {t.asset_key for t in exact}
    writers = _writers(assets)

    def evaluate(context: dg.SensorEvaluationContext) -> SensorOutcome:
        evaluation = evaluate_watermarks(
            watched, feed, context.cursor, context.instance, job=asset_job, exact=exact, writers=writers
        )
        return SensorOutcome(
            evaluation.run_requests,
            evaluation.cursor,
            evaluation.skip_reason(),
            evaluation.notes,
            evaluation.unreadable,
        )

    sensor = build_sensing_sensor(
        name=WATERMARK_SENSOR_NAME,
        description=(
            f"Runs the tables reading a table loaded outside Dagster ({len(watched)} dataflows), and the "
            f"windows of partitioned tables their upstream's new rows fall in ({len(exact)} tables)."
        ),
        selection=sorted(readers),
        asset_job=asset_job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        evaluate=evaluate,
    )
    return [sensor]


def evaluate_watermarks(
    watched: Sequence[WatchedDataflow],
    feed: WatermarkFeed,
    cursor: str | None,
    instance: dg.DagsterInstance,
    *,
    job: str | None = None,
    exact: Sequence[PartitionedTable] = (),
    writers: Mapping[dg.AssetKey, frozenset[str]] | None = None,
) -> WatermarkEvaluation:
    """Compare every watched watermark with ``cursor`` and request the readers of those that moved;
    read the upstream change of every ``exact`` reader.

    A table a Dagster run is still writing is held (its watermark's change, or its exact readers'
    change, is looked at again once the run finished): ``writers`` maps each table to the jobs that
    write it without an asset selection (its stage jobs).

    Raises:
        SensorCursorError: ``cursor`` is not a cursor this sensor wrote.
    """
    previous, tables = parse_cursor(cursor, watched)
    busy = tables_being_written(instance, {w.table_key for w in watched} | _upstream_keys(exact), writers or {})
    state: dict[str, str] = {}
    changes: list[WatermarkChange] = []
    unreadable: list[str] = []
    notes: list[str] = []
    for dataflow in watched:  # one entry per dataflow: a dataflow writes one table
        key = dataflow.cursor_key
        before = (previous or {}).get(key)
        try:
            reading = feed.read(dataflow.dataflow_id)
        except WatermarkError as e:
            unreadable.append(f"table '{dataflow.table_key.to_user_string()}': {e}")
            if before is not None:
                state[key] = before
            continue
        if reading is None:
            continue
        moved = previous is not None and not dataflow.unchanged(before, reading)
        if moved and dataflow.table_key in busy:
            notes.append(f"{dataflow.token_of(reading)} held: run {busy[dataflow.table_key]} is writing the table")
            if before is not None:
                state[key] = before
            continue
        state[key] = dataflow.stored(reading)
        if moved:
            digest_only = before is not None and before.startswith(DIGEST_MARK)
            changes.append(WatermarkChange(dataflow, None if digest_only else before, reading, not digest_only))
    requests, planned = plan_requests(changes, instance, job)
    held = frozenset(t.name for t in exact if _upstream_keys([t]) & busy.keys())
    seen = tables if previous is not None else {}
    followed = evaluate_tables(exact, seen, job=job, trigger="watermark", held=held, missing_is_empty=True)
    notes += planned + [f"table '{t}' held: a Dagster run is writing what it reads" for t in sorted(held)]
    notes += followed.outside
    unreadable += followed.unreadable
    return WatermarkEvaluation(
        requests + followed.run_requests,
        dump_cursor(state, followed.state),
        len(changes) + len(followed.run_requests),
        unreadable,
        notes,
    )


IN_PROGRESS = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]
"""A run in these may still commit to a table and record its materialization after that."""


def tables_being_written(
    instance: dg.DagsterInstance, tables: set[dg.AssetKey], writers: Mapping[dg.AssetKey, frozenset[str]]
) -> dict[dg.AssetKey, str]:
    """``{table: run id}`` of the ``tables`` a Dagster run not yet finished may write.

    A Dagster run records a table's materialization after the commit (a stage run: after its whole
    driver run), so between the two its watermark has moved and the instance does not know who
    moved it yet. Held until the run finished, the change is then either recorded (the automation
    follows it) or not (the run failed before recording: nothing follows it but this sensor).
    """
    if not tables:
        return {}
    busy: dict[dg.AssetKey, str] = {}
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=IN_PROGRESS)):
        selected = run.asset_selection
        for table in tables:
            if (table in selected) if selected is not None else run.job_name in writers.get(table, frozenset()):
                busy.setdefault(table, run.run_id)
    return busy


def _writers(assets: Sequence[TableAsset]) -> dict[dg.AssetKey, frozenset[str]]:
    """The op jobs writing each table: its stages' jobs and the all-stages job (:mod:`..location.jobs`)."""
    return {
        a.spec.key: frozenset({ALL_STAGES_JOB, *(f"datacoolie_{identifier(d.stage or '')}" for d in a.table.dataflows)})
        for a in assets
    }


def _upstream_keys(tables: Sequence[PartitionedTable]) -> set[dg.AssetKey]:
    """The tables ``tables`` read: their sources are tables of this metadata (exact readers)."""
    return {key for t in tables for key in t.upstream_keys}


def plan_requests(
    changes: Sequence[WatermarkChange], instance: dg.DagsterInstance, job: str | None
) -> tuple[list[dg.RunRequest], list[str]]:
    """One run for the unpartitioned readers, one per window of each partitioned reader."""
    whole: dict[dg.AssetKey, list[str]] = {}
    windows: dict[tuple[dg.AssetKey, str], list[str]] = {}
    notes: list[str] = []
    for change in changes:
        known = _recorded(instance, change.dataflow.table_key, change.new.writer_run_id)
        for reader in change.dataflow.readers:
            name = reader.spec.key.to_user_string()
            if known and reader.spec.automation_condition is not None:
                notes.append(f"{name}: {change.token} was written by a Dagster run, the automation follows it")
            elif reader.partitioning is None:
                whole.setdefault(reader.spec.key, []).append(change.token)
            elif not replays_safely(reader.table.dataflows):
                notes.append(f"{name}: a window of an append/overwrite table is not run again; its stage job loads it")
            else:
                if not change.old_known:  # never replay from the first window on a guess
                    notes.append(
                        f"{name}: the watermark before {change.token} was kept as a digest; windows not requested"
                    )
                    continue
                keys, problem = windows_between(reader.partitioning, change.old, change.new.text)
                notes.extend([f"{name}: {problem}"] if problem else [])
                for partition in keys:
                    windows.setdefault((reader.spec.key, partition), []).append(change.token)
    tags = {TRIGGER_TAG: "watermark", AUTOMATED_TAG: "true"}
    requests = []
    if whole:
        run_key = ",".join(sorted(f"{k.to_user_string()}|{t}" for k, tokens in whole.items() for t in tokens))
        requests.append(dg.RunRequest(run_key=run_key, asset_selection=sorted(whole), job_name=job, tags=tags))
    for (key, partition), tokens in sorted(windows.items()):
        run_key = f"{key.to_user_string()}|{partition}|{','.join(sorted(tokens))}"
        requests.append(
            dg.RunRequest(run_key=run_key, asset_selection=[key], partition_key=partition, job_name=job, tags=tags)
        )
    return requests, notes


def _recorded(instance: dg.DagsterInstance, table_key: dg.AssetKey, writer_run_id: str | None) -> bool:
    """Whether one of the table's latest materializations names the dataflow run that wrote the watermark."""
    if writer_run_id is None:
        return False
    result = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=table_key), limit=RECENT_MATERIALIZATIONS, ascending=False
    )
    for record in result.records:
        event = record.asset_materialization
        value = event.metadata.get(constants.RUN_IDS) if event is not None else None
        run_ids = value.value if isinstance(value, dg.JsonMetadataValue) else value
        if isinstance(run_ids, list) and writer_run_id in run_ids:
            return True
    return False


def parse_cursor(
    cursor: str | None, watched: Sequence[WatchedDataflow] = ()
) -> tuple[dict[str, str] | None, dict[str, dict[str, Any]]]:
    """``{dataflow name: watermark text or its digest}`` (``None`` for a sensor never evaluated), and
    the exact readers' ``{table: {dataflow: upstream state}}``.

    A cursor written before the packed form (``"format": 1``, keyed by dataflow id) is read too:
    its ids map to the ``watched`` dataflows' names.

    Raises:
        SensorCursorError: not JSON (packed or plain), another format, or not the expected shape.
    """
    if cursor is None:
        return None, {}
    try:
        document = unpack_cursor(cursor)
    except ValueError as e:
        raise _cursor_error(f"not JSON: {e}") from e
    if not isinstance(document, dict) or document.get("format") not in (LEGACY_CURSOR_FORMAT, CURSOR_FORMAT):
        raise _cursor_error(f'expected an object with "format": {CURSOR_FORMAT}')
    watermarks = document.get("watermarks")
    if not isinstance(watermarks, dict) or not all(isinstance(v, str) for v in watermarks.values()):
        raise _cursor_error('"watermarks" must map dataflows to watermark text')
    tables = document.get("tables", {})
    if not isinstance(tables, dict) or not all(
        isinstance(v, dict) and all(isinstance(s, dict) for s in v.values()) for v in tables.values()
    ):
        raise _cursor_error('"tables" must map table names to {dataflow: upstream state}')
    if document["format"] == LEGACY_CURSOR_FORMAT:
        names = {w.dataflow_id: w.cursor_key for w in watched}
        watermarks = {names.get(k, k): v for k, v in watermarks.items()}
    return watermarks, tables


def _cursor_error(reason: str) -> SensorCursorError:
    return SensorCursorError(
        WATERMARK_SENSOR_NAME, reason, cleared="records the watermarks present, requesting nothing"
    )


def dump_cursor(watermarks: Mapping[str, str], tables: Mapping[str, Any] | None = None) -> str:
    document = {"format": CURSOR_FORMAT, "watermarks": dict(watermarks)}
    return pack_cursor(document | ({"tables": dict(tables)} if tables else {}))


def _text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]
