"""The watermark sensor and partitioned tables following their upstream partitions (fast tier).

Real Delta tables and watermark files under ``tmp_path``, a real Dagster instance; a "CLI run" is
the driver run the CLI makes (``datacoolie run``), outside Dagster. The daemon tests are in
``test_watermark_daemon.py``.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._core.events import DagsterEvent, DagsterEventType
from dagster._core.utils import make_new_run_id

from datacoolie_core.orchestration.driver import DataCoolieDriver
from datacoolie_dagster import build_definitions
from datacoolie_dagster.automation.sensing.builder import unpack_cursor
from datacoolie_dagster.automation.sensing.partition_sensors import PARTITION_SENSOR_NAME
from datacoolie_dagster.automation.sensing.sensors import (
    AUTOMATED_TAG,
    AUTOMATION_SENSOR_NAME,
    TRIGGER_TAG,
    SensorCursorError,
    build_automation_sensors,
    follow_upstreams,
)
from datacoolie_dagster.automation.sensing.watermark_feed import FileWatermarkFeed, windows_between
from datacoolie_dagster.automation.sensing.watermark_sensor import WATERMARK_SENSOR_NAME
from datacoolie_dagster.constants import RUN_IDS
from datacoolie_dagster.location.partitions import PartitionsConfig, TablePartitioning, build_partitions_def
from datacoolie_dagster.location.translator import DataCoolieTranslator, DataCoolieTranslatorData
from tests.dagster.conftest import land, materialize, table_assets
from tests.dagster.watermark_support import DAYS, LATE_ORDERS, deploy

ORDERS, ORDERS_MONTHLY = "silver/sales/orders", "silver/sales/orders_monthly"
EVENTS_MONTHLY = "silver/sales/events_monthly"
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as test_instance:
        yield test_instance


@pytest.fixture
def defs(lake: Path) -> dg.Definitions:
    return build_definitions(deploy(lake), state_base_path=lake / "state")


def cli_run(root: Path, stage: str = "landing2bronze") -> None:
    """What ``datacoolie run --stage <stage>`` does: the driver, no Dagster."""
    with DataCoolieDriver(metadata_base_path=str(root / "metadata.json"), state_base_path=str(root / "state")) as d:
        assert all(r.status in ("succeeded", "skipped") for r in d.run(stage=stage).runtimes)


def tick(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None) -> Any:
    """One evaluation of the watermark sensor, as the daemon runs it."""
    (sensor,) = [s for s in defs.sensors or [] if s.name == WATERMARK_SENSOR_NAME]
    return sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs))


def requested(data: Any) -> list[tuple[str, str | None]]:
    return sorted((k.to_user_string(), r.partition_key) for r in data.run_requests for k in r.asset_selection)


# --- partition mappings and automation conditions -----------------------------------------------


def test_monthly_table_reads_its_days_and_follows_them(defs: dg.Definitions) -> None:
    graph = defs.resolve_asset_graph()
    monthly, daily = dg.AssetKey.from_user_string(EVENTS_MONTHLY), dg.AssetKey(["bronze", "sales", "events"])
    assert isinstance(graph.get_partition_mapping(monthly, daily), dg.TimeWindowPartitionMapping)
    labels = {k.to_user_string(): graph.get(k).automation_condition for k in graph.get_all_asset_keys()}
    assert labels[ORDERS] == dg.AutomationCondition.eager()
    assert labels[EVENTS_MONTHLY] is not None
    assert labels[EVENTS_MONTHLY].get_label() == "follow_upstream_partitions"
    # a monthly table over an unpartitioned one: the watermark sensor requests its windows instead
    assert labels[ORDERS_MONTHLY] is None
    month = graph.get_partition_mapping(monthly, daily).get_upstream_mapped_partitions_result_for_partitions(
        graph.get(monthly).partitions_def.subset_with_partition_keys(["2024-01"]),  # type: ignore[union-attr]
        graph.get(monthly).partitions_def,
        graph.get(daily).partitions_def,  # type: ignore[arg-type]
    )
    assert sorted(month.partitions_subset.get_partition_keys()) == DAYS


@pytest.mark.slow
def test_the_month_is_requested_after_all_its_days_never_before(
    defs: dg.Definitions, instance: dg.DagsterInstance
) -> None:
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    monthly = dg.AssetKey.from_user_string(EVENTS_MONTHLY)
    for day in DAYS[:2]:
        assert materialize(defs, instance, ["bronze/sales/events"], partition_key=day).success
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert result.get_requested_partitions(monthly) == set(), "two of three days: the month waits"

    assert materialize(defs, instance, ["bronze/sales/events"], partition_key=DAYS[2]).success
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert result.get_requested_partitions(monthly) == {"2024-01"}
    assert result.total_requested == 1
    again = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert again.total_requested == 0, "handled: not requested again"


class _EagerMonths(DataCoolieTranslator):
    """Dagster's ``eager()`` on the monthly table, for comparison."""

    def get_asset_spec(self, data: DataCoolieTranslatorData) -> dg.AssetSpec:
        spec = super().get_asset_spec(data)
        if spec.key.to_user_string() != EVENTS_MONTHLY:
            return spec
        return spec.replace_attributes(automation_condition=dg.AutomationCondition.eager())


@pytest.mark.parametrize(
    ("translator", "months"), [(None, {"2024-01"}), (_EagerMonths(), set())], ids=["ours", "eager"]
)
@pytest.mark.slow
def test_an_older_month_follows_its_days_eager_only_the_latest(
    lake: Path, instance: dg.DagsterInstance, translator: DataCoolieTranslator | None, months: set[str]
) -> None:
    metadata = deploy(lake)
    document = json.loads(metadata.read_text())
    document["dataflows"][-1]["configure"]["dagster"]["partitions"]["end"] = "2024-03-01"  # latest window: February
    metadata.write_text(json.dumps(document))
    defs = build_definitions(metadata, state_base_path=lake / "state", translator=translator)
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    for day in DAYS:
        assert materialize(defs, instance, ["bronze/sales/events"], partition_key=day).success
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert result.get_requested_partitions(dg.AssetKey.from_user_string(EVENTS_MONTHLY)) == months


# --- the watermark sensor -----------------------------------------------------------------------


def test_a_cli_load_requests_the_readers_once(lake: Path, defs: dg.Definitions, instance: dg.DagsterInstance) -> None:
    first = tick(defs, instance, None)
    assert first.run_requests == []
    # nothing loaded yet: no watermark, and bronze orders (read by orders_monthly) seen empty
    tables = {ORDERS_MONTHLY: {"orders_monthly": {}}}
    assert unpack_cursor(first.cursor) == {"format": 2, "watermarks": {}, "tables": tables}

    cli_run(lake)  # orders Jan 5, Feb 5, Feb 7; events Jan 29-31: nothing stored before
    data = tick(defs, instance, first.cursor)
    # orders_monthly (partitioned, reading the unpartitioned bronze table): the windows its new rows
    # fall in, read from bronze's Delta change (one range run, 2024-01..2024-02)
    assert requested(data) == [(EVENTS_MONTHLY, "2024-01"), (ORDERS, None), (ORDERS_MONTHLY, None)]
    assert [(r.tags.get(RANGE_START), r.tags.get(RANGE_END)) for r in data.run_requests if r.partition_key is None][
        -1
    ] == ("2024-01", "2024-02")
    assert all(r.tags[TRIGGER_TAG] == "watermark" and r.tags[AUTOMATED_TAG] == "true" for r in data.run_requests)
    assert all(r.job_name == "__ASSET_JOB" for r in data.run_requests)
    # the cursor lost (a crash before it was saved): the same change maps to the same run keys
    assert [r.run_key for r in tick(defs, instance, first.cursor).run_requests] == [
        r.run_key for r in data.run_requests
    ]
    assert tick(defs, instance, data.cursor).run_requests == []

    land(lake, "sales/orders", LATE_ORDERS, batch=2)  # March
    cli_run(lake)
    later = tick(defs, instance, data.cursor)
    # the late March order: exactly its window, not the windows between the old and new watermark
    assert requested(later) == [(ORDERS, None), (ORDERS_MONTHLY, "2024-03")]


def test_the_partition_sensor_leaves_readers_of_this_metadatas_tables_alone(defs: dg.Definitions) -> None:
    """One owner per reader: the partition sensor watches external sources only."""
    assert PARTITION_SENSOR_NAME not in {s.name for s in defs.sensors or []}  # every partitioned table here reads ours


def test_a_window_of_an_append_table_is_never_requested_again(lake: Path, instance: dg.DagsterInstance) -> None:
    """A second run of an appended window would add its rows twice: such readers are left to their stage job."""
    deploy(lake)
    document = json.loads((lake / "metadata.json").read_text(encoding="utf-8"))
    for flow in document["dataflows"]:
        flow["destination"] = {k: v for k, v in flow["destination"].items() if k != "merge_keys"}
        flow["destination"]["load_type"] = "append"
    (lake / "metadata.json").write_text(json.dumps(document), encoding="utf-8")
    defs = build_definitions(lake / "metadata.json", state_base_path=lake / "state")
    first = tick(defs, instance, None)
    cli_run(lake)
    data = tick(defs, instance, first.cursor)
    # only the unpartitioned reader (an incremental run appends only new rows); no monthly window
    assert requested(data) == [(ORDERS, None)]
    assert PARTITION_SENSOR_NAME not in {s.name for s in defs.sensors or []}  # nothing for it either


def test_watermarks_stored_before_the_first_evaluation_are_not_changes(
    lake: Path, defs: dg.Definitions, instance: dg.DagsterInstance
) -> None:
    cli_run(lake)
    first = tick(defs, instance, None)
    assert first.run_requests == []
    assert len(unpack_cursor(first.cursor)["watermarks"]) == 2


def test_the_automation_split_over_sensors_requests_what_one_sensor_would(
    lake: Path, defs: dg.Definitions, instance: dg.DagsterInstance
) -> None:
    assets = follow_upstreams(table_assets(lake), DataCoolieTranslator())
    conditioned = {a.spec.key for a in assets if a.spec.automation_condition is not None}
    sensors = build_automation_sensors(assets, shard_size=1)
    assert [s.name for s in sensors] == [AUTOMATION_SENSOR_NAME] + [
        f"{AUTOMATION_SENSOR_NAME}_{i}" for i in range(2, len(conditioned) + 1)
    ]
    graph = defs.resolve_asset_graph()
    shares = [s.asset_selection.resolve(graph) & conditioned for s in sensors]
    assert sum(len(share) for share in shares) == len(conditioned)  # each table in exactly one sensor
    assert set().union(*shares) == conditioned

    def evaluate(selection: dg.AssetSelection | None, cursor: Any = None) -> Any:
        return dg.evaluate_automation_conditions(defs=defs, instance=instance, asset_selection=selection, cursor=cursor)

    whole, split = evaluate(None), [evaluate(s.asset_selection) for s in sensors]  # first ticks only record
    assert materialize(defs, instance, ["bronze/sales/orders"]).success
    whole = evaluate(None, whole.cursor)
    split = [evaluate(s.asset_selection, result.cursor) for s, result in zip(sensors, split, strict=True)]
    one = {key: whole.get_requested_partitions(key) for key in conditioned}
    assert any(one.values())
    assert {key: set().union(*(r.get_requested_partitions(key) for r in split)) for key in conditioned} == one


def test_a_cursor_written_before_the_packed_form_is_read_by_dataflow_id(
    lake: Path, defs: dg.Definitions, instance: dg.DagsterInstance
) -> None:
    cli_run(lake)
    first = tick(defs, instance, None)
    document = unpack_cursor(first.cursor)
    assert document["format"] == 2
    feed = FileWatermarkFeed(lake / "metadata.json", state_base_path=lake / "state")
    ids = {str(d.name): str(d.dataflow_id) for a in table_assets(lake) for d in a.table.dataflows}
    legacy = {ids[name]: feed.read(ids[name]).text for name in document["watermarks"]}  # type: ignore[union-attr]
    old = json.dumps({"format": 1, "watermarks": legacy, "tables": document.get("tables", {})})
    data = tick(defs, instance, old)
    assert data.run_requests == []  # the same watermarks: nothing moved
    assert unpack_cursor(data.cursor) == document


@pytest.mark.slow
def test_a_dagster_run_of_the_upstream_is_left_to_the_automation(
    lake: Path, defs: dg.Definitions, instance: dg.DagsterInstance
) -> None:
    cursor = tick(defs, instance, None).cursor
    automation = dg.evaluate_automation_conditions(defs=defs, instance=instance)  # its first tick only records
    assert materialize(defs, instance, ["bronze/sales/orders"]).success
    data = tick(defs, instance, cursor)
    # silver/sales/orders follows the materialization by eager(); the monthly reader has no
    # automation over an unpartitioned table: this sensor requests the windows bronze's rows fall in
    assert requested(data) == [(ORDERS_MONTHLY, None)]
    assert tick(defs, instance, data.cursor).run_requests == []
    automation = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=automation.cursor)
    assert automation.get_requested_partitions(dg.AssetKey.from_user_string(ORDERS)) == {None}


def test_a_cli_load_after_a_dagster_run_is_sensed(
    lake: Path, defs: dg.Definitions, instance: dg.DagsterInstance
) -> None:
    assert materialize(defs, instance, ["bronze/sales/orders"]).success
    cursor = tick(defs, instance, None).cursor
    land(lake, "sales/orders", LATE_ORDERS, batch=2)
    cli_run(lake)
    assert (ORDERS, None) in requested(tick(defs, instance, cursor))


def record_stage_run(lake: Path, instance: dg.DagsterInstance, run: dg.DagsterRun) -> None:
    """What a finished stage run leaves in the instance: each bronze table's materialization naming
    the dataflow run that wrote it (partitions included), then the run's success."""
    feed = FileWatermarkFeed(lake / "metadata.json", state_base_path=lake / "state")
    for asset in table_assets(lake):
        if asset.spec.key.path[0] != "bronze":
            continue
        (dataflow_id,) = asset.table.dataflow_ids
        reading = feed.read(dataflow_id)
        assert reading is not None
        assert reading.writer_run_id is not None
        partitions = DAYS if asset.partitioning is not None else [None]
        for partition in partitions:
            event = dg.AssetMaterialization(
                asset.spec.key, partition=partition, metadata={RUN_IDS: [reading.writer_run_id]}
            )
            instance.report_runless_asset_event(event)  # the sensor reads only the metadata
    instance.report_dagster_event(
        DagsterEvent(DagsterEventType.RUN_SUCCESS.value, job_name=run.job_name, message="done"), run.run_id
    )


def test_a_watermark_a_dagster_run_moved_is_held_while_it_runs_then_left_to_the_automation(
    lake: Path, defs: dg.Definitions, instance: dg.DagsterInstance
) -> None:
    """The race: a stage run saves each watermark as its commit lands and records the materializations
    after its whole driver run. A tick in between must not take the move for one made outside Dagster."""
    cursor = tick(defs, instance, None).cursor
    automation = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    run = instance.add_run(
        dg.DagsterRun(
            job_name="datacoolie_landing2bronze", run_id=make_new_run_id(), status=dg.DagsterRunStatus.STARTED
        )
    )
    cli_run(lake)  # the stage run's driver: commits, watermarks saved, nothing recorded in the instance yet

    during = tick(defs, instance, cursor)
    assert during.run_requests == []
    assert f"held: run {run.run_id} is writing the table" in (during.skip_message or "")
    assert tick(defs, instance, during.cursor).run_requests == []  # held on every tick, not forgotten

    record_stage_run(lake, instance, run)
    after = tick(defs, instance, during.cursor)
    # the readers the automation follows are left to it; only the windows nothing else follows
    assert requested(after) == [(ORDERS_MONTHLY, None)]
    assert tick(defs, instance, after.cursor).run_requests == []
    automation = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=automation.cursor)
    assert automation.get_requested_partitions(dg.AssetKey.from_user_string(ORDERS)) == {None}
    assert automation.get_requested_partitions(dg.AssetKey.from_user_string(EVENTS_MONTHLY)) == {"2024-01"}


@pytest.mark.parametrize(
    ("cursor", "reason"),
    [
        ("not json", "not JSON"),
        ('{"format": 3, "watermarks": {}}', '"format": 2'),
        ('{"format": 1, "watermarks": {"a": 1}}', "must map dataflows"),
        ("z:AAAA", "not a packed cursor"),
    ],
    ids=["garbage", "other-format", "bad-entry", "bad-packing"],
)
def test_a_bad_cursor_is_an_error(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str, reason: str) -> None:
    with pytest.raises(SensorCursorError, match=f"sensor '{WATERMARK_SENSOR_NAME}': unreadable cursor .*{reason}") as e:
        tick(defs, instance, cursor)
    assert str(e.value).endswith("(a cleared cursor records the watermarks present, requesting nothing)")
    assert pickle.loads(pickle.dumps(e.value)).args == e.value.args


def test_an_unreadable_watermark_is_named_and_its_entry_kept(
    lake: Path, defs: dg.Definitions, instance: dg.DagsterInstance
) -> None:
    cli_run(lake)
    cursor = tick(defs, instance, None).cursor
    (file,) = (lake / "state" / "watermarks").glob("*orders_to_bronze*/watermark_value.json")
    file.write_text("{torn")
    data = tick(defs, instance, cursor)
    assert data.run_requests == []
    assert "unreadable: table 'bronze/sales/orders': Watermark is corrupt" in (data.skip_message or "")
    assert str(file) in (data.skip_message or "")
    assert unpack_cursor(data.cursor) == unpack_cursor(cursor)


# --- windows between two watermarks -------------------------------------------------------------

MONTHS = PartitionsConfig(start="2024-01-01", end="2024-05-01", chunk_interval={"months": 1}, chunk_column="ts")
STEPS = PartitionsConfig(start=0, end=400, chunk_interval={"step": 100}, chunk_column="id")


def _wm(column: str, value: Any) -> str:
    if isinstance(value, str):
        return json.dumps({column: {"__datetime__": value}})
    return json.dumps({column: value})


@pytest.mark.parametrize(
    ("config", "old", "new", "keys"),
    [
        (MONTHS, None, _wm("ts", "2024-02-10T00:00:00"), ["2024-01", "2024-02"]),
        (MONTHS, _wm("ts", "2024-02-10T00:00:00"), _wm("ts", "2024-04-01T00:00:00"), ["2024-02", "2024-03", "2024-04"]),
        (MONTHS, _wm("ts", "2024-03-01T00:00:00"), _wm("ts", "2024-03-02T00:00:00"), ["2024-03"]),
        (MONTHS, None, _wm("other", "2024-01-10T00:00:00"), ["2024-01"]),  # a single column is used
        (STEPS, _wm("id", 150), _wm("id", 320), ["100-200", "200-300", "300-400"]),
    ],
    ids=["first-load", "months-moved", "window-start", "single-column", "integer-steps"],
)
def test_windows_between(config: PartitionsConfig, old: str | None, new: str, keys: list[str]) -> None:
    partitioning = TablePartitioning(config, build_partitions_def(config), None)
    assert windows_between(partitioning, old, new) == (keys, None)


def test_windows_need_a_comparable_value() -> None:
    partitioning = TablePartitioning(MONTHS, build_partitions_def(MONTHS), None)
    two = json.dumps({"a": 1, "b": 2})
    assert windows_between(partitioning, None, two) == (
        [],
        "the watermark has no value for the window column 'ts' to map to windows",
    )
    assert windows_between(partitioning, None, _wm("ts", 5))[1] == (
        "watermark value 5 cannot be compared with the windows (datetime.datetime(2024, 1, 1, 0, 0, tzinfo=datetime.timezone.utc))"
    )
