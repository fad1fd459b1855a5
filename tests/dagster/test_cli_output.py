"""What ``datacoolie-dagster`` prints, seen as a user sees it (a subprocess): what each schedule and
sensor did, and none of the noise (Dagster's ``owners`` BetaWarning, alembic's INFO lines)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.dagster.cli_support import REPOSITORY, Deployment, deploy, explain

# the example's one partitioned table reads bronze: the watermark sensor follows it, no partition sensor
STOPPED = ("datacoolie_sources", "datacoolie_automation", "datacoolie_watermarks")
RUNNING = ("datacoolie_retry_sensor", "datacoolie_asset_retry_sensor")
SENSORS = STOPPED + RUNNING


@pytest.mark.slow
def test_tick_says_what_it_did_without_noise(tmp_path: Path) -> None:
    deployed = deploy(tmp_path)
    # a first tick on a new instance: the storages are created by this very command
    fresh = Deployment(deployed.project, tmp_path / "fresh_home")
    fresh.home.mkdir()
    shutil.copyfile(REPOSITORY / "dagster.yaml", fresh.home / "dagster.yaml")

    result = fresh.run("datacoolie-dagster", "tick", "-w", "workspace.yaml")

    assert result.returncode == 0, explain(result)
    printed = result.stdout.splitlines()
    for sensor in STOPPED:  # stopped by default
        assert (
            f"sensor '{sensor}': not evaluated: stopped (start it in the UI, or: dagster sensor start {sensor})"
            in printed
        )
    for sensor in RUNNING:  # running by default
        assert f"sensor '{sensor}': skipped: no failed automated run to retry" in printed
    assert len(printed) == len(SENSORS), explain(result)
    output = result.stdout + result.stderr
    assert "BetaWarning" not in output, explain(result)
    assert "alembic" not in output, explain(result)
    assert "Started Dagster code server" not in output  # the code server's INFO lines only with -v
