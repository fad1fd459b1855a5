"""The code location of the Celery tests, loaded by the run's coordinator (this module run as a
script) and by every worker.

Everything comes from the environment the test gives each process: the metadata file (on the shared
path), the state — the PostgreSQL store ``DATACOOLIE_STATE_URL`` names, else files under
``DATACOOLIE_TEST_STATE`` on the shared path — and the executor config file, ``deploy/celery/worker.yaml`` or a
copy of it — the very file the workers start with, so both sides agree on broker and settings.
"""

from __future__ import annotations

import os
import sys

import dagster as dg

from datacoolie_dagster import build_definitions
from datacoolie_dagster.location.executors import executor_setting_from_file

STAGE_JOB = "datacoolie_landing2bronze"

STATE_URL = os.environ.get("DATACOOLIE_STATE_URL")

defs = build_definitions(
    os.environ["DATACOOLIE_TEST_METADATA"],
    state_base_path=None if STATE_URL else os.environ["DATACOOLIE_TEST_STATE"],
    state_url=STATE_URL,
    max_workers=1,
    retry_count=0,
    include_sensors=False,
    run_retries=0,
    executor=executor_setting_from_file(os.environ["DATACOOLIE_EXECUTOR_CONFIG"]),
    log_base_path=os.environ.get("DATACOOLIE_LOG_PATH"),  # "-": the engine's logs in the step's log
)


def stage_job() -> dg.JobDefinition:
    """The stage job, for ``dg.reconstructable`` (a worker rebuilds the job from this function)."""
    return defs.resolve_job_def(STAGE_JOB)


if __name__ == "__main__":
    # the run's coordinator, as a process of its own: `python -m tests.dagster.celery_location <shards>`
    with dg.DagsterInstance.get() as instance:
        result = dg.execute_job(
            dg.reconstructable(stage_job),
            instance=instance,
            run_config={"job_num": int(sys.argv[1])},
            raise_on_error=False,
        )
    print(result.run_id)
    sys.exit(0 if result.success else 1)
