"""``DataCoolieComponent`` loads from a ``defs.yaml`` through Dagster's own component loader."""

from __future__ import annotations

import shutil
import warnings

import dagster as dg
from dagster.components.testing import create_defs_folder_sandbox

from datacoolie_dagster import DataCoolieComponent
from datacoolie_dagster.example import METADATA_PATH


def test_component_builds_the_same_definitions_as_the_factory() -> None:
    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    with create_defs_folder_sandbox() as sandbox:
        folder = sandbox.scaffold_component(
            component_cls=DataCoolieComponent,
            defs_yaml_contents={
                "type": "datacoolie_dagster.DataCoolieComponent",
                "attributes": {
                    "metadata_path": "metadata.json",
                    "stages": ["bronze2silver"],
                    "state_base_path": "state",
                    "schedules": {"bronze2silver": {"cron": "0 * * * *", "catchup": True}},
                    "max_runs": {"bronze2silver": 1},
                },
            },
        )
        shutil.copy(METADATA_PATH, folder / "metadata.json")
        with sandbox.build_all_defs() as defs:
            keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
            jobs = {job.name for job in defs.resolve_all_job_defs()}
            resource = defs.resources["datacoolie"]
            schedules = {s.name: s.cron_schedule for s in defs.schedules or []}
            pools = {a.op.pool for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition) and a.is_executable}
    # only bronze2silver is built: the bronze tables it reads are external sources with the same keys
    assert keys == {"silver/sales/orders", "silver/crm/customers", "bronze/sales/orders", "bronze/crm/customers"}
    assert "datacoolie_bronze2silver" in jobs
    assert "datacoolie_landing2bronze" not in jobs
    assert resource.metadata_path == str(folder / "metadata.json")
    assert resource.state_base_path == str(folder / "state")
    assert schedules == {"datacoolie_bronze2silver_schedule": "0 * * * *"}
    assert pools == {"datacoolie/bronze2silver"}
