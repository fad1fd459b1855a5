"""The bundled example: DataCoolie metadata over a small generated orders/customers data set."""

from pathlib import Path

EXAMPLE_DIR = Path(__file__).parent
METADATA_PATH = EXAMPLE_DIR / "metadata.json"
DATA_ROOT = "data"
"""The example's data root, relative to the working directory: its metadata's base paths are ``./data/...``."""
