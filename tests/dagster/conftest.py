"""Fixtures of the Dagster tests: golden metadata copied under ``tmp_path`` (the working directory),
seeded landing data, and an ephemeral Dagster instance."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import dagster as dg
import polars as pl
import psycopg2
import pytest

from datacoolie_core import FileProvider
from datacoolie_core.columns import TRAILING_COLUMNS
from datacoolie_dagster import build_definitions
from datacoolie_dagster.location.assets import TableAsset, build_table_assets
from datacoolie_dagster.location.translator import DataCoolieTranslator

REPOSITORY = Path(__file__).parents[2]

METADATA = Path(__file__).parents[1] / "fixtures" / "metadata"
LINEAGE = METADATA / "dagster_lineage.json"
"""Three stages: a fan-in (EU + US orders -> bronze orders), bronze -> silver, and a gold SQL join."""
PARTITIONS = METADATA / "dagster_partitions.json"
"""Replay partitionings: months, quarters, days, 6 hours, weeks, integer steps, a batched backfill."""

Edit = Callable[[dict[str, Any]], None]

ORDERS_EU = pl.DataFrame(
    {
        "order_id": [1, 2],
        "customer_id": [1, 2],
        "amount": [10.0, 20.0],
        "updated_at": [datetime(2024, 1, 5), datetime(2024, 2, 5)],
    }
)
ORDERS_US = pl.DataFrame({"order_id": [3], "customer_id": [1], "amount": [5.0], "updated_at": [datetime(2024, 1, 7)]})
CUSTOMERS = pl.DataFrame({"customer_id": [1, 2], "city": ["Lyon", "Porto"]})

ORDERS_CSV = """order_id,amount,order_ts
1,10.50,2024-01-05 10:00:00
2,4.00,2024-01-20 08:30:00
3,oops,2024-02-05 10:00:00
4,7.25,2024-03-05 10:00:00
"""
"""Four months of orders; February's amount breaks the ``decimal(12,2)`` schema hint."""


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path`` as the working directory: the metadata's ``./lake/...`` paths land here."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.DagsterInstance.ephemeral() as ephemeral:
        yield ephemeral


@pytest.fixture
def postgres_database(postgres_server: str) -> dict[str, str]:
    """A fresh database on the test server, as the ``DATACOOLIE_PG_*`` variables of ``dagster.postgres.yaml``."""
    name = f"dagster_{uuid.uuid4().hex[:12]}"
    admin = psycopg2.connect(postgres_server)
    try:
        admin.autocommit = True  # CREATE DATABASE refuses to run inside a transaction
        admin.cursor().execute(f'CREATE DATABASE "{name}"')
    finally:
        admin.close()
    parsed = urlparse(postgres_server)
    return {
        "DATACOOLIE_PG_HOST": parsed.hostname or "127.0.0.1",
        "DATACOOLIE_PG_PORT": str(parsed.port or 5432),
        "DATACOOLIE_PG_USER": parsed.username or "postgres",
        "DATACOOLIE_PG_PASSWORD": parsed.password or "",
        "DATACOOLIE_PG_DB": name,
    }


@dataclass(frozen=True)
class InstanceSettings:
    """The repository's ``dagster.yaml`` for one storage, and the environment it reads."""

    storage: str
    config: Path
    env: dict[str, str] = field(default_factory=dict)

    def dsn(self) -> str:
        """libpq connection string of the PostgreSQL database (only for ``storage == "postgres"``)."""
        e = self.env
        return (
            f"host={e['DATACOOLIE_PG_HOST']} port={e['DATACOOLIE_PG_PORT']} user={e['DATACOOLIE_PG_USER']} "
            f"password={e['DATACOOLIE_PG_PASSWORD']} dbname={e['DATACOOLIE_PG_DB']}"
        )


@pytest.fixture(params=["sqlite", "postgres"])
def instance_settings(request: pytest.FixtureRequest) -> InstanceSettings:
    """Each storage a deployment may use: ``dagster.yaml`` (SQLite) and ``dagster.postgres.yaml``."""
    if request.param == "sqlite":
        return InstanceSettings("sqlite", REPOSITORY / "dagster.yaml")
    database: dict[str, str] = request.getfixturevalue("postgres_database")
    return InstanceSettings("postgres", REPOSITORY / "dagster.postgres.yaml", database)


def write_metadata(root: Path, fixture: Path, edit: Edit | None = None) -> Path:
    """Copy a golden metadata file under ``root``, optionally edited."""
    target = root / "metadata.json"
    if edit is None:
        shutil.copyfile(fixture, target)
        return target
    document = json.loads(fixture.read_text(encoding="utf-8"))
    edit(document)
    target.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return target


def definitions(root: Path, fixture: Path = LINEAGE, edit: Edit | None = None, **kwargs: Any) -> dg.Definitions:
    """``build_definitions`` over a copy of ``fixture``, state under ``root/state``."""
    return build_definitions(write_metadata(root, fixture, edit), state_base_path=root / "state", **kwargs)


def dataflow(document: dict[str, Any], name: str) -> dict[str, Any]:
    return next(d for d in document["dataflows"] if d["name"] == name)


def land(root: Path, folder: str, frame: pl.DataFrame, batch: int = 1) -> Path:
    """Write one parquet extract to ``root/lake/landing/<folder>/batch_NNN.parquet``."""
    target = root / "lake" / "landing" / folder
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"batch_{batch:03d}.parquet"
    frame.write_parquet(path)
    return path


def land_lineage(root: Path) -> None:
    """Batch 1 of the lineage fixture: 2 EU orders, 1 US order, 2 customers."""
    land(root, "sales/orders_eu", ORDERS_EU)
    land(root, "sales/orders_us", ORDERS_US)
    land(root, "crm/customers", CUSTOMERS)


def land_csv(root: Path, folder: str, text: str) -> None:
    target = root / "lake" / "landing" / folder
    target.mkdir(parents=True, exist_ok=True)
    (target / "batch_001.csv").write_text(text, encoding="utf-8")


def read_table(root: Path, path: str, sort: Sequence[str]) -> pl.DataFrame:
    """A Delta table's business columns (framework columns dropped), sorted."""
    frame = pl.read_delta(str(root / path))
    return frame.drop([c for c in frame.columns if c in TRAILING_COLUMNS]).sort(sort)


def key(path: str) -> dg.AssetKey:
    return dg.AssetKey.from_user_string(path)


def materialize(
    defs: dg.Definitions, instance: dg.DagsterInstance, selection: Sequence[str] | None = None, **kwargs: Any
) -> dg.ExecuteInProcessResult:
    """``dg.materialize`` of the code location's assets, never raising (tests assert the outcome)."""
    assets = list(defs.assets or [])
    return dg.materialize(
        assets,  # type: ignore[arg-type]
        resources=defs.resources,
        instance=instance,
        selection=list(selection) if selection is not None else None,
        raise_on_error=False,
        **kwargs,
    )


def materialized(result: dg.ExecuteInProcessResult) -> list[tuple[str, str | None]]:
    """``(key, partition)`` of every materialization of a run, sorted."""
    return sorted(
        (e.materialization.asset_key.to_user_string(), e.materialization.partition)
        for e in result.get_asset_materialization_events()
    )


def failure_message(result: dg.ExecuteInProcessResult) -> str:
    """The messages of the run's step failures, joined."""
    errors = [event.step_failure_data.error for event in result.all_events if event.is_step_failure]
    return "\n".join(error.message for error in errors if error is not None)


def table_assets(root: Path) -> list[TableAsset]:
    """The table assets of ``root/metadata.json`` (default translator). No I/O beyond the metadata."""
    provider = FileProvider(root / "metadata.json")
    provider.initialize()
    return build_table_assets(provider.get_dataflows(), DataCoolieTranslator())[0]
