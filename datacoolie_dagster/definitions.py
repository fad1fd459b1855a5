"""The code location's ``defs``, loaded by ``workspace.yaml`` and the Dockerfile.

The metadata file comes from ``DATACOOLIE_METADATA_PATH`` (default: the bundled example) and is
validated at load, so a broken metadata file fails the code location with the full error list
instead of loading half of it. Assets, jobs and sensors are built by the definitions factory.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from datacoolie_core import FileProvider

EXAMPLE_METADATA = Path(__file__).parent / "example" / "metadata.json"
METADATA_PATH = Path(os.environ.get("DATACOOLIE_METADATA_PATH", EXAMPLE_METADATA))

provider = FileProvider(METADATA_PATH)
provider.initialize()  # a broken metadata file fails the code location with every error listed

defs = dg.Definitions()
