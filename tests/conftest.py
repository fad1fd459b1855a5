from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
METADATA_FIXTURES = FIXTURES / "metadata"

MINIMAL_DOCUMENT: dict[str, Any] = {
    "connections": [
        {"name": "landing", "format": "csv", "configure": {"base_path": "./lake/landing"}},
        {"name": "lake", "format": "delta", "configure": {"base_path": "./lake/silver"}},
    ],
    "dataflows": [
        {
            "name": "orders",
            "stage": "bronze2silver",
            "source": {"connection_name": "landing", "table": "orders", "watermark_columns": ["updated_at"]},
            "destination": {
                "connection_name": "lake",
                "table": "orders",
                "load_type": "merge_upsert",
                "merge_keys": ["order_id"],
            },
        },
        {
            "name": "customers",
            "stage": "bronze2silver",
            "source": {"connection_name": "landing", "table": "customers"},
            "destination": {"connection_name": "lake", "table": "customers"},
        },
    ],
}


@pytest.fixture
def document() -> dict[str, Any]:
    """A fresh copy of a small valid metadata document."""
    return copy.deepcopy(MINIMAL_DOCUMENT)


def write_json(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path
