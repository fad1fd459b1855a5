"""The watermark sensor: tables follow a watermark that moved outside Dagster.

One sensor (``datacoolie_watermarks``) watches the watermark of every dataflow whose destination
another table of the metadata reads. When one advances — a ``datacoolie run`` from cron or CI, a
replay, any path — the tables reading that destination are requested:

* unpartitioned readers together in ONE run (the multi-asset orders them along the lineage);
* a partitioned reader once per window between the old and the new watermark, on the reader's
  window column (``chunk_column``): the windows the moved rows can fall into. Only readers loaded
  with ``merge_upsert``, ``merge_overwrite`` or ``scd2``: a window run again would append its rows a
  second time, or overwrite the table with one window (see :mod:`.partition_sensors`). And not the
  readers the partition sensor watches: it reads the change itself and requests exactly the windows
  its rows touched (late ones included), so this sensor does not request approximate ones as well.

**Not sensed twice.** A Dagster run that writes a table records a materialization whose
``datacoolie/dataflow_run_ids`` names the dataflow runs that wrote it, and Dagster's automation
(:func:`~datacoolie_dagster.automation.sensors.automation_for`) makes the readers follow that materialization.
The store tells which dataflow run wrote the current watermark (the file store: the settled commit
record beside it, when it holds the same watermark). A change whose writer the instance's recent
materializations of the table name is left to the automation for every reader that has one; the
others (partitioned readers of an unpartitioned table) are requested as for any change. Comparing
with what the instance recorded, rather than tagging the watermark with a Dagster run id, keeps
the store Dagster-free and also covers loads the CLI reported to the instance.

**Cursor.** ``{"format": 1, "watermarks": {dataflow_id: stored text}}``. The first evaluation only
records the watermarks (one that existed before the sensor started is not a change). Run keys are
``<table>[|<partition>]|<dataflow>@<digest of the new watermark>,…``: the same change seen twice
(a crash before the cursor was saved, a daemon restart) is deduplicated by Dagster. An unreadable
cursor raises :class:`~datacoolie_dagster.automation.sensors.SensorCursorError`; an unreadable watermark is
named in the skip reason and its cursor entry kept, so the change is seen once it reads.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from datacoolie_core.errors import WatermarkError
from datacoolie_dagster import constants
from datacoolie_dagster.automation.partition_sensors import partitioned_tables, replays_safely
from datacoolie_dagster.automation.sensors import AUTOMATED_TAG, TRIGGER_TAG, SensorCursorError, triggers_enabled
from datacoolie_dagster.automation.watermark_feed import WatermarkFeed, WatermarkReading, windows_between
from datacoolie_dagster.location.assets import TableAsset

WATERMARK_SENSOR_NAME = "datacoolie_watermarks"
CURSOR_FORMAT = 1
RECENT_MATERIALIZATIONS = 50
"""How many of a table's latest materializations are searched for the run that wrote a watermark."""


@dataclass(frozen=True)
class WatchedDataflow:
    """A dataflow whose watermark the sensor watches, its table and the tables reading that table."""

    dataflow_id: str
    table_key: dg.AssetKey
    readers: tuple[TableAsset, ...]
    """Readers to request; those the partition sensor watches are left out."""


@dataclass(frozen=True)
class WatermarkChange:
    dataflow: WatchedDataflow
    old: str | None
    new: WatermarkReading

    @property
    def token(self) -> str:
        return f"{self.dataflow.dataflow_id}@{hashlib.sha256(self.new.text.encode()).hexdigest()[:12]}"


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
    """Every dataflow writing a table that another (triggerable) table reads. No I/O."""
    by_table = {a.table.key: a for a in assets}
    # without an automation condition the partition sensor also watches a reader's DataCoolie sources
    partition_sensed = {t.asset_key for t in partitioned_tables(assets)}
    readers: dict[str, list[TableAsset]] = {}
    for asset in assets:
        left_to_partition_sensor = asset.spec.key in partition_sensed and asset.spec.automation_condition is None
        if triggers_enabled(asset.table) and not left_to_partition_sensor:
            for upstream in asset.table.upstream:
                readers.setdefault(upstream, []).append(asset)
    return [
        WatchedDataflow(dataflow_id, by_table[key].spec.key, tuple(found))
        for key, found in readers.items()
        if key in by_table
        for dataflow_id in by_table[key].table.dataflow_ids
    ]


def build_watermark_sensor(
    assets: Sequence[TableAsset],
    feed: WatermarkFeed,
    *,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    asset_job: str | None = None,
) -> list[dg.SensorDefinition]:
    """The sensor requesting the readers of a table whose watermark moved ([] when nothing reads one).

    ``feed`` reads the watermarks (:class:`~datacoolie_dagster.automation.watermark_feed.FileWatermarkFeed`
    for the file store). ``asset_job``: the job the runs launch under, as for the source sensor.
    """
    watched = watched_dataflows(assets)
    if not watched:
        return []
    readers = {r.spec.key for w in watched for r in w.readers}
    target: dict[str, Any] = {"job_name": asset_job} if asset_job else {"target": dg.AssetSelection.assets(*readers)}

    @dg.sensor(
        name=WATERMARK_SENSOR_NAME,
        **target,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=f"Runs the tables reading a table whose watermark moved outside Dagster ({len(watched)} dataflows).",
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        evaluation = evaluate_watermarks(watched, feed, context.cursor, context.instance, job=asset_job)
        if not evaluation.run_requests:
            return dg.SensorResult(skip_reason=evaluation.skip_reason(), cursor=evaluation.cursor)
        for note in [*evaluation.notes, *evaluation.unreadable]:
            context.log.info(note)
        return dg.SensorResult(run_requests=evaluation.run_requests, cursor=evaluation.cursor)

    return [_sensor]


def evaluate_watermarks(
    watched: Sequence[WatchedDataflow],
    feed: WatermarkFeed,
    cursor: str | None,
    instance: dg.DagsterInstance,
    *,
    job: str | None = None,
) -> WatermarkEvaluation:
    """Compare every watched watermark with ``cursor`` and request the readers of those that moved.

    Raises:
        SensorCursorError: ``cursor`` is not a cursor this sensor wrote.
    """
    previous = parse_cursor(cursor)
    state: dict[str, str] = {}
    changes: list[WatermarkChange] = []
    unreadable: list[str] = []
    for dataflow in watched:  # one entry per dataflow: a dataflow writes one table
        before = (previous or {}).get(dataflow.dataflow_id)
        try:
            reading = feed.read(dataflow.dataflow_id)
        except WatermarkError as e:
            unreadable.append(f"table '{dataflow.table_key.to_user_string()}': {e}")
            if before is not None:
                state[dataflow.dataflow_id] = before
            continue
        if reading is None:
            continue
        state[dataflow.dataflow_id] = reading.text
        if previous is not None and reading.text != before:
            changes.append(WatermarkChange(dataflow, before, reading))
    requests, notes = plan_requests(changes, instance, job)
    return WatermarkEvaluation(requests, dump_cursor(state), len(changes), unreadable, notes)


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


def parse_cursor(cursor: str | None) -> dict[str, str] | None:
    """``{dataflow_id: watermark text}``; ``None`` for a sensor never evaluated.

    Raises:
        SensorCursorError: not JSON, another format, or not the expected shape.
    """
    if cursor is None:
        return None
    try:
        document = json.loads(cursor)
    except ValueError as e:
        raise _cursor_error(f"not JSON: {e}") from e
    if not isinstance(document, dict) or document.get("format") != CURSOR_FORMAT:
        raise _cursor_error(f'expected an object with "format": {CURSOR_FORMAT}')
    watermarks = document.get("watermarks")
    if not isinstance(watermarks, dict) or not all(isinstance(v, str) for v in watermarks.values()):
        raise _cursor_error('"watermarks" must map dataflow ids to watermark text')
    return watermarks


def _cursor_error(reason: str) -> SensorCursorError:
    return SensorCursorError(
        WATERMARK_SENSOR_NAME, reason, cleared="records the watermarks present, requesting nothing"
    )


def dump_cursor(watermarks: Mapping[str, str]) -> str:
    return json.dumps({"format": CURSOR_FORMAT, "watermarks": dict(sorted(watermarks.items()))}, sort_keys=True)
