"""Sensors: runs for new source data, and downstream tables following their upstream.

**New source data** — :func:`build_source_sensors` builds ONE sensor (``datacoolie_sources``) over
every destination table that reads an external source (not another dataflow's destination). Each
evaluation fingerprints those sources cheaply (:mod:`.observations`) and compares them with its
cursor, which keeps a digest of each table's fingerprints (packed JSON, :func:`.builder.pack_cursor`). Every table whose fingerprint
changed and whose source holds data goes into ONE ``RunRequest`` selecting exactly those tables,
tagged ``datacoolie/trigger=sensor`` and ``datacoolie/automated=true``. Its ``run_key`` names each
table with a digest of its fingerprint, so the same change seen twice (a crash before the cursor was
saved, a daemon restart) is deduplicated by Dagster even without the cursor.

* First evaluation (no cursor), and any table the cursor does not hold yet (new in the metadata,
  or the cursor deleted): the sources' present state is the baseline and nothing is requested. Data
  that was there before the sensor saw the table is not its business (it is loaded already, or the
  stage job or a materialization loads it); only changes after that are requested. Switching the
  sensor on, or losing its cursor, never replays history. A table whose sources cannot be read when
  first seen (a landing folder not created yet) is recorded as seen empty: what it gets once
  readable is new.
* A source that cannot be read (missing folder or table, database error) is named in the skip
  reason (or the sensor log when other tables are requested) and its table's cursor entry is kept,
  so the change is seen once the source is readable.
* An unreadable cursor raises :class:`SensorCursorError`: never a silent restart from zero.
* The catalog sees each change: a source whose fingerprint changed gets an ``AssetObservation`` on
  its external asset, with the fingerprint as metadata and a data version (the Delta version, else a
  digest of the fingerprint), so "what did the source look like when this table last loaded" reads
  off the asset's history, and Dagster's staleness tracking works on it.
* Not sensed: partitioned tables (their runs need a partition: the partition sensor owns them), tables whose
  sources are all function sources, and tables with a dataflow that sets
  ``configure.dagster.sensor: false`` (a run materializes the whole table, so one opted-out writer
  keeps the table out of every automatic trigger, automation included).

**Downstream following** — :func:`with_automation` gives a table that reads another DataCoolie
table ``AutomationCondition.eager()``: it runs after an upstream materializes, once no upstream is
missing or in progress, so a lineage is followed level by level, each level after the previous
one succeeded. A partitioned table whose upstreams are partitioned gets
:func:`follow_upstream_partitions` instead: each of its partitions runs after the upstream
partitions it reads (a month after all its days), in any window. :func:`build_automation_sensor`
evaluates those conditions (:func:`build_automation_sensors`: one sensor per ~150 tables);
:func:`follow_upstreams` sets them, with explicit partition mappings.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import dagster as dg

from datacoolie_core import DataFlow
from datacoolie_core.api import DataCoolieError, SourceError
from datacoolie_dagster.automation.sensing.builder import (
    SensorOutcome,
    build_sensing_sensor,
    pack_cursor,
    unpack_cursor,
)
from datacoolie_dagster.automation.sensing.sensable import Fingerprint, has_data, is_sensable, ref_name
from datacoolie_dagster.constants import AUTOMATED, NAMESPACE, TRIGGER
from datacoolie_dagster.dagster_internal import DATA_VERSION_TAG
from datacoolie_dagster.location.assets import TableAsset
from datacoolie_dagster.location.dataflow_settings import dagster_settings
from datacoolie_dagster.location.tables import DestinationTable, SourceRef, source_refs
from datacoolie_dagster.location.translator import DataCoolieTranslator, with_partition_mappings

SOURCE_SENSOR_NAME = "datacoolie_sources"
AUTOMATION_SENSOR_NAME = "datacoolie_automation"
AUTOMATION_SHARD_SIZE = 150
"""Tables with an automation condition per automation sensor (see :func:`build_automation_sensors`)."""
TRIGGER_TAG = TRIGGER
AUTOMATED_TAG = AUTOMATED
CURSOR_FORMAT = 1
"""The partition sensor's cursor (and the source sensor's before digests): ``{table: {dataflow: state}}``."""
SOURCE_CURSOR_FORMAT = 2
"""The source sensor's cursor: ``{table: digest of its sources' fingerprints}``."""


class SensorCursorError(DataCoolieError):
    """A sensor cursor that cannot be read: the sensor stops instead of starting again from zero.

    ``cleared`` says what the sensor does with no cursor (the hint of ``--delete``).
    """

    def __init__(
        self, sensor: str, reason: str, cleared: str = "takes the present as its baseline, requesting nothing"
    ) -> None:
        self.sensor = sensor
        self.reason = reason
        self.cleared = cleared
        super().__init__(
            f"sensor '{sensor}': unreadable cursor ({reason}); inspect it with `dagster sensor cursor {sensor}`, "
            f"then fix it with `--set` or clear it with `--delete` (a cleared cursor {cleared})"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (SensorCursorError, (self.sensor, self.reason, self.cleared))


@dataclass(frozen=True)
class SensedTable:
    """A destination table the source sensor watches, with the external sources of its dataflows."""

    asset_key: dg.AssetKey
    sources: tuple[tuple[DataFlow, tuple[SourceRef, ...]], ...]
    source_keys: tuple[tuple[SourceRef, dg.AssetKey], ...] = ()
    """The external asset of each source ref (observed when its fingerprint changes)."""

    @property
    def name(self) -> str:
        return self.asset_key.to_user_string()


@dataclass(frozen=True)
class SourceEvaluation:
    """The outcome of one evaluation: at most one run request, the next cursor, what was unreadable."""

    run_request: dg.RunRequest | None
    cursor: str
    unreadable: list[str] = field(default_factory=list)
    sensed: int = 0
    observations: list[dg.AssetObservation] = field(default_factory=list)
    """One per external source whose fingerprint changed."""

    def skip_reason(self) -> str:
        if self.unreadable:
            return "sources that cannot be read: " + "; ".join(self.unreadable)
        return f"no new source data for the {self.sensed} sensed table(s)"


def build_source_sensors(
    assets: Sequence[TableAsset],
    *,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    translator: DataCoolieTranslator | None = None,
    asset_job: str | None = None,
) -> list[dg.SensorDefinition]:
    """One sensor requesting runs of the tables whose external sources got new data ([] if none).

    ``translator`` names the external source assets it observes (the one that built ``assets``).
    ``asset_job``: the job the runs launch under (see :func:`.builder.build_sensing_sensor`).

    Example:
        >>> assets, _ = build_table_assets(dataflows, DataCoolieTranslator())
        >>> defs = dg.Definitions(assets=build_multi_assets(assets), sensors=build_source_sensors(assets))
    """
    sensed = sensed_tables(assets, translator or DataCoolieTranslator())
    if not sensed:
        return []

    def evaluate(context: dg.SensorEvaluationContext) -> SensorOutcome:
        evaluation = evaluate_sources(sensed, context.cursor, sensor_name=SOURCE_SENSOR_NAME, job=asset_job)
        requests = [evaluation.run_request] if evaluation.run_request is not None else []
        warnings = [evaluation.skip_reason()] if evaluation.unreadable else []
        return SensorOutcome(
            requests,
            evaluation.cursor,
            evaluation.skip_reason(),
            warnings=warnings,
            asset_events=evaluation.observations,
        )

    sensor = build_sensing_sensor(
        name=SOURCE_SENSOR_NAME,
        description=f"Runs the DataCoolie tables whose external sources got new data ({len(sensed)} tables).",
        selection=[t.asset_key for t in sensed],
        asset_job=asset_job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        evaluate=evaluate,
    )
    return [sensor]


def sensed_tables(assets: Sequence[TableAsset], translator: DataCoolieTranslator | None = None) -> list[SensedTable]:
    """The tables the source sensor watches (see the module docstring for what is left out). No I/O."""
    translator = translator or DataCoolieTranslator()
    sensed = []
    for asset in assets:
        table = asset.table
        if asset.partitioning is not None or not triggers_enabled(table):
            continue
        external = [(d, tuple(r for r in source_refs(d) if r in table.sources)) for d in table.dataflows]
        watched = tuple((d, refs) for d, refs in external if is_sensable(d, refs))
        if watched:
            keys = tuple((ref, translator.get_source_key(ref)) for _, refs in watched for ref in refs)
            sensed.append(SensedTable(asset.spec.key, watched, keys))
    return sensed


def evaluate_sources(
    sensed: Sequence[SensedTable],
    cursor: str | None,
    *,
    sensor_name: str,
    job: str | None = None,
) -> SourceEvaluation:
    """Fingerprint every sensed table's sources and compare with ``cursor``; runs go to ``job``.

    Raises:
        SensorCursorError: ``cursor`` is not a cursor this sensor wrote.
    """
    # the fingerprint readers (deltalake, sqlglot, Polars) load with the first evaluation, not with the code location
    from datacoolie_dagster.automation.sensing.observations import fingerprint_source

    previous = parse_source_cursor(cursor, sensor_name)
    state = {t.name: previous[t.name] for t in sensed if t.name in previous}  # forget unsensed tables
    changed: list[tuple[SensedTable, dict[str, Fingerprint]]] = []
    observations: dict[dg.AssetKey, dg.AssetObservation] = {}
    unreadable: list[str] = []
    for table in sensed:
        try:
            fingerprints = {str(d.name or d.dataflow_id): fingerprint_source(d, refs) for d, refs in table.sources}
        except SourceError as e:
            unreadable.append(f"table '{table.name}': {e}")
            state.setdefault(
                table.name, fingerprint_digest({})
            )  # first seen unreadable (a folder not created yet): all it gets is new
            continue
        digest = fingerprint_digest(fingerprints)
        if digest != previous.get(table.name):
            state[table.name] = digest
            observations.update((o.asset_key, o) for o in _observations(table, fingerprints))
            if table.name in previous and any(has_data(f) for f in fingerprints.values()):
                changed.append((table, fingerprints))  # a table first seen now: its present is the baseline
    run_request = _run_request(changed, job)
    return SourceEvaluation(
        run_request, dump_source_cursor(state), unreadable, len(sensed), list(observations.values())
    )


def parse_source_cursor(cursor: str | None, sensor_name: str) -> dict[str, str]:
    """``{table: digest of its sources' fingerprints}``; ``None`` (never evaluated) is empty.

    A cursor written before the digests (``"format": 1``, the fingerprints themselves) reads as
    their digests, so an upgrade is a quiet tick, not a change of every table.

    Raises:
        SensorCursorError: not a cursor this sensor wrote.
    """
    if cursor is None:
        return {}
    document = _document(cursor, sensor_name)
    if document.get("format") == CURSOR_FORMAT:
        return {table: fingerprint_digest(entry) for table, entry in _tables(document, sensor_name).items()}
    tables = document.get("tables")
    if document.get("format") != SOURCE_CURSOR_FORMAT or not isinstance(tables, dict):
        raise SensorCursorError(sensor_name, f'expected an object with "format": {SOURCE_CURSOR_FORMAT}')
    if not all(isinstance(v, str) for v in tables.values()):
        raise SensorCursorError(sensor_name, '"tables" must map table names to fingerprint digests')
    return tables


def dump_source_cursor(tables: Mapping[str, str]) -> str:
    return pack_cursor({"format": SOURCE_CURSOR_FORMAT, "tables": dict(tables)})


def parse_cursor(cursor: str | None, sensor_name: str) -> dict[str, dict[str, Any]]:
    """``{table: {dataflow: state}}`` of a partition sensor cursor; ``None`` (never evaluated) is empty.

    Raises:
        SensorCursorError: not JSON (packed or plain), another format version, or not the expected shape.
    """
    if cursor is None:
        return {}
    document = _document(cursor, sensor_name)
    if document.get("format") != CURSOR_FORMAT:
        raise SensorCursorError(sensor_name, f'expected an object with "format": {CURSOR_FORMAT}')
    return _tables(document, sensor_name)


def dump_cursor(tables: Mapping[str, Mapping[str, Any]]) -> str:
    return pack_cursor({"format": CURSOR_FORMAT, "tables": dict(tables)})


def _document(cursor: str, sensor_name: str) -> dict[str, Any]:
    try:
        document = unpack_cursor(cursor)
    except ValueError as e:
        raise SensorCursorError(sensor_name, f"not JSON: {e}") from e
    if not isinstance(document, dict):
        raise SensorCursorError(sensor_name, "expected a JSON object")
    return document


def _tables(document: Mapping[str, Any], sensor_name: str) -> dict[str, dict[str, Any]]:
    tables = document.get("tables")
    if not isinstance(tables, dict) or not all(_is_table_entry(v) for v in tables.values()):
        raise SensorCursorError(sensor_name, '"tables" must map table names to {dataflow: fingerprint object}')
    return tables


def _is_table_entry(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(f, dict) for f in value.values())


def _run_request(
    changed: Sequence[tuple[SensedTable, dict[str, Fingerprint]]], job_name: str | None
) -> dg.RunRequest | None:
    if not changed:
        return None
    # the key is a function of the data seen, not of the time: the same change always maps to it
    run_key = ",".join(sorted(f"{table.name}@{fingerprint_digest(fingerprints)}" for table, fingerprints in changed))
    return dg.RunRequest(
        run_key=run_key,
        asset_selection=[table.asset_key for table, _ in changed],
        job_name=job_name,
        tags={TRIGGER_TAG: "sensor", AUTOMATED_TAG: "true"},
    )


def _observations(table: SensedTable, fingerprints: Mapping[str, Fingerprint]) -> Iterator[dg.AssetObservation]:
    """What each external source of ``table`` looks like now: its fingerprint and a data version."""
    keys = dict(table.source_keys)
    for dataflow, refs in table.sources:
        fingerprint = fingerprints[str(dataflow.name or dataflow.dataflow_id)]
        for ref in refs:
            versions = fingerprint.get("delta_versions")
            own = {"delta_version": versions[ref_name(ref)]} if versions is not None else fingerprint
            version = str(own["delta_version"]) if versions is not None else fingerprint_digest(own)
            yield dg.AssetObservation(
                asset_key=keys[ref],
                metadata={
                    f"{NAMESPACE}{k}": dg.MetadataValue.json(v) if isinstance(v, dict) else v for k, v in own.items()
                },
                tags={DATA_VERSION_TAG: version},
            )


def fingerprint_digest(fingerprints: Mapping[str, Any]) -> str:
    """The digest naming ``fingerprints`` in run keys, data versions and the cursor (48 bits)."""
    return hashlib.sha256(json.dumps(fingerprints, sort_keys=True).encode()).hexdigest()[:12]


# --- downstream following -------------------------------------------------------------------------


def automation_for(
    asset: TableAsset, upstream_partitions: Mapping[dg.AssetKey, dg.PartitionsDefinition | None] | None = None
) -> dg.AutomationCondition | None:
    """The condition making ``asset`` follow the DataCoolie tables it reads; ``None`` when it follows none.

    ``upstream_partitions`` maps every table of the code location to its partitions definition.

    * Unpartitioned table reading another DataCoolie table: ``eager()``.
    * Partitioned table whose DataCoolie upstreams are all partitioned:
      :func:`follow_upstream_partitions` (each partition after the partitions it reads, any window).
    * Partitioned table reading an unpartitioned table: none. Every partition would depend on the
      whole upstream, so one upstream load would request every window; the watermark sensor
      requests the windows the load moved instead (:mod:`.watermark_sensor`).
    """
    table = asset.table
    if not table.upstream or not triggers_enabled(table):
        return None
    if asset.spec.partitions_def is None and asset.partitioning is None:
        return dg.AutomationCondition.eager()
    known = upstream_partitions or {}
    parents = [known[d.asset_key] for d in asset.spec.deps if d.asset_key in known]
    if parents and all(p is not None for p in parents):
        return follow_upstream_partitions()
    return None


def follow_upstream_partitions() -> dg.AutomationCondition:
    """``eager()`` over every window of a partitioned table, not only the latest.

    A partition is requested once one of the upstream partitions it reads (through the dep's
    partition mapping: a month reads all its days) was updated since the partition was last
    requested, and then only when none of them is missing or in progress, nor the partition itself
    in progress: a month runs after all its days, never before. Missing partitions that no upstream
    update touched are not requested (``eager()``'s ``newly_missing`` would request every window
    of a new table at once).
    """
    condition = dg.AutomationCondition
    return (
        condition.any_deps_updated().since_last_handled()
        & ~condition.any_deps_missing()
        & ~condition.any_deps_in_progress()
        & ~condition.in_progress()
    ).with_label("follow_upstream_partitions")


def with_automation(
    spec: dg.AssetSpec,
    table: DestinationTable,
    upstream_partitions: Mapping[dg.AssetKey, dg.PartitionsDefinition | None] | None = None,
) -> dg.AssetSpec:
    """``spec`` with :func:`automation_for`'s condition; a condition the translator set is kept."""
    if spec.automation_condition is not None:
        return spec
    condition = automation_for(TableAsset(table, spec, None), upstream_partitions)
    return spec if condition is None else spec.replace_attributes(automation_condition=condition)


def follow_upstreams(assets: Sequence[TableAsset], translator: DataCoolieTranslator) -> list[TableAsset]:
    """``assets`` with explicit partition mappings on their deps and their automation conditions."""
    partitions = {a.spec.key: a.spec.partitions_def for a in assets}
    followed = []
    for asset in assets:
        spec = with_partition_mappings(asset.spec, partitions, translator)
        followed.append(replace(asset, spec=with_automation(spec, asset.table, partitions)))
    return followed


def build_automation_sensor(
    *,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    name: str = AUTOMATION_SENSOR_NAME,
    target: dg.AssetSelection | None = None,
    tables: int | None = None,
) -> dg.AutomationConditionSensorDefinition:
    """A sensor evaluating the automation conditions of ``target`` (every asset by default; replaces
    Dagster's default one). ``tables``: how many tables with a condition it holds (its description)."""
    share = f" ({tables} tables)" if tables is not None else ""
    return dg.AutomationConditionSensorDefinition(
        name=name,
        target=target if target is not None else dg.AssetSelection.all(),
        run_tags={TRIGGER_TAG: "automation", AUTOMATED_TAG: "true"},
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=f"Materializes DataCoolie tables after the tables they read were materialized{share}.",
    )


def build_automation_sensors(
    assets: Sequence[TableAsset],
    *,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    shard_size: int = AUTOMATION_SHARD_SIZE,
) -> list[dg.AutomationConditionSensorDefinition]:
    """The sensors evaluating the tables' automation conditions, at most about ``shard_size`` tables each.

    One evaluation costs Dagster a few milliseconds per table with a condition (its ~30 condition
    nodes each get a context, an id and a serialized result in the cursor), and more again in the
    daemon's garbage collector: what an evaluation allocates lives until its end, and once that
    reaches a quarter of the daemon's heap (the code location's asset graph) a full collection
    walks the whole heap. At 300 tables per evaluation that came with most evaluations at 10,000
    dataflows, at 150 with fewer than half (``docs/benchmarks.md``). So the code location with
    ``k`` times ``shard_size`` such tables gets ``k`` sensors: ``datacoolie_automation``,
    ``datacoolie_automation_2``… each evaluating its share. A table's sensor is fixed by a digest of
    its key and the number of sensors: adding tables moves tables between sensors only when that
    number changes (a moved table's first evaluation by its new sensor takes the present as its
    baseline). The first sensor also holds every asset outside these tables (none is left to
    Dagster's default automation sensor).
    """
    conditioned = sorted(a.spec.key for a in assets if a.spec.automation_condition is not None)
    count = max(1, math.ceil(len(conditioned) / shard_size))
    if count == 1:
        return [
            build_automation_sensor(minimum_interval_seconds=minimum_interval_seconds, default_status=default_status)
        ]
    shards: list[list[dg.AssetKey]] = [[] for _ in range(count)]
    for key in conditioned:
        shards[int(hashlib.sha256(key.to_user_string().encode()).hexdigest()[:8], 16) % count].append(key)
    others = [dg.AssetSelection.assets(*keys) for keys in shards[1:]]
    first = dg.AssetSelection.all() - functools.reduce(operator.or_, others)
    return [
        build_automation_sensor(
            minimum_interval_seconds=minimum_interval_seconds,
            default_status=default_status,
            name=AUTOMATION_SENSOR_NAME if index == 0 else f"{AUTOMATION_SENSOR_NAME}_{index + 1}",
            target=target,
            tables=len(shards[index]),
        )
        for index, target in enumerate([first, *others])
    ]


def triggers_enabled(table: DestinationTable) -> bool:
    """``False`` when a dataflow of ``table`` sets ``configure.dagster.sensor: false``."""
    return all(dagster_settings(d).sensor for d in table.dataflows)
