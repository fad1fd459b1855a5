"""The Dagster CLI against the bundled example, as an operator runs it (real subprocesses).

``dagster job execute`` and ``dagster asset materialize`` run in process and, in Dagster 1.13, take a
code pointer (``-m``/``-d``) but no ``-w``; the workspace file is exercised by the daemon test.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from polars.testing import assert_series_equal

from tests.dagster.cli_support import CODE_LOCATION, deploy, explain


@pytest.mark.slow
def test_stage_job_then_one_partition_from_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deployment = deploy(tmp_path)
    pointer = [*CODE_LOCATION, "-d", str(deployment.project)]

    job = deployment.run("dagster", "job", "execute", *pointer, "-j", "datacoolie_landing2bronze")
    assert job.returncode == 0, explain(job)
    bronze = pl.read_delta(str(deployment.data / "bronze" / "sales" / "orders"))
    assert bronze.height == 600
    assert pl.read_delta(str(deployment.data / "bronze" / "crm" / "customers")).height == 40

    partition = deployment.run(
        "dagster", "asset", "materialize", *pointer, "--select", "silver/sales/orders", "--partition", "2024-02"
    )
    assert partition.returncode == 0, explain(partition)
    silver = pl.read_delta(str(deployment.data / "silver" / "sales" / "orders"))
    february = bronze.filter(
        pl.col("created_at").is_between(datetime(2024, 2, 1, tzinfo=UTC), datetime(2024, 3, 1, tzinfo=UTC), "left")
    )
    assert february.height > 0
    assert_series_equal(silver["order_id"].sort(), february["order_id"].unique().sort())
    assert silver["order_month"].unique().to_list() == ["2024-02"]

    monkeypatch.setenv("DAGSTER_HOME", str(deployment.home))
    with dg.DagsterInstance.get() as instance:
        assert instance.get_materialized_partitions(dg.AssetKey(["silver", "sales", "orders"])) == {"2024-02"}
