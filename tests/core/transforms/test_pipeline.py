from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core import FileProvider, plugins
from datacoolie_core.errors import TransformError
from datacoolie_core.transforms import (
    DEFAULT_TRANSFORMERS,
    TRANSFORMERS,
    TransformContext,
    Transformer,
    build_pipeline,
    get_transformer,
    plugin_transformers,
    run_pipeline,
)

from .conftest import RUN_ID, RUN_TIME, MakeCtx

UTC_US = pl.Datetime("us", "UTC")

# the contract's §1.8 example (CSV landing -> Delta silver, merge_upsert), as FileProvider reads it
EXAMPLE: dict[str, Any] = {
    "connections": [
        {
            "name": "landing_files",
            "connection_type": "file",
            "format": "csv",
            "configure": {"base_path": "./lake/landing"},
        },
        {
            "name": "silver_lake",
            "connection_type": "lakehouse",
            "format": "delta",
            "configure": {"base_path": "./lake/silver"},
        },
    ],
    "dataflows": [
        {
            "name": "customers_landing_to_silver",
            "stage": "landing2silver",
            "source": {
                "connection_name": "landing_files",
                "schema_name": "crm",
                "table": "customers",
                "watermark_columns": ["changed_at"],
                "filter_expression": "country IS NOT NULL",
            },
            "transform": {
                "deduplicate_columns": ["customer_id"],
                "latest_data_columns": ["changed_at"],
                "additional_columns": [{"column": "name_upper", "expression": "UPPER(full_name)"}],
                "configure": {"missing_column_policy": "error"},
            },
            "destination": {
                "connection_name": "silver_lake",
                "schema_name": "crm",
                "table": "customers",
                "load_type": "merge_upsert",
                "merge_keys": ["customer_id"],
            },
        }
    ],
    "schema_hints": [
        {
            "connection_name": "landing_files",
            "schema_name": "crm",
            "table_name": "customers",
            "hints": [
                {"column_name": "customer_id", "data_type": "long"},
                {"column_name": "signup_date", "data_type": "date", "format": "yyyy-MM-dd"},
            ],
        }
    ],
}


def example_ctx(tmp_path: Path) -> TransformContext:
    path = tmp_path / "pipeline.json"
    path.write_text(json.dumps(EXAMPLE), encoding="utf-8")
    [dataflow] = FileProvider(path).get_dataflows(stage="landing2silver")
    return TransformContext(dataflow, RUN_ID, RUN_TIME)


def test_the_contract_example(tmp_path: Path) -> None:
    mtime = datetime(2026, 3, 2, 9, tzinfo=UTC)
    # what the CSV reader hands over after the source filter: text columns plus file columns
    read = pl.DataFrame(
        {
            "__file_name": ["a.csv", "a.csv", "b.csv"],
            "Customer_ID": ["10", "11", "10"],
            "Full_Name": ["Ann", "Bob", "Ann B"],
            "country": ["NL", "BE", "NL"],
            "signup_date": ["2024-01-31", "2024-02-01", "2024-01-31"],
            "changed_at": ["2026-03-01T10:00:00", "2026-03-01T11:00:00", "2026-03-02T08:15:00"],
            "__file_path": ["/l/a.csv", "/l/a.csv", "/l/b.csv"],
            "__file_modification_time": [mtime, mtime, mtime],
        }
    )

    lazy, applied = run_pipeline(read, example_ctx(tmp_path))

    assert isinstance(lazy, pl.LazyFrame)
    assert applied == [
        "SchemaConverter(2 casts)",
        "Deduplicator",
        "ColumnAdder",
        "SystemColumnAdder",
        "ColumnNameSanitizer(lower)",
    ]
    run_time = pl.Series([RUN_TIME, RUN_TIME], dtype=UTC_US)
    expected = pl.DataFrame(
        {
            "customer_id": [11, 10],
            "full_name": ["Bob", "Ann B"],
            "country": ["BE", "NL"],
            "signup_date": [date(2024, 2, 1), date(2024, 1, 31)],
            "changed_at": ["2026-03-01T11:00:00", "2026-03-02T08:15:00"],
            "name_upper": ["BOB", "ANN B"],
            "__file_name": ["a.csv", "b.csv"],
            "__file_path": ["/l/a.csv", "/l/b.csv"],
            "__file_modification_time": pl.Series([mtime, mtime], dtype=UTC_US),
            "__created_at": run_time,
            "__updated_at": run_time,
            "__updated_by": ["DataCoolie", "DataCoolie"],
            "__dataflow_run_id": [RUN_ID, RUN_ID],
        }
    )
    assert_frame_equal(lazy.collect(), expected)


def test_every_slot_together(make_ctx: MakeCtx) -> None:
    ctx = make_ctx(
        column_name_mode="snake",
        source={"watermark_columns": ["Version"]},
        transform={
            "value_rules": [{"operation": "trim", "columns": ["CustomerName"]}],
            "schema_hints": [{"column_name": "Version", "data_type": "int"}],
            "hash_columns": [{"target_column": "RowHash", "columns": ["CustomerName"]}],
            "additional_columns": [{"column": "NameLength", "expression": "LENGTH(CustomerName)"}],
            "filter_expression": "NameLength > 1",
            "masking_rules": [{"method": "partial", "columns": ["Email"], "keep_start": 1}],
            "drop_columns": ["Junk"],
            "rename_columns": {"CustomerName": "FullName"},
        },
        destination={
            "load_type": "scd2",
            "merge_keys": ["Key"],
            "partition_columns": [{"column": "LoadDay", "expression": "CAST(__updated_at AS DATE)"}],
            "configure": {"scd2_effective_column": "Version"},
        },
    )
    read = pl.DataFrame(
        {
            "Key": [1, 1, 2, 3],
            "Version": ["1", "2", "1", "1"],
            "CustomerName": [" Ann ", "Ann", "Bo", " X "],
            "Email": ["ann@x", "ann@y", "bo@x", "x@x"],
            "Junk": [0, 0, 0, 0],
        }
    )

    lazy, applied = run_pipeline(read.lazy(), ctx)

    assert applied == [
        "ColumnValueTransformer", "SchemaConverter(1 casts)", "HashColumnAdder", "ColumnAdder",
        "RowFilter", "SCD2ColumnAdder", "SystemColumnAdder", "PartitionHandler", "DataMasker", "ColumnProjector",
        "ColumnNameSanitizer(snake)",
    ]  # fmt: skip
    out = lazy.collect()
    assert out.columns == [
        "key", "version", "full_name", "email", "row_hash", "name_length", "load_day",
        "__valid_from", "__valid_to", "__is_current", "__created_at", "__updated_at", "__updated_by", "__dataflow_run_id",
    ]  # fmt: skip
    # key 3 is filtered out (its trimmed name has length 1); key 1 keeps both versions: scd2 does not
    # dedup by default (DataCoolie kept only version 2; the scd2 load chains them, docs/scd2.md)
    assert out.select("key", "version", "full_name", "email", "name_length", "load_day", "__valid_from").rows() == [
        (1, 1, "Ann", "a*", 3, RUN_TIME.date(), 1),
        (1, 2, "Ann", "a*", 3, RUN_TIME.date(), 2),
        (2, 1, "Bo", "b*", 2, RUN_TIME.date(), 1),
    ]


@dataclass
class Recorder:
    name: str
    order: int
    label: str | None = None

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]:
        return frame.with_columns(pl.concat_str(pl.col("trace"), pl.lit(self.name))), self.label


def test_transformers_run_by_order_with_a_stable_sort(make_ctx: MakeCtx) -> None:
    transformers = [Recorder("c", 50, "C"), Recorder("a", 40, "A"), Recorder("b", 50), Recorder("d", 45, "D(x)")]

    lazy, applied = run_pipeline(pl.DataFrame({"trace": [""]}), make_ctx(), transformers=transformers)

    assert lazy.collect()["trace"].to_list() == ["adcb"]
    assert applied == ["A", "D(x)", "C"]


@dataclass
class Failing:
    error: Exception
    name: str = "Exploder"
    order: int = 45

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]:
        raise self.error


def test_foreign_exceptions_are_wrapped_naming_transformer_and_dataflow(make_ctx: MakeCtx) -> None:
    cause = ZeroDivisionError("boom")
    transformers: list[Transformer] = [Recorder("first", 1, "First"), Failing(cause)]

    with pytest.raises(
        TransformError,
        match=r"dataflow 'orders_to_silver': transformer Exploder \(slot 45\) failed: ZeroDivisionError: boom; "
        r"applied before it: \['First'\]",
    ) as raised:
        run_pipeline(pl.DataFrame({"trace": [""]}), make_ctx(), transformers=transformers)
    assert raised.value.__cause__ is cause


def test_transform_errors_propagate_as_they_are(make_ctx: MakeCtx) -> None:
    error = TransformError("dataflow 'x': bad; fix it")

    with pytest.raises(TransformError) as raised:
        run_pipeline(pl.DataFrame({"a": [1]}), make_ctx(), transformers=[Failing(error)])
    assert raised.value is error


def test_default_slots_and_registry() -> None:
    assert [t.order for t in DEFAULT_TRANSFORMERS] == [5, 10, 18, 20, 30, 35, 60, 70, 80, 84, 85, 90]
    assert list(TRANSFORMERS) == [t.name for t in DEFAULT_TRANSFORMERS]
    assert get_transformer("RowFilter") is TRANSFORMERS["RowFilter"]
    with pytest.raises(TransformError, match=r"unknown transformer 'RowFiltr'; did you mean 'RowFilter'\?"):
        get_transformer("RowFiltr")


PLUGIN_MODULE = """
import polars as pl


class AddFlag:
    name = "AddFlag"
    order = {order}

    def apply(self, frame, ctx):
        return frame.with_columns(flag=pl.lit(ctx.dataflow.name)), "AddFlag"


NOT_A_TRANSFORMER = object()
"""


@pytest.fixture
def install_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Install a real distribution (a dist-info with entry points) on sys.path for the test."""

    def install(order: int, target: str = "dc_test_plugin:AddFlag") -> None:
        (tmp_path / "dc_test_plugin.py").write_text(PLUGIN_MODULE.format(order=order), encoding="utf-8")
        dist = tmp_path / "dc_test_plugin-0.1.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dc-test-plugin\nVersion: 0.1\n", encoding="utf-8")
        (dist / "entry_points.txt").write_text(f"[datacoolie.transformers]\nflag = {target}\n", encoding="utf-8")
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(__import__("sys").modules, "dc_test_plugin", raising=False)
        plugin_transformers.cache_clear()
        plugins.rescan()

    yield install
    plugin_transformers.cache_clear()
    plugins.rescan()


def test_plugins_join_the_default_pipeline_in_their_slot(install_plugin: Any, make_ctx: MakeCtx) -> None:
    install_plugin(45)

    names = [t.name for t in build_pipeline()]
    lazy, applied = run_pipeline(pl.DataFrame({"id": [1]}), make_ctx())

    assert names.index("AddFlag") == names.index("RowFilter") + 1
    assert applied == ["AddFlag", "SystemColumnAdder", "ColumnNameSanitizer(lower)"]
    assert lazy.collect()["flag"].to_list() == ["orders_to_silver"]


@pytest.mark.parametrize(
    ("order", "target", "message"),
    [
        (55, "dc_test_plugin:AddFlag", r"plugin 'flag' \(AddFlag\) has order 55; plugins must use slots 40-50"),
        (45, "dc_test_plugin:NOT_A_TRANSFORMER", r"plugin 'flag' is not a Transformer"),
        (45, "dc_test_plugin:Missing", r"plugin 'flag' \(dc_test_plugin:Missing\) cannot be loaded: AttributeError"),
    ],
    ids=["outside-40-50", "not-a-transformer", "unloadable"],
)
def test_bad_plugins_fail_the_pipeline_build(install_plugin: Any, order: int, target: str, message: str) -> None:
    install_plugin(order, target)

    with pytest.raises(TransformError, match=message):
        build_pipeline()
