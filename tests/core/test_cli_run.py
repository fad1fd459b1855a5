"""``datacoolie run | replay | maintenance``: exit codes, JSON, progress lines, SIGTERM (a real subprocess)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core.cli import main
from tests.core.orchestration.driver_support import Lake, function_source, job_rows

REPO = Path(__file__).parents[2]
WATERMARK = {"watermark_columns": ["updated_at"]}


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    lake = Lake(tmp_path)
    lake.add("orders", source=function_source("orders") | WATERMARK)
    lake.add("customers", stage="other")
    lake.write()
    return lake


def run_cli(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_run_stage_as_json(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, "run", "--metadata", lake.metadata_path, "--stage", "bronze2silver", "--json", "--log-path", lake.logs
    )

    assert (code, err) == (0, "")
    report = json.loads(out)
    assert (report["total"], report["succeeded"], report["failed"]) == (1, 1, 0)
    (row,) = report["dataflows"]
    assert (row["dataflow_name"], row["status"], row["destination"]["rows_written"]) == ("orders", "succeeded", 3)
    assert lake.table("orders")["order_id"].to_list() == [1, 2, 3]
    assert not lake.has_table("customers")  # another stage
    (job,) = job_rows(lake.logs)
    assert job["status"] == "succeeded"


def test_run_prints_plain_progress_lines_when_not_a_tty(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "run", "--metadata", lake.metadata_path, "--max-workers", "1")

    assert (code, out) == (0, "")
    lines = err.splitlines()
    assert "\r" not in err
    assert "\033" not in err
    assert [line.split()[:3] for line in lines[:2]] == [
        ["[1]", "succeeded", "orders"],
        ["[2]", "succeeded", "customers"],
    ]
    assert "(read 3, wrote 3)" in lines[0]
    assert lines[2].startswith("2 dataflow(s): 2 succeeded, 0 failed, 0 skipped, 0 pending in ")


def test_a_failed_dataflow_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lake = Lake(tmp_path)
    lake.add("orders").add("broken", source=function_source("leaky_orders")).write()

    code, _, err = run_cli(capsys, "run", "--metadata", lake.metadata_path, "--retry-delay", "0")

    assert code == 1
    assert "failed    broken (error: " in err
    assert err.splitlines()[-1].startswith("failed: broken [")


def test_bad_metadata_exits_2_naming_the_json_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lake = Lake(tmp_path)
    lake.add("orders", destination={"merge_key": ["order_id"]}).write()

    code, out, err = run_cli(capsys, "run", "--metadata", lake.metadata_path)

    assert (code, out) == (2, "")
    assert "dataflows[0].destination.merge_key (dataflow 'orders'): unknown key 'merge_key'" in err
    assert "did you mean 'merge_keys'" in err


def test_dry_run_touches_no_table(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "run", "--metadata", lake.metadata_path, "--dry-run", "--json")

    assert code == 0
    report = json.loads(out)
    assert (report["total"], report["skipped"]) == (2, 2)
    assert {row["skip_reason"] for row in report["dataflows"]} == {"dry run"}
    assert not (lake.root / "lake").exists()


def test_replay_in_monthly_chunks(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "replay", "--metadata", lake.metadata_path, "--stage", "bronze2silver",
        "--start", "2025-01-01", "--end", "2025-04-01", "--chunk-interval-json", '{"months": 1}', "--json",
    )  # fmt: skip

    assert code == 0
    report = json.loads(out)
    assert (report["total"], report["succeeded"]) == (1, 1)
    (outer,) = report["dataflows"]
    assert [c["replay_chunk"]["key"] for c in outer["chunks"]] == ["2025-01-01", "2025-02-01", "2025-03-01"]
    assert lake.table("orders")["order_id"].to_list() == [1, 2, 3]
    assert not list((lake.metadata_path.parent / "watermarks").glob("*/watermark_value.json"))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--save-watermark"], "add --confirm-save-watermark"),
        (["--chunk-interval-json", "[1]"], "must be a JSON object"),
        (["--chunk-interval-json", '{"fortnights": 1}'], "unknown chunk_interval unit 'fortnights'"),
    ],
    ids=["unconfirmed-save-watermark", "interval-not-an-object", "unknown-unit"],
)
def test_replay_usage_errors_exit_2(
    lake: Lake, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    code, out, err = run_cli(
        capsys, "replay", "--metadata", lake.metadata_path, "--stage", "bronze2silver",
        "--start", "2025-01-01", "--end", "2025-04-01", *extra,
    )  # fmt: skip

    assert (code, out) == (2, "")
    assert message in err
    assert not (lake.root / "lake").exists()


def test_replay_with_a_confirmed_watermark_save(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run_cli(
        capsys, "replay", "--metadata", lake.metadata_path, "--stage", "bronze2silver",
        "--start", "2025-01-01", "--end", "2025-04-01", "--save-watermark", "--confirm-save-watermark",
    )  # fmt: skip

    assert code == 0
    (stored,) = (lake.metadata_path.parent / "watermarks").glob("*/watermark_value.json")
    assert "2025-03-15" in stored.read_text()


def test_maintenance(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "run", "--metadata", lake.metadata_path)[0] == 0

    code, out, _ = run_cli(capsys, "maintenance", "--metadata", lake.metadata_path, "--retention-hours", "0", "--json")

    assert code == 0
    report = json.loads(out)
    assert (report["total"], report["succeeded"]) == (2, 2)
    assert {row["operation_type"] for row in report["dataflows"]} == {"maintenance"}


def test_dataflow_narrows_the_stage(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "run", "--metadata", lake.metadata_path, "--dataflow", "customers", "--json")

    assert code == 0
    assert [row["dataflow_name"] for row in json.loads(out)["dataflows"]] == ["customers"]
    assert not lake.has_table("orders")


def test_a_dataflow_typo_exits_2_with_did_you_mean(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "run", "--metadata", lake.metadata_path, "--dataflow", "ordres")

    assert (code, out) == (2, "")
    assert "no dataflow named 'ordres'" in err
    assert "did you mean 'orders'?" in err
    assert not (lake.root / "lake").exists()


def test_sigterm_closes_the_driver_and_exits_143(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    started = tmp_path / "started"
    lake.add("slow", source=function_source("slow_orders", started_file=str(started), seconds=1.5)).write()
    command = [
        sys.executable, "-c", "import sys; from datacoolie_core.cli import main; sys.exit(main(sys.argv[1:]))",
        "run", "--metadata", str(lake.metadata_path), "--log-path", str(lake.logs),
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert started.exists(), process.communicate()[1]

        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()

    assert process.returncode == 128 + signal.SIGTERM, err  # DataCoolie X-15: 128 + signum
    assert "interrupted (stopped by SIGTERM): the driver was closed" in err
    assert "Traceback" not in err
    (job,) = job_rows(lake.logs)
    assert job["status"] == "failed"
    assert job["end_time"] is not None
    assert "interrupted by KeyboardInterrupt" in job["error_message"]


def test_maintenance_says_what_it_compacted_and_vacuumed(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    # two appends: two data files to compact; retention 0: the vacuum then deletes both
    for _ in range(2):
        assert run_cli(capsys, "run", "--metadata", lake.metadata_path, "--stage", "other")[0] == 0
    written = set((lake.root / "lake" / "customers").glob("*.parquet"))
    assert len(written) == 2

    code, _, err = run_cli(capsys, "maintenance", "--metadata", lake.metadata_path, "--retention-hours", "0")

    assert code == 0
    left = set((lake.root / "lake" / "customers").glob("*.parquet"))
    assert len(left) == 1
    assert not left & written
    assert re.search(
        r"succeeded customers \(compacted 2 file\(s\) \(\d+\.\d KiB\) into 1 \(\d+\.\d KiB\); "
        r"vacuumed 2 unreferenced file\(s\) \(\d+\.\d KiB deleted\); table version \d+\)",
        err,
    ), err
    assert re.search(r"skipped +orders \(reason: Delta table at .*orders does not exist yet\)", err), err
    assert "read 0, wrote 0" not in err
