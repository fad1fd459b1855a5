"""``DataCoolieComponent``: found by ``dg``, loaded from a ``defs.yaml`` through Dagster's own
component loader, with every relative path under one root (the project root)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster.components.testing import DefsFolderSandbox, create_defs_folder_sandbox
from deltalake import DeltaTable

from datacoolie_dagster import DataCoolieComponent
from datacoolie_dagster.example import METADATA_PATH
from datacoolie_dagster.example.generate import land_batch

REPOSITORY = Path(__file__).parents[2]
DOCUMENTED = REPOSITORY / "docs" / "ui.md"


def documented_defs_yaml() -> str:
    """The ``defs.yaml`` example of docs/ui.md, exactly as written there."""
    match = re.search(r"```yaml\n(# src/my_project/defs/datacoolie/defs\.yaml\n.*?)```", DOCUMENTED.read_text(), re.S)
    assert match, "docs/ui.md lost its defs.yaml example"
    return match.group(1)


@pytest.fixture
def sandbox() -> Iterator[DefsFolderSandbox]:
    # the component's defs.yaml has no Beta parts, but the sandbox's scaffolding does
    with create_defs_folder_sandbox() as sandbox:
        yield sandbox


def with_documented_component(sandbox: DefsFolderSandbox) -> Path:
    """The documented defs.yaml in the sandbox project, the example metadata where it points."""
    folder = sandbox.scaffold_component(component_cls=DataCoolieComponent, defs_path="datacoolie")
    (folder / "defs.yaml").write_text(documented_defs_yaml(), encoding="utf-8")
    (sandbox.project_root / "metadata").mkdir()
    shutil.copy(METADATA_PATH, sandbox.project_root / "metadata" / "pipeline.json")
    return folder


@pytest.mark.slow
def test_dg_lists_the_component() -> None:
    listed = subprocess.run(
        [str(Path(sys.executable).parent / "dg"), "list", "components", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPOSITORY.parent,  # outside any dg project: what the environment's entry points register
    )
    assert listed.returncode == 0, listed.stderr
    components = {item["key"]: item["summary"] for item in json.loads(listed.stdout)["items"]}
    assert components["datacoolie_dagster.DataCoolieComponent"] == DataCoolieComponent.__doc__


def test_the_documented_defs_yaml_builds_the_definitions(
    sandbox: DefsFolderSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = with_documented_component(sandbox)
    monkeypatch.chdir(sandbox.project_root)
    with sandbox.build_all_defs() as defs:
        keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
        jobs = {job.name for job in defs.resolve_all_job_defs()}
        resource = defs.resources["datacoolie"]
        schedules = {s.name: (s.cron_schedule, s.execution_timezone) for s in defs.schedules or []}
        sensors = {s.name for s in defs.sensors or []}
        pools = {a.op.pool for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition) and a.is_executable}
    assert keys == {
        "landing_csv/sales/orders",
        "landing_parquet/crm/customers",
        "bronze/sales/orders",
        "bronze/crm/customers",
        "silver/sales/orders",
        "silver/crm/customers",
    }
    assert {"datacoolie_landing2bronze", "datacoolie_bronze2silver", "datacoolie_all_stages"} <= jobs
    # one root: the project root, not the folder of defs.yaml
    root = sandbox.project_root
    assert resource.metadata_path == str(root / "metadata" / "pipeline.json")
    assert (resource.state_base_path, resource.log_base_path) == (str(root / "data/state"), str(root / "data/logs"))
    assert str(folder) not in resource.state_base_path
    assert schedules == {"datacoolie_bronze2silver_schedule": ("0 * * * *", "Europe/Paris")}
    assert {"datacoolie_schedule_catchup", "datacoolie_pool_limits"} <= sensors  # catchup: true, max_runs
    assert "datacoolie/bronze2silver" in pools


@pytest.mark.slow
def test_tables_and_watermarks_land_under_the_project_root(
    sandbox: DefsFolderSandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = with_documented_component(sandbox)
    root = sandbox.project_root
    monkeypatch.chdir(root)
    land_batch(root / "data", 1)
    with sandbox.build_all_defs() as defs, dg.DagsterInstance.ephemeral() as instance:
        job = defs.resolve_implicit_global_asset_job_def()
        result = job.execute_in_process(
            instance=instance, asset_selection=[dg.AssetKey.from_user_string("bronze/sales/orders")]
        )
    assert result.success
    table = DeltaTable(str(root / "data" / "bronze" / "sales" / "orders"))
    assert table.to_pyarrow_table().num_rows == 600
    watermarks = list((root / "data" / "state" / "watermarks").rglob("watermark_value.json"))
    assert len(watermarks) == 1
    # nothing was written beside defs.yaml
    assert sorted(p.name for p in folder.iterdir()) == ["defs.yaml"]


def test_a_code_location_started_outside_the_project_root_is_refused(
    sandbox: DefsFolderSandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with_documented_component(sandbox)
    monkeypatch.chdir(tmp_path)
    # Dagster wraps a component's load error in its own (the tree of defs.yaml files); ours is the cause
    refused = pytest.raises(Exception, match=r"defs\.yaml \(DataCoolieComponent\) \(error\)")
    with refused as raised, sandbox.build_all_defs():
        pass
    cause = raised.value.__cause__
    assert isinstance(cause, ValueError)
    assert re.search(
        r"defs\.yaml: the metadata's relative base_path '\./data/bronze', '\./data/landing', '\./data/silver' resolve "
        rf"against the working directory {tmp_path}, and this component's paths against the project root "
        rf"{sandbox.project_root}; start dg / dagster from {sandbox.project_root}, or make those base paths absolute",
        str(cause),
    ), cause
    assert not (tmp_path / "data").exists()


def test_the_project_root_check_skips_absolute_base_paths(
    sandbox: DefsFolderSandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with_documented_component(sandbox)
    metadata = sandbox.project_root / "metadata" / "pipeline.json"
    text = metadata.read_text().replace('"./data/', f'"{sandbox.project_root}/data/')
    metadata.write_text(text)
    monkeypatch.chdir(tmp_path)
    with sandbox.build_all_defs() as defs:
        assert "datacoolie" in defs.resources
    assert os.getcwd() == str(tmp_path)
