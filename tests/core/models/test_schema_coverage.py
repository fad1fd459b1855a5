"""Every property of DataCoolie's 0.2.0 JSON Schema is a key our models accept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from datacoolie_core.metadata.validation import TOP_LEVEL_KEYS
from datacoolie_core.models import (
    AdditionalColumn,
    Connection,
    ConnectionConfigure,
    DataFlow,
    Destination,
    DestinationConfigure,
    HashColumn,
    MaskingRule,
    PartitionColumn,
    SchemaHint,
    SharedSchemaHint,
    Source,
    SourceConfigure,
    Transform,
    TransformConfigure,
    ValueRule,
)
from datacoolie_core.models.connection import CONNECTION_TYPES, FORMATS
from datacoolie_core.models.dataflow import LOAD_TYPES, PROCESSING_MODES
from datacoolie_core.models.source_api import REMOVED_API_KEYS, RangeParam

SCHEMA_PATH = Path(__file__).parents[3].parent / "shared" / "reference" / "datacoolie-metadata-0.2.0.schema.json"
pytestmark = pytest.mark.skipif(not SCHEMA_PATH.exists(), reason="DataCoolie's JSON Schema is not beside the checkout")

MODELS: dict[str, type[BaseModel]] = {
    "Connection": Connection,
    "DataFlow": DataFlow,
    "Source": Source,
    "Destination": Destination,
    "Transform": Transform,
    "ValueRule": ValueRule,
    "MaskingRule": MaskingRule,
    "HashColumn": HashColumn,
    "SchemaHint": SchemaHint,
    "PartitionColumn": PartitionColumn,
    "AdditionalColumn": AdditionalColumn,
    "SharedSchemaHint": SharedSchemaHint,
}
CONFIGURES: dict[str, type[BaseModel]] = {
    "Connection": ConnectionConfigure,
    "ConnectionConfigureFile": ConnectionConfigure,
    "ConnectionConfigureLakehouse": ConnectionConfigure,
    "ConnectionConfigureDatabase": ConnectionConfigure,
    "ConnectionConfigureApi": ConnectionConfigure,
    "Source": SourceConfigure,
    "Destination": DestinationConfigure,
    "Transform": TransformConfigure,
}


def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


def _keys(model: type[BaseModel]) -> set[str]:
    return {info.alias or name for name, info in model.model_fields.items()}


def _configure_properties(definition: dict[str, Any]) -> set[str]:
    configure = (definition.get("then") or definition)["properties"]["configure"]
    return {key for key, spec in configure.get("properties", {}).items() if spec != {"not": {}}}


def test_top_level_keys() -> None:
    assert set(_schema()["properties"]) <= set(TOP_LEVEL_KEYS)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_object_properties(name: str) -> None:
    assert set(_schema()["$defs"][name]["properties"]) <= _keys(MODELS[name])


@pytest.mark.parametrize("name", sorted(CONFIGURES))
def test_configure_properties(name: str) -> None:
    assert _configure_properties(_schema()["$defs"][name]) <= _keys(CONFIGURES[name])


def test_removed_api_keys_are_exactly_the_schema_forbidden_ones() -> None:
    configure = _schema()["$defs"]["Source"]["properties"]["configure"]["properties"]
    assert {key for key, spec in configure.items() if spec == {"not": {}}} == set(REMOVED_API_KEYS)


def test_range_param_mapping_properties() -> None:
    configure = _schema()["$defs"]["Source"]["properties"]["configure"]["properties"]
    entry = configure["range_param_mapping"]["additionalProperties"]
    assert set(entry["properties"]) <= _keys(RangeParam)


@pytest.mark.parametrize(
    ("definition", "property_name", "known"),
    [
        ("Connection", "connection_type", CONNECTION_TYPES),
        ("Connection", "format", FORMATS),
        ("Destination", "load_type", (*LOAD_TYPES, "full_load")),
        ("DataFlow", "processing_mode", PROCESSING_MODES),
    ],
)
def test_every_enum_value_is_accepted(definition: str, property_name: str, known: tuple[str, ...]) -> None:
    assert set(_schema()["$defs"][definition]["properties"][property_name]["enum"]) <= set(known)
