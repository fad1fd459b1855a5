"""One retry budget per dataflow: ``retry_count`` retries inside the run, never multiplied by the retry sensor.

The sensor re-launches a failed automated run only when no step of it failed for good: a dataflow
that failed has already been retried by the driver, and a step refused for changed metadata fails
again until the code location is reloaded. Real runs on a real instance; the sensor is evaluated as
the daemon would, and each run it requests is executed.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from datacoolie_dagster.automation.retries import ASSET_SENSOR_NAME, SENSOR_NAME, build_retry_sensor
from datacoolie_dagster.constants import AUTOMATED, DATAFLOWS_RETRIED, FINAL_FAILURE, RETRY_DECISION, RETRY_NUMBER
from datacoolie_dagster.location.factory import build_definitions
from datacoolie_dagster.location.snapshot import METADATA_CHANGED
from tests.core.orchestration.driver_support import Lake, function_source

STAGE_JOB = "datacoolie_bronze2silver"
ORDERS = dg.AssetKey(["lake", "orders"])


def _always_failing(root: Path) -> tuple[Path, Path]:
    """Metadata with one dataflow whose source fails transiently on every call, and its call counter."""
    counter = root / "calls"
    source = function_source("flaky_orders", counter_file=str(counter), failures=10_000)
    lake = Lake(root).add("orders", source=source)
    return lake.write(), counter


def _stage_run(defs: dg.Definitions, instance: dg.DagsterInstance, request: dg.RunRequest) -> str:
    job = defs.resolve_job_def(STAGE_JOB)
    return job.execute_in_process(instance=instance, tags=request.tags, raise_on_error=False).run_id


def _asset_run(defs: dg.Definitions, instance: dg.DagsterInstance, request: dg.RunRequest) -> str:
    job = defs.resolve_implicit_global_asset_job_def()
    selection = request.asset_selection or [ORDERS]
    return job.execute_in_process(
        instance=instance, tags=request.tags, asset_selection=selection, raise_on_error=False
    ).run_id


KINDS = {"stage-job": (SENSOR_NAME, _stage_run), "asset-run": (ASSET_SENSOR_NAME, _asset_run)}


def _relaunch_until_done(defs: dg.Definitions, instance: dg.DagsterInstance, kind: str) -> list[str]:
    """Launch an automated run, then evaluate the retry sensor as the daemon does and run what it
    requests, until it requests nothing; the run ids."""
    sensor_name, execute = KINDS[kind]
    sensor = defs.resolve_sensor_def(sensor_name)
    runs, cursor = [execute(defs, instance, dg.RunRequest(tags={AUTOMATED: "true"}))], None
    for _ in range(10):  # more than any budget here: a loop that does not end is the failure
        tick = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs))
        cursor = tick.cursor
        if not tick.run_requests:
            return runs
        runs += [execute(defs, instance, request) for request in tick.run_requests]
    raise AssertionError(f"the retry sensor kept re-launching: {len(runs)} runs")


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("retry_count", [0, 2], ids=["no-driver-retries", "two-driver-retries"])
def test_an_always_failing_dataflow_is_attempted_one_plus_retry_count_times_in_all(
    tmp_path: Path, retry_count: int, kind: str
) -> None:
    metadata, counter = _always_failing(tmp_path)
    defs = build_definitions(
        metadata,
        state_base_path=tmp_path / "state",
        retry_count=retry_count,
        retry_delay=0,
        include_sensors=False,
        run_retries=3,
        retry_base_delay=0,
    )
    with dg.instance_for_test() as instance:
        runs = _relaunch_until_done(defs, instance, kind)
        failed = instance.get_run_by_id(runs[0])
        assert failed is not None
        assert failed.status == dg.DagsterRunStatus.FAILURE
        decision = failed.tags.get(RETRY_DECISION)
    assert int(counter.read_text()) == 1 + retry_count  # the whole budget, and nothing on top
    assert len(runs) == 1
    assert decision == DATAFLOWS_RETRIED


@dg.op
def _changed() -> None:
    raise dg.Failure("metadata changed", metadata={FINAL_FAILURE: METADATA_CHANGED})


@dg.op
def _crashed() -> None:
    raise dg.Failure("the step crashed before the driver ran")


@dg.job
def changed_metadata() -> None:
    _changed()


@dg.job
def crashed() -> None:
    _crashed()


@pytest.mark.parametrize(
    ("job", "requests", "decision"),
    [(changed_metadata, 0, METADATA_CHANGED), (crashed, 1, None)],
    ids=["final-failure-not-relaunched", "other-failure-relaunched"],
)
@pytest.mark.slow
def test_the_sensor_relaunches_only_failures_that_are_not_final(
    job: dg.JobDefinition, requests: int, decision: str | None
) -> None:
    sensor = build_retry_sensor(base_delay_seconds=0, jobs=[job], clock=lambda: 1e12)
    with dg.instance_for_test() as instance:
        result = job.execute_in_process(instance=instance, tags={AUTOMATED: "true"}, raise_on_error=False)
        context = dg.build_sensor_context(instance=instance, definitions=dg.Definitions(jobs=[job]))
        tick = sensor.evaluate_tick(context)
        run = instance.get_run_by_id(result.run_id)
        assert run is not None
    assert len(tick.run_requests or []) == requests
    assert run.tags.get(RETRY_DECISION) == decision
    assert all(r.tags[RETRY_NUMBER] == "1" for r in tick.run_requests or [])
