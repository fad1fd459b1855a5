from __future__ import annotations

import importlib
from pathlib import Path

import dagster as dg
import pytest

from datacoolie_core import MetadataError


def test_code_location_loads_the_bundled_example() -> None:
    import datacoolie_dagster.definitions as definitions

    assert isinstance(definitions.defs, dg.Definitions)
    assert definitions.METADATA_PATH == definitions.EXAMPLE_METADATA
    graph = definitions.defs.get_repository_def().asset_graph
    assert {k.to_user_string() for k in graph.get_all_asset_keys()} == {
        "bronze/crm/customers", "bronze/sales/orders", "silver/crm/customers", "silver/sales/orders",
        "landing_csv/sales/orders", "landing_parquet/crm/customers",
    }  # fmt: skip


def test_code_location_fails_on_broken_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"dataflowz": []}')
    monkeypatch.setenv("DATACOOLIE_METADATA", str(broken))
    import datacoolie_dagster.definitions as definitions

    with pytest.raises(MetadataError, match="did you mean 'dataflows'"):
        importlib.reload(definitions)
    monkeypatch.delenv("DATACOOLIE_METADATA")
    importlib.reload(definitions)
