"""No secret in any output: failing connections whose secrets come from the environment, run through
the CLI and through real Dagster runs, then every artifact grepped for every spelling of every secret.

The secrets really reach the errors: a PostgreSQL URL secret whose unencoded password libpq echoes,
a password filled into a URL for a closed port, SQLite and CSV paths that are secrets, and a function
source that logs, prints and raises its credentials (percent-encoded, base64, basic auth, chained).
Artifacts: stdout, stderr, execution and system logs, state, Delta logs, and for Dagster the
instance's SQLite files (event log, runs) and the compute log files on disk.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from datacoolie_dagster import build_definitions
from tests.core.adversarial.leaky import STAGE, Deployment, Scan, scan, write_deployment

REPOSITORY = Path(__file__).parents[3]
BIN = Path(sys.executable).parent
FAILING = {"leaky_api", "pg_refused", "pg_echo", "mysql_refused", "sqlite_missing", "csv_missing"}
ECHOED = {"leaky_api", "pg_echo", "sqlite_missing", "csv_missing"}
"""The failures whose raw error text held a secret (the refused connection's does not)."""


@pytest.fixture
def deployment(tmp_path: Path) -> Deployment:
    root = tmp_path / "project"
    root.mkdir()
    return write_deployment(root)


def clean_env(deployment: Deployment, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATACOOLIE_", "DAGSTER_", "DC_LEAK_"))}
    return env | deployment.env | {"PYTHONPATH": str(REPOSITORY)} | extra


def run(deployment: Deployment, captured: Path, name: str, command: list[str], **env: str) -> int:
    """Run ``command`` in the project folder; its stdout and stderr become artifacts under ``captured``."""
    done = subprocess.run(
        command, cwd=deployment.root, env=clean_env(deployment, **env), capture_output=True, text=True, timeout=300
    )
    captured.mkdir(exist_ok=True)
    (captured / f"{name}.stdout").write_text(done.stdout)
    (captured / f"{name}.stderr").write_text(done.stderr)
    return done.returncode


def assert_clean(result: Scan, kinds: set[str]) -> None:
    assert result.hits == [], "\n".join(result.hits[:20])
    assert kinds <= result.kinds(), f"artifacts missing: {kinds - result.kinds()}"
    print(f"\nscanned {len(result.files)} files for {result.forms} spellings: {len(result.hits)} hits")


def test_the_cli_prints_and_logs_no_secret(deployment: Deployment, tmp_path: Path) -> None:
    captured = tmp_path / "captured"
    cli = [str(BIN / "datacoolie"), "run", "--metadata", str(deployment.metadata), "--state-path", "state"]
    assert run(deployment, captured, "text", [*cli, "--log-path", "logs_text"]) == 1
    assert run(deployment, captured, "json", [*cli, "--log-path", "logs_json", "--json"]) == 1

    printed = (captured / "json.stdout").read_text()
    report = json.loads(printed[printed.index("\n{") + 1 :])  # after the careless prints (one per attempt)
    failed = {r["dataflow_name"]: r["error_message"] for r in report["dataflows"] if r["status"] == "failed"}
    assert set(failed) == FAILING
    assert all("***" in failed[name] for name in ECHOED), failed  # the secrets were there, masked
    assert "invalid percent-encoded token" in failed["pg_echo"]
    assert report["succeeded"] == 1
    assert "Traceback" in (captured / "text.stderr").read_text()  # the careless logger.exception, masked

    result = scan([deployment.root, captured], deployment.secrets)
    assert_clean(result, {"system_logs", "dataflow_run_log", "job_run_log", "_delta_log"})


def test_an_in_process_materialization_stores_no_secret(
    deployment: Deployment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    home = dagster_home(tmp_path)
    for name, value in deployment.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(deployment.root)
    defs = build_definitions(
        deployment.metadata, state_base_path="state", log_base_path="logs", retry_count=0, include_sensors=False
    )
    with dg.DagsterInstance.from_config(str(home)) as instance:
        result = dg.materialize(
            list(defs.assets or []),  # type: ignore[arg-type]
            resources=defs.resources,
            instance=instance,
            raise_on_error=False,
        )
        failure = "\n".join(
            e.step_failure_data.error.to_string()
            for e in result.all_events
            if e.is_step_failure and e.step_failure_data.error
        )
        messages = [e.message or "" for e in instance.all_logs(result.run_id)]
    assert not result.success
    assert all(f"- {name} [" in failure for name in FAILING), failure
    assert 'invalid percent-encoded token: "***"' in failure
    assert [m.asset_key.to_user_string() for m in result.asset_materializations_for_node("datacoolie_tables")] == [
        "lake/leaks/api_ok"
    ]
    assert any("STEP_FAILURE" in m or "failed" in m for m in messages)

    captured = tmp_path / "captured"
    captured.mkdir()
    out, err = capfd.readouterr()
    (captured / "stdout").write_text(out)
    (captured / "stderr").write_text(err)
    (captured / "events").write_text(failure + "\n".join(messages))
    result_scan = scan([deployment.root, home, captured], deployment.secrets)
    assert_clean(result_scan, {"system_logs", "dataflow_run_log", "_delta_log", "compute_logs", "sqlite"})


@pytest.mark.slow
def test_dagster_cli_runs_store_no_secret(deployment: Deployment, tmp_path: Path) -> None:
    """``dagster job execute`` (the sharded driver op) and ``dagster asset materialize``, real subprocesses."""
    home = dagster_home(tmp_path)
    captured = tmp_path / "captured"
    env = {"DAGSTER_HOME": str(home), "DATACOOLIE_METADATA": str(deployment.metadata),
           "DATACOOLIE_HOME": str(deployment.root / "data")}  # fmt: skip
    pointer = ["-m", "datacoolie_dagster.definitions"]
    config = deployment.root / "run_config.json"
    config.write_text(json.dumps({"retry_count": 0}))
    job = [str(BIN / "dagster"), "job", "execute", *pointer, "-j", f"datacoolie_{STAGE}", "-c", str(config)]
    assets = [str(BIN / "dagster"), "asset", "materialize", *pointer, "--select", "*"]
    assert run(deployment, captured, "job", job, **env) != 0
    assert run(deployment, captured, "assets", assets, **env) != 0

    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs()
        assert [r.status for r in runs] == [dg.DagsterRunStatus.FAILURE] * 2
        failures = [_step_failures(instance, r.run_id) for r in runs]
    assert all('invalid percent-encoded token: "***"' in text for text in failures), failures

    result = scan([deployment.root, home, captured], deployment.secrets)
    assert_clean(result, {"system_logs", "dataflow_run_log", "_delta_log", "compute_logs", "sqlite"})


def dagster_home(tmp_path: Path) -> Path:
    """A real ``$DAGSTER_HOME``: the repository's ``dagster.yaml``, SQLite storage and compute logs on disk."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(REPOSITORY / "dagster.yaml", home / "dagster.yaml")
    return home


def _step_failures(instance: dg.DagsterInstance, run_id: str) -> str:
    events = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
    errors = [e.dagster_event.step_failure_data.error for e in events if e.dagster_event is not None]
    return "\n".join(error.to_string() for error in errors if error is not None)
