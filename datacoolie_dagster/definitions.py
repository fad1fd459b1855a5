"""The code location's ``defs``, loaded by ``workspace.yaml`` and the Dockerfile.

``DATACOOLIE_METADATA`` names the metadata file (default: the bundled example); state and logs go
under ``DATACOOLIE_HOME`` (default ``./data``, relative to the working directory ``workspace.yaml``
sets), or in the state database ``DATACOOLIE_STATE_URL`` names (``postgresql://…``);
``DATACOOLIE_LOG_PATH=-`` sends the engine's logs to the step's standard output instead.
``DATACOOLIE_EXECUTOR_CONFIG`` names a YAML file choosing the executor (Celery, Kubernetes; see
:mod:`datacoolie_dagster.location.executors` and docs/deployment.md), for the bundled example too. A broken metadata file fails the code location with every error listed. The bundled example
also gets the job ``land_example_batch`` and lands its first batch on the first run (see
:mod:`datacoolie_dagster.location.example_jobs`).
"""

from __future__ import annotations

import os
from pathlib import Path

from datacoolie_core.api import STATE_URL_VARIABLE
from datacoolie_dagster.example import METADATA_PATH as EXAMPLE_METADATA
from datacoolie_dagster.location.example_jobs import build_example_definitions
from datacoolie_dagster.location.executors import executor_setting_from_file
from datacoolie_dagster.location.factory import build_definitions

METADATA_PATH = Path(os.environ.get("DATACOOLIE_METADATA", EXAMPLE_METADATA))
HOME = Path(os.environ.get("DATACOOLIE_HOME", "data"))
STATE_URL = os.environ.get(STATE_URL_VARIABLE) or None
"""A state database shared by every worker; unset: files under ``DATACOOLIE_HOME/state``."""
STATE = {"state_url": STATE_URL} if STATE_URL else {"state_base_path": HOME / "state"}
LOG_PATH = os.environ.get("DATACOOLIE_LOG_PATH") or HOME / "logs"
"""The engine's execution and system logs: a folder, or ``-`` for the step's standard output (Dagster
keeps it with the step's captured log: on S3 in deploy/, readable from every host)."""
EXECUTOR_CONFIG = os.environ.get("DATACOOLIE_EXECUTOR_CONFIG")
EXECUTOR = executor_setting_from_file(EXECUTOR_CONFIG) if EXECUTOR_CONFIG else None
"""The same executor for the bundled example and any other metadata: a setting is never ignored."""

if METADATA_PATH.resolve() == EXAMPLE_METADATA.resolve():
    defs = build_example_definitions(**STATE, log_base_path=LOG_PATH, executor=EXECUTOR)
else:
    defs = build_definitions(METADATA_PATH, **STATE, log_base_path=LOG_PATH, executor=EXECUTOR)
