from __future__ import annotations

import gc
import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from datacoolie_core import MetadataError
from datacoolie_dagster.location.translator import DataCoolieTranslator


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


@pytest.mark.parametrize("enabled", [True, False])
def test_the_build_pauses_the_cyclic_gc_and_restores_it(tmp_path: Path, enabled: bool) -> None:
    from datacoolie_dagster import build_definitions
    from datacoolie_dagster.example import EXAMPLE_DIR

    seen: list[bool] = []
    translator = _RecordingTranslator(seen)
    gc.enable() if enabled else gc.disable()
    try:
        build_definitions(EXAMPLE_DIR / "metadata.json", translator=translator, state_base_path=tmp_path)
        after_build = gc.isenabled()
        with pytest.raises(MetadataError):
            build_definitions(tmp_path / "missing.json", state_base_path=tmp_path)
        after_error = gc.isenabled()
    finally:
        gc.enable()
    assert seen  # the translator was asked
    assert not any(seen)  # paused while the specs were built
    assert (after_build, after_error) == (enabled, enabled)


@pytest.mark.parametrize("enabled", [True, False])
def test_the_first_build_of_a_process_freezes_what_it_built(tmp_path: Path, enabled: bool) -> None:
    # a fresh process: the test process has built definitions before
    code = f"""
import gc, json
from datacoolie_dagster import build_definitions
from datacoolie_dagster.example import EXAMPLE_DIR
gc.enable() if {enabled} else gc.disable()
counts = [gc.get_freeze_count()]
for _ in range(2):
    defs = build_definitions(EXAMPLE_DIR / "metadata.json", state_base_path={str(tmp_path)!r})
    counts.append(gc.get_freeze_count())
print(json.dumps([counts, gc.isenabled()]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    (before, first, second), still_enabled = json.loads(done.stdout.strip().splitlines()[-1])
    assert still_enabled is enabled
    if enabled:
        assert before == 0 < first  # the definitions are out of the full collections' walk
        # only once: a process building again freezes nothing more (the first definitions, replaced,
        # are freed by reference counting)
        assert second <= first
    else:
        assert before == first == second == 0  # a host that manages collection itself is left alone


class _RecordingTranslator(DataCoolieTranslator):
    def __init__(self, seen: list[bool]) -> None:
        super().__init__()
        self.seen = seen

    def get_asset_spec(self, data: Any) -> dg.AssetSpec:
        self.seen.append(gc.isenabled())
        return super().get_asset_spec(data)


@pytest.mark.parametrize("name", ["missing.json", "a-folder"])
def test_an_unreadable_metadata_path_is_a_metadata_error(tmp_path: Path, name: str) -> None:
    from datacoolie_dagster import build_definitions

    (tmp_path / "a-folder").mkdir()
    with pytest.raises(MetadataError, match=rf"{name}: \$: cannot read the metadata file"):
        build_definitions(tmp_path / name, state_base_path=tmp_path / "state")


@pytest.mark.parametrize("metadata", ["example", "other"])
def test_the_module_location_runs_every_job_with_the_executor_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, metadata: str
) -> None:
    from datacoolie_dagster.example import METADATA_PATH

    (tmp_path / "executor.yaml").write_text("executor: {multiprocess: {max_concurrent: 3}}\n", encoding="utf-8")
    monkeypatch.setenv("DATACOOLIE_EXECUTOR_CONFIG", str(tmp_path / "executor.yaml"))
    monkeypatch.setenv("DATACOOLIE_HOME", str(tmp_path / "data"))
    if metadata == "other":  # the example's metadata under another path: no example job
        monkeypatch.setenv("DATACOOLIE_METADATA", str(tmp_path / "metadata.json"))
        (tmp_path / "metadata.json").write_bytes(METADATA_PATH.read_bytes())
    import datacoolie_dagster.definitions as definitions

    try:
        defs = importlib.reload(definitions).defs
        jobs = ["datacoolie_landing2bronze", "datacoolie_all_stages", "datacoolie_maintenance", "__ASSET_JOB"]
        jobs += ["land_example_batch"] if metadata == "example" else []
        chosen = {job: defs.resolve_job_def(job).executor_def for job in jobs}
    finally:
        monkeypatch.delenv("DATACOOLIE_EXECUTOR_CONFIG")
        monkeypatch.delenv("DATACOOLIE_METADATA", raising=False)
        importlib.reload(definitions)
    assert {job: e.name for job, e in chosen.items()} == dict.fromkeys(jobs, "multiprocess")
    assert all(e is not dg.multi_or_in_process_executor for e in chosen.values())


def test_the_module_location_sends_engine_logs_where_datacoolie_log_path_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATACOOLIE_HOME", str(tmp_path / "data"))
    import datacoolie_dagster.definitions as definitions

    try:
        default = importlib.reload(definitions).defs.resources["datacoolie"].log_base_path
        monkeypatch.setenv("DATACOOLIE_LOG_PATH", "-")
        stdout = importlib.reload(definitions).defs.resources["datacoolie"].log_base_path
    finally:
        monkeypatch.delenv("DATACOOLIE_LOG_PATH", raising=False)
        monkeypatch.delenv("DATACOOLIE_HOME")
        importlib.reload(definitions)
    assert default == str(tmp_path / "data" / "logs")
    assert stdout == "-"
