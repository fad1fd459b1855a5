"""Retries of failed automated runs: the delay arithmetic, the sensor's decisions against a real
instance, and a real daemon retrying a run that fails twice after 1 s and 2 s (base 1 s)."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from datacoolie_dagster.retries import (
    AUTOMATED,
    PARENT_RUN_ID,
    RETRY_DECISION,
    RETRY_DELAY,
    RETRY_DUE_AT,
    RETRY_NUMBER,
    ROOT_RUN_ID,
    RetryCursor,
    build_retry_sensor,
    is_automated,
    is_process_death,
    retry_delay,
)
from tests.dagster.cli_support import REPOSITORY
from tests.dagster.conftest import LINEAGE, definitions
from tests.dagster.daemon_support import prepare, running, wait_until

BASE = 60.0


class _Fixed(random.Random):
    """A random source whose ``uniform`` returns the upper end scaled by ``fraction``."""

    def __init__(self, fraction: float) -> None:
        super().__init__(0)
        self.fraction = fraction

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * self.fraction


@pytest.mark.parametrize(
    ("attempt", "fraction", "expected"),
    [(0, 0.0, 60.0), (1, 0.0, 120.0), (2, 0.0, 240.0), (0, 1.0, 66.0), (1, 1.0, 132.0), (3, 0.5, 504.0)],
    ids=["first-no-jitter", "second-doubles", "third-doubles-again", "first-full-jitter", "second-full-jitter",
         "fourth-half-jitter"],
)  # fmt: skip
def test_retry_delay_doubles_with_each_attempt_plus_jitter(attempt: int, fraction: float, expected: float) -> None:
    assert retry_delay(attempt, BASE, 0.1, _Fixed(fraction)) == pytest.approx(expected)


def test_retry_delay_stays_within_the_jitter_bound() -> None:
    rng = random.Random(7)
    delays = [retry_delay(2, BASE, 0.1, rng) for _ in range(500)]
    assert min(delays) >= 240.0
    assert max(delays) <= 264.0
    assert max(delays) - min(delays) > 10  # the jitter is really applied


def test_retry_delay_rejects_negative_inputs() -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        retry_delay(-1, BASE, 0.1, random.Random(0))


@pytest.mark.parametrize(
    ("tags", "automated"),
    [({AUTOMATED: "true"}, True), ({"dagster/backfill": "abc"}, True), ({}, False), ({AUTOMATED: "false"}, False),
     ({"dagster/schedule_name": "s"}, False)],
    ids=["tagged", "backfill", "manual", "tagged-false", "foreign-schedule"],
)  # fmt: skip
def test_is_automated(tags: dict[str, str], automated: bool) -> None:
    assert is_automated(tags) is automated


@pytest.mark.parametrize(
    ("reason", "died"),
    [(None, True), ("UNEXPECTED_TERMINATION", True), ("RUN_WORKER_RESTART", True), ("START_TIMEOUT", True),
     ("STEP_FAILURE", False), ("RUN_EXCEPTION", False), ("JOB_INITIALIZATION_FAILURE", False)],
    ids=["no-reason-killed-worker", "terminated", "worker-restart", "start-timeout", "step-failure", "run-exception",
         "init-failure"],
)  # fmt: skip
def test_is_process_death(reason: str | None, died: bool) -> None:
    tags = {} if reason is None else {"dagster/failure_reason": reason}
    assert is_process_death(tags) is died


@pytest.mark.parametrize("cursor", ["not json", '{"due": []}', '{"since": 1, "due": [{"x": 1}]}'], ids=str)
def test_an_unreadable_cursor_is_an_error(cursor: str) -> None:
    with pytest.raises(ValueError, match=r"unreadable cursor.*--delete"):
        RetryCursor.loads(cursor, "datacoolie_retry_sensor")


# --- the sensor against a real instance ------------------------------------------------------------


@dg.op
def _fail() -> None:
    raise dg.Failure("failing on purpose")


@dg.job
def always_fails() -> None:
    _fail()


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def test_instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as instance:
        yield instance


def _fail_run(instance: dg.DagsterInstance, tags: dict[str, str]) -> dg.DagsterRun:
    result = always_fails.execute_in_process(instance=instance, tags=tags, raise_on_error=False)
    run = instance.get_run_by_id(result.run_id)
    assert run is not None
    assert run.status == dg.DagsterRunStatus.FAILURE
    return run


def _tags(instance: dg.DagsterInstance, run: dg.DagsterRun) -> dict[str, str]:
    stored = instance.get_run_by_id(run.run_id)
    assert stored is not None
    return dict(stored.tags)


def _evaluate(
    sensor: dg.SensorDefinition, instance: dg.DagsterInstance, cursor: str | None
) -> tuple[list[dg.RunRequest], str | None]:
    context = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=dg.Definitions(jobs=[always_fails]))
    result = sensor(context)
    assert isinstance(result, dg.SensorResult)
    return list(result.run_requests or []), result.cursor


def test_a_failed_automated_run_is_retried_once_when_due(test_instance: dg.DagsterInstance) -> None:
    run = _fail_run(test_instance, {AUTOMATED: "true", "team": "sales"})
    clock = _Clock(time.time())
    sensor = build_retry_sensor(base_delay_seconds=BASE, jitter=0.1, jobs=[always_fails], clock=clock)

    # evaluation 1 — the failure is seen, the retry is due 60..66 s later: nothing launched yet
    requests, cursor = _evaluate(sensor, test_instance, None)
    assert requests == []
    delay = float(_tags(test_instance, run)[RETRY_DELAY])
    assert BASE <= delay <= BASE * 1.1

    # evaluation 2 — still before the due time
    clock.now += BASE - 1
    requests, cursor = _evaluate(sensor, test_instance, cursor)
    assert requests == []

    # evaluation 3 — due: one re-execution of the same job with the retry tags and the user's tags
    clock.now += delay
    requests, cursor = _evaluate(sensor, test_instance, cursor)
    assert [(r.run_key, r.job_name) for r in requests] == [(f"retry:{run.run_id}:1", "always_fails")]
    assert {k: requests[0].tags[k] for k in (AUTOMATED, RETRY_NUMBER, ROOT_RUN_ID, PARENT_RUN_ID, "team")} == {
        AUTOMATED: "true", RETRY_NUMBER: "1", ROOT_RUN_ID: run.run_id, PARENT_RUN_ID: run.run_id, "team": "sales"
    }  # fmt: skip
    assert RETRY_DUE_AT not in requests[0].tags

    # evaluation 4 — the retry is never requested twice
    clock.now += 3600
    assert _evaluate(sensor, test_instance, cursor)[0] == []


def test_a_lost_cursor_reuses_the_recorded_due_time(test_instance: dg.DagsterInstance) -> None:
    run = _fail_run(test_instance, {AUTOMATED: "true"})
    clock = _Clock(time.time())
    sensor = build_retry_sensor(base_delay_seconds=BASE, jobs=[always_fails], clock=clock)
    _evaluate(sensor, test_instance, None)
    due_at = float(_tags(test_instance, run)[RETRY_DUE_AT])

    # the cursor update was lost (a crash mid-tick): re-seen at a later time, the due time is unchanged
    clock.now += 30
    requests, _ = _evaluate(sensor, test_instance, None)
    assert requests == []
    assert float(_tags(test_instance, run)[RETRY_DUE_AT]) == due_at


def test_a_manual_run_is_never_retried(test_instance: dg.DagsterInstance) -> None:
    run = _fail_run(test_instance, {"team": "sales"})
    clock = _Clock(time.time())
    sensor = build_retry_sensor(base_delay_seconds=0, jobs=[always_fails], clock=clock)
    requests, cursor = _evaluate(sensor, test_instance, None)
    clock.now += 3600
    requests += _evaluate(sensor, test_instance, cursor)[0]
    assert requests == []
    assert RETRY_DUE_AT not in _tags(test_instance, run)


def test_the_budget_stops_retries(test_instance: dg.DagsterInstance) -> None:
    run = _fail_run(test_instance, {AUTOMATED: "true", RETRY_NUMBER: "2", ROOT_RUN_ID: "root"})
    sensor = build_retry_sensor(base_delay_seconds=0, max_retries=2, jobs=[always_fails], clock=_Clock(1e12))
    assert _evaluate(sensor, test_instance, None)[0] == []
    assert _tags(test_instance, run)[RETRY_DECISION] == "exhausted"


def test_a_killed_run_worker_is_retried_at_once(test_instance: dg.DagsterInstance) -> None:
    # the code server reports a killed run worker as a failure without a reason
    run = test_instance.create_run_for_job(always_fails, tags={AUTOMATED: "true", RETRY_NUMBER: "1", ROOT_RUN_ID: "r"})
    test_instance.report_run_failed(run)
    sensor = build_retry_sensor(base_delay_seconds=BASE, jobs=[always_fails], clock=_Clock(1e12))
    requests, _ = _evaluate(sensor, test_instance, None)
    assert [(r.run_key, r.tags[RETRY_NUMBER]) for r in requests] == [("retry:r:2", "2")]
    assert _tags(test_instance, run)[RETRY_DELAY] == "0.000"


def test_the_code_location_retries_every_job_and_every_asset_run(tmp_path: Path) -> None:
    defs = definitions(tmp_path, LINEAGE)
    repository = defs.get_repository_def()
    sensor = repository.get_sensor_def("datacoolie_retry_sensor")
    jobs = {job.name for job in repository.get_all_jobs() if not job.name.startswith("__")}
    assert {t.job_name for t in sensor.targets} == jobs
    assert "datacoolie_assets" in {t.job_name for t in sensor.targets}


# --- a real daemon ---------------------------------------------------------------------------------


def test_the_daemon_retries_an_automated_run_after_doubling_delays(tmp_path: Path) -> None:
    daemon = prepare(tmp_path, REPOSITORY / "dagster.yaml", {"DATACOOLIE_TEST_BASE_DELAY": "1"})
    with running(daemon), daemon.instance() as instance:
        daemon.launch("flaky", {AUTOMATED: "true"})
        wait_until(
            lambda: any(r.status == dg.DagsterRunStatus.SUCCESS for r in instance.get_runs()),
            55, "the third run to succeed", tmp_path / "daemon.log",
        )  # fmt: skip
        records = sorted(instance.get_run_records(), key=lambda r: int(r.dagster_run.tags.get(RETRY_NUMBER, "0")))
    runs = [r.dagster_run for r in records]

    assert [(r.status, r.tags.get(RETRY_NUMBER)) for r in runs] == [
        (dg.DagsterRunStatus.FAILURE, None), (dg.DagsterRunStatus.FAILURE, "1"), (dg.DagsterRunStatus.SUCCESS, "2"),
    ]  # fmt: skip
    root = runs[0].run_id
    assert [r.tags.get(ROOT_RUN_ID) for r in runs[1:]] == [root, root]
    for attempt, parent in enumerate(runs[:2]):
        delay = float(parent.tags[RETRY_DELAY])
        assert 2**attempt <= delay <= 2**attempt * 1.1  # base 1 s doubling, jitter at most 10 %
        # launched once due, and due at least the delay after the parent ended
        assert records[attempt + 1].create_timestamp.timestamp() >= float(parent.tags[RETRY_DUE_AT])
        assert float(parent.tags[RETRY_DUE_AT]) >= (records[attempt].end_time or 0) + 2**attempt
