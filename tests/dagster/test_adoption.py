"""Tables that exist before the instance are adopted as they stand: ``datacoolie-dagster adopt``.

The tables are built by ``datacoolie run`` with no instance configured (as ``./make.sh example``
before ``./make.sh ui``, or DataCoolie on Spark); every figure adopted is checked against the Delta
log and the table's rows.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from deltalake import DeltaTable

from datacoolie_core.cli import main as datacoolie
from datacoolie_dagster import constants
from datacoolie_dagster.commands.cli import main as datacoolie_dagster
from datacoolie_dagster.location.provenance import DATA_VERSION_TAG
from tests.dagster.test_catalog import BATCH_2, BRONZE, SILVER, home, land, project  # noqa: F401 (fixtures)

RUN = ["--metadata", "metadata.json", "--state-path", "state"]


def run_stages() -> None:
    for stage in ("landing2bronze", "bronze2silver"):
        assert datacoolie(["run", "--stage", stage, *RUN]) == 0


def adopt(instance_home: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert datacoolie_dagster(["adopt", "--metadata", "metadata.json", "--instance", str(instance_home)]) == 0
    return capsys.readouterr().out


def latest(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None = None) -> dg.AssetMaterialization:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition else None), limit=1
    ).records
    assert records, f"{key.to_user_string()} [{partition}] is not materialized"
    event = records[0].asset_materialization
    assert event is not None
    return event


def test_tables_built_before_the_instance_are_adopted_as_they_stand(
    project: Path,  # noqa: F811
    home: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_stages()  # no instance: nothing recorded
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_latest_materialization_event(BRONZE) is None

    out = adopt(home, capsys)

    assert "bronze/sales/orders: recorded Delta version 0, 3 rows" in out
    assert "silver/sales/orders: recorded Delta version 0, 3 rows (2 partition(s) holding rows)" in out
    bronze_path, silver_path = str(project / "lake/bronze/sales/orders"), str(project / "lake/silver/sales/orders")
    silver_rows = pl.read_delta(silver_path).with_columns(pl.col("order_date").dt.strftime("%Y-%m").alias("month"))
    months = silver_rows.group_by("month").len()
    held = dict(zip(months["month"].to_list(), months["len"].to_list(), strict=True))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        bronze = latest(instance, BRONZE)
        assert bronze.metadata[constants.DELTA_VERSION].value == DeltaTable(bronze_path).version()
        assert bronze.metadata["dagster/row_count"].value == pl.read_delta(bronze_path).height
        assert bronze.metadata[constants.RECORDED_BY].value == "datacoolie-dagster adopt"
        assert instance.get_materialized_partitions(SILVER) == set(held) == {"2024-01", "2024-02"}
        for month, rows in held.items():
            event = latest(instance, SILVER, month)
            assert event.metadata["dagster/row_count"].value == rows  # the partition's rows, not the table's
            assert event.metadata[constants.DELTA_VERSION].value == DeltaTable(silver_path).version()
            # silver read bronze as it is now: in sync
            assert event.tags[f"dagster/input_data_version/{BRONZE.to_user_string()}"] == bronze.tags[DATA_VERSION_TAG]
        columns = {c.name: c.type for c in bronze.metadata["dagster/column_schema"].value.columns}
        assert columns == {f.name: str(f.type.type) for f in DeltaTable(bronze_path).schema().fields}

    # adopting again records nothing: every table is recorded at its current version
    again = adopt(home, capsys)
    assert "adopted 0 table(s) (0 materialization(s))" in again
    assert "bronze/sales/orders: already recorded at Delta version 0" in again

    # a later CLI run with no instance: only the tables it changed are adopted again
    land(project, BATCH_2, 2)
    assert datacoolie(["run", "--stage", "landing2bronze", *RUN]) == 0
    third = adopt(home, capsys)
    assert "bronze/sales/orders: recorded Delta version 1, 5 rows" in third
    assert "silver/sales/orders: already recorded at Delta version 0" in third
