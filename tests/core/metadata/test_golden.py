"""Golden metadata files load into the expected models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datacoolie_core import FileProvider
from datacoolie_core.metadata import read_metadata_file, validate_document
from tests.conftest import METADATA_FIXTURES

SCHEMA = Path(__file__).parents[3].parent / "shared" / "reference" / "datacoolie-metadata-0.2.0.schema.json"
GOLDEN = ["full.json", "full_coerced.yaml", "contract_example.json"]


@pytest.fixture(scope="module")
def full() -> FileProvider:
    return FileProvider(METADATA_FIXTURES / "full.json")


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_files_have_no_issues(name: str) -> None:
    document = validate_document(read_metadata_file(METADATA_FIXTURES / name), file=name)
    assert document.issues == ()


@pytest.mark.skipif(not SCHEMA.exists(), reason="DataCoolie's JSON Schema is not beside the checkout")
@pytest.mark.parametrize("name", ["full.json", "contract_example.json"])
def test_json_fixtures_are_valid_for_datacoolie_schema(name: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    errors = list(
        jsonschema.Draft202012Validator(schema).iter_errors(json.loads((METADATA_FIXTURES / name).read_text()))
    )
    assert errors == []


def test_coerced_yaml_means_the_same_as_canonical_json() -> None:
    canonical = FileProvider(METADATA_FIXTURES / "full.json")
    coerced = FileProvider(METADATA_FIXTURES / "full_coerced.yaml")
    assert [c.model_dump() for c in coerced.get_connections(active_only=False)] == [
        c.model_dump() for c in canonical.get_connections(active_only=False)
    ]
    assert [d.model_dump() for d in coerced.get_dataflows(active_only=False)] == [
        d.model_dump() for d in canonical.get_dataflows(active_only=False)
    ]


def test_connections(full: FileProvider) -> None:
    csv = full.get_connection_by_name("landing_csv")
    assert csv is not None
    assert (csv.connection_type, csv.format, csv.base_path) == ("file", "csv", "./lake/landing")
    assert csv.read_options == {"header": "true", "sep": ";", "inferSchema": "false"}
    assert csv.configure.use_hive_partitioning is True
    assert csv.configure.backward_config is not None
    assert csv.configure.backward_config.days == 2

    bronze = full.get_connection_by_name("bronze")
    assert bronze is not None
    assert (bronze.connection_type, bronze.format) == ("lakehouse", "delta")

    silver = full.get_connection_by_id("conn-silver")
    assert silver is not None
    assert silver.name == "silver"

    warehouse = full.get_connection_by_name("warehouse")
    assert warehouse is not None
    assert (warehouse.catalog, warehouse.database) == ("main", "analytics")

    db = full.get_connection_by_name("crm_db")
    assert db is not None
    assert (db.connection_type, db.configure.database_type, db.configure.port) == ("database", "postgresql", 5432)
    assert db.secrets_ref == {"env:APP_": ["password"], "": ["username"]}
    assert db.configure.extras == {"sslmode": "prefer"}
    assert "CRM_PASSWORD" not in repr(db)

    generators = full.get_connection_by_name("generators")
    assert generators is not None
    assert generators.format == "function"

    assert {c.name for c in full.get_connections()} == {c.name for c in full.get_connections(active_only=False)} - {
        "landing_json"
    }


def test_dataflow_envelope_and_legacy_connection(full: FileProvider) -> None:
    (orders,) = list(full.get_dataflows(stage="landing2bronze"))
    assert orders.name == "orders_landing_to_bronze"
    assert orders.dataflow_id == "da357e42-e397-5ebb-b7f1-d42744ebf3a3"
    assert orders.configure == {"owner": "sales"}
    assert orders.source.connection.name == "landing_csv"
    assert orders.source.schema_name == "sales"
    assert orders.source.path == "./lake/landing/sales/orders"
    assert orders.source.read_options == {"header": "true", "sep": ",", "inferSchema": "false"}
    assert orders.source.watermark_columns == ["__file_modification_time"]
    assert orders.destination.load_type == "overwrite"  # written as full_load
    assert orders.destination.path == "./lake/bronze/sales/orders"
    assert orders.destination.destination_key == "path:./lake/bronze/sales/orders"


def test_transform_rules(full: FileProvider) -> None:
    transform = full.get_dataflow_by_id("da357e42-e397-5ebb-b7f1-d42744ebf3a3").transform  # type: ignore[union-attr]
    assert [r.operation for r in transform.value_rules] == [
        "trim", "case", "regex_replace", "empty_to_null", "fill_null", "map",
    ]  # fmt: skip
    assert transform.value_rules[1].order == 10
    assert transform.value_rules[1].mode == "upper"
    assert transform.value_rules[5].on_unmapped == "null"
    assert [(h.target_column, h.algorithm) for h in transform.hash_columns] == [
        ("row_hash", "sha256"),
        ("id_hash", "xxhash64"),
    ]
    assert [m.method for m in transform.masking_rules] == [
        "redact", "nullify", "partial", "numeric_bucket", "date_truncate",
    ]  # fmt: skip
    assert transform.masking_rules[2].mask_char == "#"
    assert transform.configure.convert_timestamp_ntz is False
    assert transform.configure.extras == {"my_plugin_option": 3}


def test_merge_dataflow_with_inline_connection(full: FileProvider) -> None:
    customers = next(d for d in full.get_dataflows() if d.name == "customers_to_silver")
    assert customers.source.connection.name == "inline_bronze"
    assert customers.source.connection.connection_type == "lakehouse"
    assert customers.source.watermark_columns == ["updated_at", "created_at"]
    assert customers.deduplicate_columns == ["customer_id"]
    assert customers.order_columns == ["updated_at"]
    assert customers.destination.merge_keys_extended == ["customer_id", "country"]
    assert customers.transform.rename_columns == {"full_name": "customer_name"}
    assert customers.transform.configure.deduplicate_by_rank is True
    # the dataflow's own schema hints win over shared ones
    assert [h.column_name for h in customers.transform.schema_hints] == ["age"]
    assert customers.transform.schema_hints[0].ordinal_position == 2


def test_scd2_partitions_lifted_from_configure(full: FileProvider) -> None:
    history = next(d for d in full.get_dataflows() if d.name == "customers_history")
    assert history.destination.configure.scd2_effective_column == "updated_at"
    assert [(p.column, p.expression) for p in history.destination.partition_columns] == [
        ("valid_year", "YEAR(updated_at)")
    ]
    assert history.destination.destination_key == "table:`main`.`analytics`.`dim_customer`"
    events = next(d for d in full.get_dataflows() if d.name == "events_window_replace")
    assert [p.column for p in events.destination.partition_columns] == ["event_date"]
    assert events.source.backward is not None
    assert events.source.backward.days == 3


def test_other_sources(full: FileProvider) -> None:
    by_name = {d.name: d for d in full.get_dataflows()}
    assert by_name["crm_accounts"].source.query is not None
    assert by_name["gen-calendar"].dataflow_id == "gen-calendar"
    assert by_name["gen-calendar"].source.python_function == "my_project.sources.calendar"
    mapping = by_name["api_orders"].source.configure.range_param_mapping
    assert mapping is not None
    assert mapping["updated_at"].lower is not None
    assert mapping["updated_at"].lower.name == "updated_from"
    assert mapping["updated_at"].lower.operator == ">="
    assert mapping["updated_at"].upper is not None
    assert mapping["updated_at"].upper.operator == "<="
    assert by_name["sqlite_items"].destination.connection.format == "parquet"


def test_shared_schema_hints(full: FileProvider) -> None:
    orders = next(d for d in full.get_dataflows() if d.name == "orders_landing_to_bronze")
    # the schema-specific group wins over the any-schema group; inactive hints are dropped;
    # tables compare case-insensitively (the group says ORDERS)
    assert [(h.column_name, h.type_string) for h in orders.transform.schema_hints] == [
        ("order_id", "long"),
        ("amount", "decimal(12,2)"),
        ("created_at", "timestamp"),
    ]
    raw = full.get_dataflow_by_id(orders.dataflow_id or "", attach_schema_hints=False)
    assert raw is not None
    assert raw.transform.schema_hints == []
    # use_schema_hint: off on the connection -> no shared hints
    events = next(d for d in full.get_dataflows() if d.name == "events_window_replace")
    assert events.transform.schema_hints == []


def test_contract_example() -> None:
    provider = FileProvider(METADATA_FIXTURES / "contract_example.json")
    (dataflow,) = provider.get_dataflows()
    assert dataflow.dataflow_id == "76ffe424-93cf-5b62-a8c4-2af31a4db44f"
    assert dataflow.destination.merge_keys == ["customer_id"]
    assert [h.column_name for h in dataflow.transform.schema_hints] == ["customer_id", "signup_date"]
    assert provider.watermark_folder(dataflow.dataflow_id or "") == (
        "landing2silver_customers_landing_to_silver_76ffe424-93cf-5b62-a8c4-2af31a4db44f"
    )
