"""The S3 credentials never reach an output, even with every logger at DEBUG.

A real run in a subprocess, its Python loggers at DEBUG into a file and delta-rs' Rust logs at
``RUST_LOG=debug`` on stderr, writing execution and system logs (``--log-path``): one dataflow
loads an S3 table, one fails on a missing S3 folder. Every byte the run wrote (stdout, stderr, the
debug log, the log folder) is searched for the secret access key in the forms an output can carry
it (raw, URL-encoded, base64).
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.core.object_storage.lake import S3Lake, orders
from tests.support.s3 import SECRET_ACCESS_KEY, S3Server

pytestmark = [pytest.mark.slow, pytest.mark.s3]
REPO = Path(__file__).parents[3]
DEBUG_RUN = """
import logging, sys
logging.basicConfig(level=logging.DEBUG, filename=sys.argv[1], format="%(name)s %(levelname)s %(message)s")
from datacoolie_core.cli import main
sys.exit(main(sys.argv[2:]))
"""
SECRET_FORMS = {
    SECRET_ACCESS_KEY,
    quote(SECRET_ACCESS_KEY, safe=""),
    base64.b64encode(SECRET_ACCESS_KEY.encode()).decode(),
}


def test_no_output_of_a_debug_run_holds_the_s3_secret(s3: S3Server, tmp_path: Path) -> None:
    lake = S3Lake(s3, tmp_path)
    lake.write_metadata(
        [
            {"name": "orders", "stage": "s",
             "source": {"connection_name": "landing", "schema_name": "sales", "table": "orders"},
             "destination": {"connection_name": "lake", "schema_name": "silver", "table": "orders", "load_type": "append"}},
            {"name": "missing", "stage": "s",
             "source": {"connection_name": "landing", "schema_name": "sales", "table": "nowhere"},
             "destination": {"connection_name": "lake", "schema_name": "silver", "table": "nowhere", "load_type": "append"}},
        ]
    )  # fmt: skip
    lake.land("sales/orders", "a", orders([1, 2], [10, 20]))
    debug_log, log_path = tmp_path / "debug.log", tmp_path / "logs"
    done = subprocess.run(
        [sys.executable, "-c", DEBUG_RUN, str(debug_log), "run", "--metadata", str(lake.metadata),
         "--state-path", str(lake.state), "--log-path", str(log_path), "--json"],
        cwd=REPO, env=os.environ | {"RUST_LOG": "debug"}, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]  # "missing" failed, "orders" loaded
    assert '"succeeded": 1' in done.stdout
    assert "holds no object" in done.stdout  # the failure reached the output, so its message was checked
    debug = debug_log.read_text()
    assert "datacoolie" in debug  # the DEBUG log really recorded the run
    assert "delta" in done.stderr.lower()  # ... and so did delta-rs at RUST_LOG=debug
    outputs = {"stdout": done.stdout, "stderr": done.stderr, "debug.log": debug}
    outputs |= {str(p): p.read_bytes().decode("utf-8", "replace") for p in log_path.rglob("*") if p.is_file()}
    assert len(outputs) > 3  # the execution and system logs were written
    leaks = [(name, form) for name, text in outputs.items() for form in SECRET_FORMS if form in text]
    assert leaks == []
