"""Retries of failed automated runs: the delay arithmetic, the sensor's decisions against a real
instance (also for runs of a real asset backfill), and a real daemon on SQLite and PostgreSQL
retrying a run that fails twice after 1 s and 2 s (base 1 s) and a SIGKILLed run at once."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.remote_origin import (  # pinned: dagster 1.13.27 (how a run records its location)
    RegisteredCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)

from datacoolie_dagster.automation.retries import ASSET_SENSOR_NAME, SENSOR_NAME, build_retry_sensor
from datacoolie_dagster.automation.retry_policy import (
    AUTO_RETRY_RUN_ID_TAG,
    AUTOMATED,
    BACKFILL_TAG,
    DATACOOLIE_BACKFILL,
    PARENT_RUN_ID,
    RETRY_DECISION,
    RETRY_DELAY,
    RETRY_DUE_AT,
    RETRY_NUMBER,
    ROOT_RUN_ID,
    WILL_RETRY_TAG,
    RetryCursor,
    is_automated,
    is_process_death,
    retry_backfill_tags,
    retry_delay,
)
from tests.dagster.conftest import LINEAGE, PARTITIONS, InstanceSettings, definitions
from tests.dagster.daemon_support import Daemon, prepare, running, wait_until

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
    [({AUTOMATED: "true"}, True), ({BACKFILL_TAG: "abc"}, True), ({DATACOOLIE_BACKFILL: "abc"}, True), ({}, False),
     ({AUTOMATED: "false"}, False), ({"dagster/schedule_name": "s"}, False)],
    ids=["tagged", "backfill", "left-backfill", "manual", "tagged-false", "foreign-schedule"],
)  # fmt: skip
def test_is_automated(tags: dict[str, str], automated: bool) -> None:
    assert is_automated(tags) is automated


KILLED = "[DagsterApiServer] Run execution process for r1 was terminated by signal 9 (SIGKILL)."
"""The code server's report of a SIGKILLed run worker (Dagster 1.13.27, ``get_run_crash_explanation``)."""


@pytest.mark.parametrize(
    ("reason", "messages", "died"),
    [(None, [KILLED], True), (None, ["Detected run worker status FAILED. Marking run r1 as failed."], True),
     (None, ["Could not load job definition."], False), (None, [], False),
     ("UNEXPECTED_TERMINATION", [], True), ("RUN_WORKER_RESTART", [], True), ("START_TIMEOUT", [], True),
     ("STEP_FAILURE", [KILLED], False), ("RUN_EXCEPTION", [], False), ("JOB_INITIALIZATION_FAILURE", [], False)],
    ids=["code-server-killed-worker", "monitoring-dead-worker", "job-not-loadable", "no-reason-no-report",
         "terminated", "worker-restart", "start-timeout", "step-failure", "run-exception", "init-failure"],
)  # fmt: skip
def test_is_process_death(reason: str | None, messages: list[str], died: bool) -> None:
    tags = {} if reason is None else {"dagster/failure_reason": reason}
    assert is_process_death(tags, messages) is died


@pytest.mark.parametrize(
    ("tags", "status", "expected"),
    [({}, None, {}),
     ({BACKFILL_TAG: "b1", "dagster/root_backfill_id": "b0"}, "REQUESTED",
      {BACKFILL_TAG: "b1", "dagster/root_backfill_id": "b0"}),
     ({BACKFILL_TAG: "b1"}, "COMPLETED_FAILED", {DATACOOLIE_BACKFILL: "b1"}),
     ({BACKFILL_TAG: "b1"}, "DELETED", {DATACOOLIE_BACKFILL: "b1"})],
    ids=["no-backfill", "live-backfill-kept", "finished-backfill-left", "deleted-backfill-left"],
)  # fmt: skip
def test_retry_backfill_tags(tags: dict[str, str], status: str | None, expected: dict[str, str]) -> None:
    assert retry_backfill_tags(tags, status) == expected


@pytest.mark.parametrize("cursor", ["not json", '{"due": []}', '{"since": 1, "due": [{"x": 1}]}', "[]"], ids=str)
def test_an_unreadable_cursor_is_an_error(cursor: str) -> None:
    with pytest.raises(ValueError, match=r"unreadable cursor.*--delete"):
        RetryCursor.loads(cursor, "datacoolie_retry_sensor")


def test_a_cursor_without_requested_retries_is_read() -> None:
    # written before the sensor linked retries to their failed run
    assert RetryCursor.loads('{"since": 5.0, "due": []}', SENSOR_NAME) == RetryCursor(5.0, [], [])


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


def _tags(instance: dg.DagsterInstance, run: dg.DagsterRun | str) -> dict[str, str]:
    stored = instance.get_run_by_id(run if isinstance(run, str) else run.run_id)
    assert stored is not None
    return dict(stored.tags)


def _evaluate(
    sensor: dg.SensorDefinition,
    instance: dg.DagsterInstance,
    cursor: str | None,
    definitions: dg.Definitions | None = None,
) -> tuple[list[dg.RunRequest], str | None]:
    definitions = definitions or dg.Definitions(jobs=[always_fails])
    context = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=definitions)
    result = sensor(context)
    assert isinstance(result, dg.SensorResult)
    return list(result.run_requests or []), result.cursor


@pytest.mark.slow
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
    assert WILL_RETRY_TAG not in requests[0].tags

    # evaluation 4 — the retry is never requested twice
    clock.now += 3600
    assert _evaluate(sensor, test_instance, cursor)[0] == []


def test_an_evaluation_without_a_retry_says_why_in_words(test_instance: dg.DagsterInstance) -> None:
    clock = _Clock(time.time())
    sensor = build_retry_sensor(base_delay_seconds=BASE, jitter=0.0, jobs=[always_fails], clock=clock)
    context = dg.build_sensor_context(instance=test_instance, definitions=dg.Definitions(jobs=[always_fails]))
    quiet = sensor.evaluate_tick(context)
    assert (quiet.run_requests, quiet.skip_message) == ([], "no failed automated run to retry")

    _fail_run(test_instance, {AUTOMATED: "true"})
    clock.now = time.time()  # not before the run ended: its delay counts from the later of the two
    context = dg.build_sensor_context(
        instance=test_instance, cursor=quiet.cursor, definitions=dg.Definitions(jobs=[always_fails])
    )
    waiting = sensor.evaluate_tick(context)
    assert waiting.run_requests == []
    assert waiting.skip_message == f"1 retry waiting; the next is due in {BASE:.0f} s"


@pytest.mark.slow
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
    # what the code server records for a killed run worker: its engine event, then a reason-less failure
    run = test_instance.create_run_for_job(always_fails, tags={AUTOMATED: "true", RETRY_NUMBER: "1", ROOT_RUN_ID: "r"})
    test_instance.report_engine_event(KILLED, run)
    test_instance.report_run_failed(run)
    sensor = build_retry_sensor(base_delay_seconds=BASE, jobs=[always_fails], clock=_Clock(1e12))
    requests, _ = _evaluate(sensor, test_instance, None)
    assert [(r.run_key, r.tags[RETRY_NUMBER]) for r in requests] == [("retry:r:2", "2")]
    assert _tags(test_instance, run)[RETRY_DELAY] == "0.000"


def test_a_reasonless_failure_without_a_dead_worker_keeps_the_backoff(test_instance: dg.DagsterInstance) -> None:
    # e.g. the run queue could not reach the code server: wait, do not hammer it
    run = test_instance.create_run_for_job(always_fails, tags={AUTOMATED: "true"})
    test_instance.report_engine_event("Run dequeue failed to reach the user code server", run)
    test_instance.report_run_failed(run)
    sensor = build_retry_sensor(base_delay_seconds=BASE, jobs=[always_fails], clock=_Clock(1e12))
    assert _evaluate(sensor, test_instance, None)[0] == []
    assert BASE <= float(_tags(test_instance, run)[RETRY_DELAY]) <= BASE * 1.1


def test_the_code_location_retries_every_job_and_every_asset_run(tmp_path: Path) -> None:
    defs = definitions(tmp_path, LINEAGE)
    repository = defs.get_repository_def()
    jobs = {job.name for job in repository.get_all_jobs() if not job.name.startswith("__")}
    assert {t.job_name for t in repository.get_sensor_def(SENSOR_NAME).targets} == jobs
    assert repository.get_sensor_def(ASSET_SENSOR_NAME).job_name == "__ASSET_JOB"


def test_the_asset_retry_sensor_relaunches_a_partition_under_the_implicit_job(
    tmp_path: Path, test_instance: dg.DagsterInstance
) -> None:
    defs = definitions(tmp_path, PARTITIONS, run_retries=2, retry_base_delay=0)
    repository = defs.get_repository_def()
    key = dg.AssetKey.from_user_string("silver/sales/orders")
    job = repository.get_implicit_global_asset_job_def()
    failed = test_instance.create_run_for_job(
        job.get_subset(asset_selection={key}),
        asset_selection=frozenset({key}),
        tags={AUTOMATED: "true", "dagster/partition": "2024-02"},
    )
    test_instance.report_run_failed(failed)
    stage_sensor = repository.get_sensor_def(SENSOR_NAME)
    asset_sensor = repository.get_sensor_def(ASSET_SENSOR_NAME)

    # the op-job sensor leaves the asset run alone (no "no target" refusal); the asset sensor retries it
    context = dg.build_sensor_context(instance=test_instance, definitions=defs)
    assert stage_sensor.evaluate_tick(context).run_requests == []
    assert RETRY_DECISION not in _tags(test_instance, failed)
    context = dg.build_sensor_context(instance=test_instance, definitions=defs)
    (request,) = asset_sensor.evaluate_tick(context).run_requests or []
    assert (request.job_name, request.asset_selection, request.partition_key) == ("__ASSET_JOB", [key], "2024-02")
    assert request.tags["dagster/partition"] == "2024-02"  # resolved against the implicit job's partitions


# --- runs of a real asset backfill -----------------------------------------------------------------

LETTERS = dg.StaticPartitionsDefinition(["a", "b"])


@dg.asset(partitions_def=LETTERS)
def letters(context) -> None:  # unannotated: Dagster rejects a string annotation on `context`
    """Fails on a first attempt, succeeds on a retry."""
    if RETRY_NUMBER not in context.run.tags:
        raise dg.Failure("letters: failing on purpose")


LETTERS_JOB = dg.define_asset_job("letters_job", selection=[letters])
LETTERS_DEFS = dg.Definitions(assets=[letters], jobs=[LETTERS_JOB])


def _add_backfill(instance: dg.DagsterInstance, status: str = "REQUESTED") -> str:
    # Dagster 1.13.27 internals: what the UI's "Materialize" of partition "a" stores for the backfill daemon
    from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill

    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id="bf1", asset_graph=LETTERS_DEFS.resolve_asset_graph(), partition_names=["a"],
        asset_selection=[letters.key], backfill_timestamp=time.time(), tags={}, dynamic_partitions_store=instance,
        all_partitions=False, title=None, description=None, run_config=None,
    )  # fmt: skip
    instance.add_backfill(backfill.with_status(BulkActionStatus(status)))
    return backfill.backfill_id


def _materialize_letter(instance: dg.DagsterInstance, tags: dict[str, str]) -> dg.DagsterRun:
    """Partition "a" as a backfill run does it: the implicit asset job with an asset selection."""
    job = LETTERS_DEFS.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(
        instance=instance, partition_key="a", asset_selection=[letters.key], tags=tags, raise_on_error=False
    )
    run = instance.get_run_by_id(result.run_id)
    assert run is not None
    return run


def _backfill_waits(instance: dg.DagsterInstance, backfill_id: str) -> bool:
    """Whether Dagster's asset backfill daemon (1.13.27) still sees runs in progress or awaiting a retry."""
    import logging

    from dagster._core.execution.asset_backfill import backfill_runs_are_complete

    return not backfill_runs_are_complete(backfill_id, instance, logging.getLogger("test"))


@pytest.mark.slow
def test_a_retry_stays_in_its_live_backfill_which_waits_for_it(test_instance: dg.DagsterInstance) -> None:
    backfill_id = _add_backfill(test_instance)
    clock = _Clock(time.time())
    sensor = build_retry_sensor(base_delay_seconds=BASE, asset_job=LETTERS_JOB, clock=clock)
    failed = _materialize_letter(test_instance, {BACKFILL_TAG: backfill_id})
    clock.now = time.time()  # not before the run ended: its delay counts from the later of the two
    assert failed.status == dg.DagsterRunStatus.FAILURE
    assert not _backfill_waits(test_instance, backfill_id)  # Dagster #34204: before the retry is decided

    # evaluation 1 — the retry is decided: the backfill now waits for it instead of completing as failed
    requests, cursor = _evaluate(sensor, test_instance, None, LETTERS_DEFS)
    assert requests == []
    assert _tags(test_instance, failed)[WILL_RETRY_TAG] == "true"
    assert _backfill_waits(test_instance, backfill_id)

    # evaluation 2 — due: the retry keeps the backfill's tag, so the backfill counts its materialization
    clock.now += BASE * 1.1
    requests, cursor = _evaluate(sensor, test_instance, cursor, LETTERS_DEFS)
    assert [(r.job_name, r.partition_key, r.tags.get(BACKFILL_TAG)) for r in requests] == [
        ("letters_job", "a", backfill_id)
    ]
    retry = _materialize_letter(test_instance, dict(requests[0].tags))  # what the sensor daemon launches
    assert retry.status == dg.DagsterRunStatus.SUCCESS
    assert _backfill_waits(test_instance, backfill_id)  # not yet linked to its retry

    # evaluation 3 — the retry is linked to the failed run: the backfill stops waiting, both runs are its own
    assert _evaluate(sensor, test_instance, cursor, LETTERS_DEFS)[0] == []
    assert _tags(test_instance, failed)[AUTO_RETRY_RUN_ID_TAG] == retry.run_id
    assert not _backfill_waits(test_instance, backfill_id)
    in_backfill = test_instance.get_run_ids(dg.RunsFilter(tags={BACKFILL_TAG: backfill_id}))
    assert sorted(in_backfill) == sorted([failed.run_id, retry.run_id])


@pytest.mark.parametrize("status", ["COMPLETED_FAILED", "DELETED"])
def test_a_retry_leaves_a_finished_backfill(test_instance: dg.DagsterInstance, status: str) -> None:
    backfill_id = "deleted" if status == "DELETED" else _add_backfill(test_instance, status)
    failed = _materialize_letter(test_instance, {BACKFILL_TAG: backfill_id})
    sensor = build_retry_sensor(base_delay_seconds=0, asset_job=LETTERS_JOB, clock=_Clock(1e12))
    requests, _ = _evaluate(sensor, test_instance, None, LETTERS_DEFS)
    assert [(BACKFILL_TAG in r.tags, r.tags.get(DATACOOLIE_BACKFILL), r.tags[PARENT_RUN_ID]) for r in requests] == [
        (False, backfill_id, failed.run_id)
    ]


@pytest.mark.parametrize("status", ["CANCELED", "CANCELING", "FAILED"])
@pytest.mark.slow
def test_a_run_of_a_stopped_backfill_is_not_retried(test_instance: dg.DagsterInstance, status: str) -> None:
    backfill_id = _add_backfill(test_instance, status)
    failed = _materialize_letter(test_instance, {BACKFILL_TAG: backfill_id})
    sensor = build_retry_sensor(base_delay_seconds=BASE, asset_job=LETTERS_JOB, clock=_Clock(1e12))
    assert _evaluate(sensor, test_instance, None, LETTERS_DEFS)[0] == []
    tags = _tags(test_instance, failed)
    assert tags[RETRY_DECISION] == "backfill stopped"  # decided at once, not when the retry would be due
    assert RETRY_DUE_AT not in tags


@pytest.mark.slow
def test_a_backfill_stopped_while_the_retry_waits_is_not_retried(test_instance: dg.DagsterInstance) -> None:
    from dagster._core.execution.backfill import BulkActionStatus  # Dagster 1.13.27

    backfill_id = _add_backfill(test_instance)
    failed = _materialize_letter(test_instance, {BACKFILL_TAG: backfill_id})
    clock = _Clock(time.time())
    sensor = build_retry_sensor(base_delay_seconds=BASE, asset_job=LETTERS_JOB, clock=clock)
    _, cursor = _evaluate(sensor, test_instance, None, LETTERS_DEFS)
    backfill = test_instance.get_backfill(backfill_id)
    assert backfill is not None
    test_instance.update_backfill(backfill.with_status(BulkActionStatus.CANCELED))

    clock.now += BASE * 1.1
    assert _evaluate(sensor, test_instance, cursor, LETTERS_DEFS)[0] == []
    assert {k: _tags(test_instance, failed)[k] for k in (RETRY_DECISION, WILL_RETRY_TAG)} == {
        RETRY_DECISION: "backfill stopped", WILL_RETRY_TAG: "false"
    }  # fmt: skip


# --- a real daemon ---------------------------------------------------------------------------------


def _runs(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    return [record.dagster_run for record in instance.get_run_records()]


@pytest.mark.daemon
def test_the_daemon_retries_an_automated_run_after_doubling_delays(
    tmp_path: Path, instance_settings: InstanceSettings
) -> None:
    daemon = prepare(tmp_path, instance_settings.config, instance_settings.env | {"DATACOOLIE_TEST_BASE_DELAY": "1"})
    with running(daemon), daemon.instance() as instance:
        daemon.launch("flaky", {AUTOMATED: "true"})
        wait_until(
            lambda: any(r.status == dg.DagsterRunStatus.SUCCESS for r in _runs(instance)),
            75, "the third run to succeed", tmp_path / "daemon.log",
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


def _retry_cursor(instance: dg.DagsterInstance) -> RetryCursor:
    """The retry sensor's stored cursor (``InstigatorState.instigator_data``, Dagster 1.13.27)."""
    states = [state for state in instance.all_instigator_state() if state.name == SENSOR_NAME]
    data = states[0].instigator_data if states else None
    return RetryCursor.loads(getattr(data, "cursor", None), SENSOR_NAME)


def _seen_by_the_sensor(instance: dg.DagsterInstance, run_id: str) -> bool:
    record = instance.get_run_record_by_id(run_id)
    assert record is not None
    return _retry_cursor(instance).since >= record.update_timestamp.timestamp()


def _engine_messages(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    return [entry.message for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT)]


def _finished(instance: dg.DagsterInstance, daemon: Daemon, count: int, what: str) -> list[dg.DagsterRun]:
    finished = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE}
    wait_until(
        lambda: sum(r.status in finished for r in _runs(instance)) >= count, 45, what, daemon.root / "daemon.log"
    )
    return _runs(instance)


@pytest.mark.daemon
def test_the_daemon_restarts_a_killed_automated_run_once_and_at_once(
    tmp_path: Path, instance_settings: InstanceSettings
) -> None:
    # a base delay far beyond the wait: only an immediate retry can make the test pass
    daemon = prepare(tmp_path, instance_settings.config, instance_settings.env | {"DATACOOLIE_TEST_BASE_DELAY": "600"})
    with running(daemon), daemon.instance() as instance:
        daemon.launch("killed_once")  # manual: never retried
        daemon.launch("killed_once", {AUTOMATED: "true"})
        _finished(instance, daemon, 3, "both killed runs and the automated one's retry")
        runs = _runs(instance)
        manual = next(r for r in runs if AUTOMATED not in r.tags)
        killed = next(r for r in runs if r.tags.get(AUTOMATED) == "true" and PARENT_RUN_ID not in r.tags)
        wait_until(lambda: _seen_by_the_sensor(instance, manual.run_id), 20, "the sensor to see the manual run")
        # the evaluation linking the retry to the killed run had every chance to request it twice
        wait_until(lambda: AUTO_RETRY_RUN_ID_TAG in _tags(instance, killed), 20, "the retry to be linked")
        runs, killed_tags, manual_tags = _runs(instance), _tags(instance, killed), _tags(instance, manual)
        messages = _engine_messages(instance, killed.run_id)

    # the code server reports the dead run worker; Dagster records no failure reason for it
    assert any("terminated by signal 9 (SIGKILL)" in m for m in messages), messages
    assert "dagster/failure_reason" not in killed_tags
    retries = [r for r in runs if r.tags.get(PARENT_RUN_ID) == killed.run_id]
    assert [(r.status, r.tags[RETRY_NUMBER], r.run_id) for r in retries] == [
        (dg.DagsterRunStatus.SUCCESS, "1", killed_tags[AUTO_RETRY_RUN_ID_TAG])
    ]
    assert killed_tags[RETRY_DELAY] == "0.000"
    assert len(runs) == 3  # the manual run, the killed automated run and its one retry
    assert manual.status == dg.DagsterRunStatus.FAILURE
    assert not {RETRY_DUE_AT, WILL_RETRY_TAG, RETRY_DECISION} & manual_tags.keys()


@pytest.mark.slow
def test_a_run_of_another_code_location_is_left_alone(test_instance: dg.DagsterInstance) -> None:
    """One instance, several code locations: each location's sensors retry only their own runs."""

    def origin(location: str) -> RemoteJobOrigin:
        return RemoteJobOrigin(RemoteRepositoryOrigin(RegisteredCodeLocationOrigin(location), "__repository__"), "x")

    theirs = test_instance.create_run_for_job(always_fails, remote_job_origin=origin("other"), tags={AUTOMATED: "true"})
    ours = test_instance.create_run_for_job(always_fails, remote_job_origin=origin("here"), tags={AUTOMATED: "true"})
    for run in (theirs, ours):
        test_instance.report_run_failed(run)
    sensor = build_retry_sensor(base_delay_seconds=0, jobs=[always_fails], clock=_Clock(1e12))
    context = dg.build_sensor_context(instance=test_instance)
    context._code_location_origin = RegisteredCodeLocationOrigin("here")  # as the daemon's context carries it

    result = sensor(context)
    assert isinstance(result, dg.SensorResult)
    assert [r.tags[PARENT_RUN_ID] for r in result.run_requests or []] == [ours.run_id]
    assert RETRY_DUE_AT not in _tags(test_instance, theirs)
