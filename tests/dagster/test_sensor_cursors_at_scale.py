"""The sensors' cursors on a large generated deployment: small enough to put back from the command line.

10,000 dataflows (5,000 landing files loaded to bronze, 5,000 silver tables reading them), their
watermarks stored as a load leaves them. The documented recovery of a sensor cursor is
``dagster sensor cursor NAME --set <cursor>``, one command-line argument, which Linux caps at
128 KiB: each sensor's first tick leaves a cursor well under it, the CLI puts it back, and the
sensor reads it back as a quiet tick.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest

from datacoolie_core import FileProvider
from datacoolie_core.watermark.serializer import serialize_watermark
from datacoolie_dagster import build_definitions
from datacoolie_dagster.automation.sensing.sensors import SOURCE_SENSOR_NAME
from datacoolie_dagster.automation.sensing.watermark_sensor import WATERMARK_SENSOR_NAME
from tests.dagster.cli_support import REPOSITORY
from tests.dagster.daemon_support import prepare
from tests.dagster.test_automation_daemon import command
from tests.dagster.test_watermark_daemon import cursor_of

pytestmark = pytest.mark.slow

PAIRS = 5_000
ARGUMENT_LIMIT = 128 * 1024
"""Linux's limit on one command-line argument (MAX_ARG_STRLEN)."""
CODE_LOCATION = """
from datacoolie_dagster import build_definitions

defs = build_definitions("metadata.json", state_base_path="state")
"""
WORKSPACE = "load_from:\n  - python_file: {relative_path: defs.py, location_name: large, working_directory: .}\n"
ROWS = pl.DataFrame({"id": [1, 2, 3], "updated_at": [datetime(2024, 3, 6)] * 3})


def deploy(root: Path, pairs: int) -> Path:
    """Metadata, one landing file per bronze table, and every watermark stored."""
    flows = []
    for i in range(pairs):
        flows.append(_flow(f"load_{i}", ("landing", f"t{i}"), ("bronze", f"t{i}"), "landing2bronze"))
        flows.append(_flow(f"follow_{i}", ("bronze", f"t{i}"), ("silver", f"t{i}"), "bronze2silver"))
    lake = {"connection_type": "lakehouse", "format": "delta"}
    connections = [
        {"name": "landing", "connection_type": "file", "format": "parquet",
         "configure": {"base_path": str(root / "landing")}},
        {"name": "bronze", **lake, "configure": {"base_path": str(root / "bronze")}},
        {"name": "silver", **lake, "configure": {"base_path": str(root / "silver")}},
    ]  # fmt: skip
    metadata = root / "metadata.json"
    metadata.write_text(json.dumps({"connections": connections, "dataflows": flows}), encoding="utf-8")
    for i in range(pairs):
        (root / "landing" / f"t{i}").mkdir(parents=True)
        ROWS.write_parquet(root / "landing" / f"t{i}" / "part-0.parquet")
    provider = FileProvider(str(metadata), state_base_path=str(root / "state"))
    stored = serialize_watermark({"updated_at": datetime(2024, 3, 6, tzinfo=UTC)})
    for dataflow in provider.get_dataflows():
        if dataflow.stage == "landing2bronze":
            provider.update_watermark(str(dataflow.dataflow_id), stored)
    return metadata


def _flow(name: str, source: tuple[str, str], destination: tuple[str, str], stage: str) -> dict[str, Any]:
    watermark = ["__file_modification_time"] if source[0] == "landing" else ["updated_at"]
    return {
        "name": name,
        "stage": stage,
        "source": {"connection_name": source[0], "table": source[1], "watermark_columns": watermark},
        "destination": {"connection_name": destination[0], "table": destination[1], "load_type": "append"},
    }


def test_each_cursor_of_ten_thousand_dataflows_is_put_back_from_the_command_line(tmp_path: Path) -> None:
    daemon = prepare(tmp_path, REPOSITORY / "dagster.yaml", workspace=WORKSPACE)
    (tmp_path / "defs.py").write_text(CODE_LOCATION, encoding="utf-8")
    defs = build_definitions(deploy(tmp_path, PAIRS), state_base_path=tmp_path / "state")

    with daemon.instance() as instance:
        for name in (SOURCE_SENSOR_NAME, WATERMARK_SENSOR_NAME):
            sensor = defs.get_sensor_def(name)
            first = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=None, definitions=defs))
            assert first.run_requests == []
            assert first.cursor is not None
            assert len(first.cursor) < ARGUMENT_LIMIT * 2 // 3, (name, len(first.cursor))

            command(daemon, "dagster", "sensor", "cursor", name, "--set", first.cursor, "-w", "workspace.yaml")
            stored = cursor_of(instance, name)
            assert stored == first.cursor

            context = dg.build_sensor_context(instance=instance, cursor=stored, definitions=defs)
            again = sensor.evaluate_tick(context)
            assert again.run_requests == []
            assert again.cursor == first.cursor
