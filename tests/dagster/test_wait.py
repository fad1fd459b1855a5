"""``datacoolie-dagster wait`` over a real instance: progress lines, summary, exit codes, a stuck queue."""

# no `from __future__ import annotations`: Dagster reads the ops' context annotations at runtime

import re
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.remote_origin import RegisteredCodeLocationOrigin, RemoteJobOrigin, RemoteRepositoryOrigin
from dagster._daemon.types import DaemonHeartbeat

from datacoolie_dagster import constants
from datacoolie_dagster.commands.cli import main
from datacoolie_dagster.commands.launch import parse_tags
from datacoolie_dagster.commands.run_events import GAVE_UP, RUN_FAILED, USAGE, RunEvent, progress_lines
from datacoolie_dagster.commands.run_sources import QUEUE_DAEMON, InstanceRunSource
from datacoolie_dagster.commands.wait import RunFollower


@dg.op(out=dg.Out(dg.Nothing))
def write_orders(context: dg.OpExecutionContext) -> Iterator[dg.AssetMaterialization]:
    context.log.info("shard 0/1: 1 succeeded, 0 failed, 0 skipped")
    yield dg.AssetMaterialization(
        ["bronze", "sales", "orders"],
        metadata={constants.ROWS_INSERTED: 600, constants.ROWS_UPDATED: 4, constants.DELTA_VERSION: 2},
    )


@dg.op(ins={"after": dg.In(dg.Nothing)})
def fail_customers() -> None:
    raise dg.Failure(description="1 dataflow(s) failed:\n- customers_landing_to_bronze [c1]: file is not parquet")


@dg.job
def loads() -> None:
    write_orders()


@dg.job
def loads_then_fails() -> None:
    fail_customers(write_orders())


@pytest.fixture
def home(tmp_path: Path) -> Iterator[tuple[str, dg.DagsterInstance]]:
    """A SQLite instance on disk, as ``DAGSTER_HOME`` of a CI job."""
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        yield str(tmp_path), instance


def follow(instance: dg.DagsterInstance, run_ids: list[str], **kwargs: float) -> tuple[int, list[str]]:
    lines: list[str] = []
    timeout = kwargs.pop("timeout", 30.0)
    follower = RunFollower(InstanceRunSource(instance, "test"), lines.append, **kwargs)
    return follower.follow(run_ids, timeout=timeout, poll=0.05), lines


def queued_run(instance: dg.DagsterInstance) -> str:
    """A run in the queue, as ``dagster job launch`` leaves it (no daemon here to dequeue it)."""
    origin = RemoteJobOrigin(RemoteRepositoryOrigin(RegisteredCodeLocationOrigin("ci"), "__repository__"), "loads")
    run = instance.add_run(dg.DagsterRun(job_name="loads", status=dg.DagsterRunStatus.QUEUED, remote_job_origin=origin))
    return run.run_id


def test_a_successful_run_prints_its_steps_tables_and_a_summary_and_exits_0(
    home: tuple[str, dg.DagsterInstance],
) -> None:
    _, instance = home
    run_id = loads.execute_in_process(instance=instance).run_id

    code, lines = follow(instance, [run_id])

    assert code == 0
    short = run_id[:8]
    assert f"[{short}] step write_orders started" in lines
    assert f"[{short}] step write_orders: shard 0/1: 1 succeeded, 0 failed, 0 skipped" in lines
    assert f"[{short}] wrote bronze/sales/orders: 600 inserted, 4 updated, 0 deleted (Delta version 2)" in lines
    assert any(line.startswith(f"[{short}] step write_orders succeeded in ") for line in lines)
    assert lines[-1].startswith(f"run {run_id} (loads): SUCCESS in ")
    assert lines[-1].endswith(": 1 table(s), 604 rows written")


@pytest.mark.slow
def test_a_failed_run_prints_the_failing_dataflow_and_exits_1(home: tuple[str, dg.DagsterInstance]) -> None:
    _, instance = home
    good = loads.execute_in_process(instance=instance).run_id
    bad = loads_then_fails.execute_in_process(instance=instance, raise_on_error=False).run_id

    code, lines = follow(instance, [good, bad])

    assert code == RUN_FAILED
    assert f"[{bad[:8]}] step fail_customers FAILED:" in lines
    assert f"[{bad[:8]}]     - customers_landing_to_bronze [c1]: file is not parquet" in lines
    assert lines[-2].startswith(f"run {good} (loads): SUCCESS")
    assert lines[-1].startswith(f"run {bad} (loads_then_fails): FAILURE in ")
    assert lines[-1].endswith(
        ": step fail_customers failed: 1 dataflow(s) failed: - customers_landing_to_bronze [c1]: file is not parquet;"
        " 1 table(s), 604 rows written"
    )
    assert not any("Emitting implicit Nothing" in line for line in lines)  # Dagster's noise stays out


def test_events_without_a_message_print_no_empty_line() -> None:
    assert progress_lines(RunEvent("RUN_ENQUEUED", "")) == []
    assert progress_lines(RunEvent("RUN_CANCELED", "This run has been marked as canceled.")) == [
        "This run has been marked as canceled."
    ]


def test_a_queued_run_without_a_daemon_fails_the_wait_and_asks_for_the_daemon(
    home: tuple[str, dg.DagsterInstance],
) -> None:
    _, instance = home
    run_id = queued_run(instance)

    code, lines = follow(instance, [run_id], queued_timeout=0)

    assert code == GAVE_UP
    assert lines[-2].startswith(f"run {run_id} (loads): QUEUED: still QUEUED after ")
    assert "no run-queue daemon heartbeat (last: never): is dagster-daemon running?" in lines[-2]


def test_a_queued_run_with_a_live_daemon_waits_until_the_timeout(home: tuple[str, dg.DagsterInstance]) -> None:
    _, instance = home
    run_id = queued_run(instance)
    instance.add_daemon_heartbeat(DaemonHeartbeat(time.time(), QUEUE_DAEMON, "daemon-1", errors=[]))

    code, lines = follow(instance, [run_id], queued_timeout=0, timeout=0.3)

    assert code == GAVE_UP
    assert lines[-2] == f"run {run_id} (loads): QUEUED: still QUEUED after --timeout 0.3 s; 0 table(s), 0 rows written"
    assert not any("dagster-daemon running" in line for line in lines)


def test_a_stale_heartbeat_counts_as_no_daemon(home: tuple[str, dg.DagsterInstance]) -> None:
    _, instance = home
    run_id = queued_run(instance)
    instance.add_daemon_heartbeat(DaemonHeartbeat(time.time() - 600, QUEUE_DAEMON, "daemon-1", errors=[]))

    code, lines = follow(instance, [run_id], queued_timeout=0)

    assert code == GAVE_UP
    # 600 s, plus however long the check itself took (seconds on a loaded machine)
    assert re.search(r"\(last: 6\d\d s ago\): is dagster-daemon running\?", lines[-2]), lines[-2]


def test_the_command_exits_0_for_finished_runs_and_2_for_an_unknown_run(
    home: tuple[str, dg.DagsterInstance], capsys: pytest.CaptureFixture[str]
) -> None:
    path, instance = home
    run_id = loads.execute_in_process(instance=instance).run_id

    assert main(["wait", "--instance", path, run_id]) == 0
    assert f"run {run_id} (loads): SUCCESS" in capsys.readouterr().out

    assert main(["wait", "--instance", path, "not-a-run"]) == USAGE
    assert "no run not-a-run in the instance at" in capsys.readouterr().err


def test_wait_and_launch_refuse_a_bad_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wait", "--url", "dagster.internal:3000", "some-run"]) == USAGE
    assert "is not a webserver URL; pass e.g. http://" in capsys.readouterr().err
    assert main(["launch", "--url", "http://127.0.0.1:9", "-j", "job", "--config-json", "[1]"]) == USAGE
    assert "--config-json must be a JSON object" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("pairs", "tags"),
    [(["ci/pipeline=42"], {"ci/pipeline": "42"}), (["a=b=c", "empty="], {"a": "b=c", "empty": ""})],
    ids=["one", "value-with-equals-and-empty"],
)
def test_tags_are_key_value_pairs(pairs: list[str], tags: dict[str, str]) -> None:
    assert parse_tags(pairs) == tags


def test_a_tag_without_a_value_is_refused() -> None:
    with pytest.raises(ValueError, match="--tag 'ci' is not KEY=VALUE"):
        parse_tags(["ci"])
