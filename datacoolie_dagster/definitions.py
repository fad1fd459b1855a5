"""The code location's ``defs``, loaded by ``workspace.yaml`` and the Dockerfile.

``DATACOOLIE_METADATA`` names the metadata file (default: the bundled example); state and logs go
under ``DATACOOLIE_HOME`` (default ``./data``, relative to the working directory ``workspace.yaml``
sets). A broken metadata file fails the code location with every error listed.
"""

from __future__ import annotations

import os
from pathlib import Path

from datacoolie_dagster.example import METADATA_PATH as EXAMPLE_METADATA
from datacoolie_dagster.factory import build_definitions

METADATA_PATH = Path(os.environ.get("DATACOOLIE_METADATA", EXAMPLE_METADATA))
HOME = Path(os.environ.get("DATACOOLIE_HOME", "data"))

defs = build_definitions(METADATA_PATH, state_base_path=HOME / "state", log_base_path=HOME / "logs")
