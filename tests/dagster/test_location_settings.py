"""One settings model: the resource, ``build_definitions``, the component and a stage job's run
config take their settings and defaults from :class:`DataCoolieSettings`, whose driver defaults are
core's run config's."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from pydantic import ValidationError

from datacoolie_core import DataCoolieRunConfig
from datacoolie_dagster import DataCoolieComponent, DataCoolieResource, build_definitions
from datacoolie_dagster.location.jobs import ShardJobConfig
from datacoolie_dagster.location.location_settings import (
    DRIVER_FIELDS,
    DataCoolieSettings,
    DriverSettings,
    RuntimeSettings,
)
from datacoolie_dagster.location.resources import DataCoolieResource as ResourceClass
from tests.dagster.conftest import LINEAGE, write_metadata


def defaults(model: type[Any]) -> dict[str, Any]:
    return {name: field.default for name, field in model.model_fields.items() if not field.is_required()}


def test_driver_defaults_are_the_core_run_configs() -> None:
    run = DataCoolieRunConfig()
    assert {name: getattr(run, name) for name in DRIVER_FIELDS} == defaults(DriverSettings)
    assert (run.max_workers, run.retry_count) == (4, 1)  # the documented defaults (docs/snapshot-retries.md)


def test_resource_and_component_defaults_are_the_models() -> None:
    assert ResourceClass is DataCoolieResource
    resource = DataCoolieResource(metadata_path="pipeline.json")
    assert {name: getattr(resource, name) for name in defaults(RuntimeSettings)} == defaults(RuntimeSettings)
    component = defaults(DataCoolieComponent)
    assert {name: component[name] for name in defaults(DataCoolieSettings)} == defaults(DataCoolieSettings)


def test_build_definitions_declares_no_defaults_of_its_own() -> None:
    # every setting comes from the model: the factory's own parameters are objects, not settings
    parameters = inspect.signature(build_definitions).parameters
    own = {name for name, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert own == {"translator", "resource", "io_manager", "executor"}
    # executor also takes an ExecutorDefinition, which no settings file can hold; unset: the settings'
    assert own & set(DataCoolieSettings.model_fields) == {"executor"}
    assert parameters["executor"].default is None


def test_build_definitions_builds_its_resource_from_the_settings(tmp_path: Path) -> None:
    metadata = write_metadata(tmp_path, LINEAGE)
    by_keyword = build_definitions(metadata, state_base_path=tmp_path / "state", include_sensors=False)
    by_model = build_definitions(
        DataCoolieSettings(metadata_path=str(metadata), state_base_path=str(tmp_path / "state"), include_sensors=False)
    )
    for defs in (by_keyword, by_model):
        resource = defs.resources["datacoolie"]
        assert isinstance(resource, DataCoolieResource)
        assert (resource.max_workers, resource.retry_count) == (4, 1)
        assert resource.state_base_path == str(tmp_path / "state")
        assert not defs.sensors or all("source" not in s.name for s in defs.sensors)
    assert {k.to_user_string() for k in by_keyword.resolve_all_asset_keys()} == {
        k.to_user_string() for k in by_model.resolve_all_asset_keys()
    }


def test_a_misspelt_setting_fails_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="max_worker"):
        build_definitions(write_metadata(tmp_path, LINEAGE), max_worker=2)


def test_a_stage_job_overrides_exactly_the_driver_settings() -> None:
    overridable = set(ShardJobConfig.model_fields) - {"job_num", "job_index", "dry_run"}
    assert overridable == set(DRIVER_FIELDS)
    # unset means the resource's value, never a second default
    assert all(ShardJobConfig.model_fields[name].default is None for name in DRIVER_FIELDS)


def test_a_stage_job_keeps_the_resources_stop_on_error() -> None:
    resource = DataCoolieResource(metadata_path="pipeline.json", stop_on_error=True)
    launch = ShardJobConfig().model_dump()
    assert resource.run_config(**{k: launch[k] for k in DRIVER_FIELDS}).stop_on_error is True


def test_sensor_status_is_a_setting(tmp_path: Path) -> None:
    defs = build_definitions(
        write_metadata(tmp_path, LINEAGE),
        state_base_path=tmp_path / "state",
        sensor_status=dg.DefaultSensorStatus.RUNNING,
    )
    assert defs.sensors
    assert all(
        s.default_status is dg.DefaultSensorStatus.RUNNING
        for s in defs.sensors
        if s.name.startswith("datacoolie_sources")
    )
