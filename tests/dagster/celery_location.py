"""The code location of the Celery tests, loaded by the test (the run's coordinator) and by every worker.

Everything comes from the environment the test gives each process: the metadata file and the state
root (both on the shared path) and the executor config file, ``deploy/celery/worker.yaml`` or a
copy of it — the very file the workers start with, so both sides agree on broker and settings.
"""

from __future__ import annotations

import os

import dagster as dg

from datacoolie_dagster import build_definitions
from datacoolie_dagster.location.executors import executor_setting_from_file

STAGE_JOB = "datacoolie_landing2bronze"

defs = build_definitions(
    os.environ["DATACOOLIE_TEST_METADATA"],
    state_base_path=os.environ["DATACOOLIE_TEST_STATE"],
    max_workers=1,
    retry_count=0,
    include_sensors=False,
    run_retries=0,
    executor=executor_setting_from_file(os.environ["DATACOOLIE_EXECUTOR_CONFIG"]),
)


def stage_job() -> dg.JobDefinition:
    """The stage job, for ``dg.reconstructable`` (a worker rebuilds the job from this function)."""
    return defs.resolve_job_def(STAGE_JOB)
