"""``datacoolie-dagster rebuild``: plans over small asset graphs, real in-process rebuilds of a
bronze -> silver -> gold chain on a real instance, and the CLI."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest

from datacoolie_dagster import build_definitions, dagster_internal
from datacoolie_dagster.commands.rebuild import (
    REBUILD,
    TRIGGER_TAG,
    RebuildError,
    RebuildRun,
    add_rebuild_parser,
    plan_rebuild,
    rebuild,
)
from tests.dagster.conftest import key, land
from tests.dagster.daemon_support import Daemon, running

ORDERS = pl.DataFrame({"order_id": [1, 2, 3], "amount": [10.0, 20.0, 5.0]})
CHAIN = ("bronze/sales/orders", "silver/sales/orders", "gold/sales/orders")


def _flow(name: str, source: tuple[str, str], destination: str, **source_extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "stage": f"{source[0]}2{destination}",
        "source": {"connection_name": source[0], "schema_name": "sales", "table": source[1], **source_extra},
        "destination": {"connection_name": destination, "schema_name": "sales", "table": "orders", "load_type": "overwrite"},
    }  # fmt: skip


def chain_metadata(root: Path, silver_filter: str | None = None) -> Path:
    """landing -> bronze -> silver -> gold, all overwrite (every run rewrites, so every run materializes)."""
    layers = ["landing", "bronze", "silver", "gold"]
    connections = [
        {"name": "landing", "connection_type": "file", "format": "parquet", "configure": {"base_path": "./lake/landing"}},
        *({"name": n, "connection_type": "lakehouse", "format": "delta", "configure": {"base_path": f"./lake/{n}"}} for n in layers[1:]),
    ]  # fmt: skip
    extra = {"filter_expression": silver_filter} if silver_filter else {}
    dataflows = [
        _flow("to_bronze", ("landing", "orders"), "bronze"),
        _flow("to_silver", ("bronze", "orders"), "silver", **extra),
        _flow("to_gold", ("silver", "orders"), "gold"),
    ]
    path = root / "metadata.json"
    path.write_text(json.dumps({"connections": connections, "dataflows": dataflows}), encoding="utf-8")
    return path


def chain_definitions(root: Path, silver_filter: str | None = None) -> dg.Definitions:
    metadata = chain_metadata(root, silver_filter)
    return build_definitions(metadata, state_base_path=root / "state", include_sensors=False, run_retries=0)


def materializations(instance: dg.DagsterInstance) -> list[tuple[str, float, str]]:
    """``(asset, timestamp, run_id)`` of every materialization of the chain, in storage order."""
    records = [r for asset in CHAIN for r in instance.fetch_materializations(key(asset), limit=100).records]
    events = sorted(records, key=lambda r: r.storage_id)
    return [(r.asset_key.to_user_string(), r.timestamp, r.run_id) for r in events if r.asset_key is not None]


# --- plans over small asset graphs (pure) ---

MONTHS = dg.MonthlyPartitionsDefinition(start_date="2024-01-01")
DAYS = dg.DailyPartitionsDefinition(start_date="2024-01-01")


@dg.asset(partitions_def=MONTHS)
def raw() -> None: ...


@dg.asset(partitions_def=MONTHS, deps=[raw])
def clean() -> None: ...


@dg.asset(deps=[raw])
def summary() -> None: ...


@dg.asset(deps=[clean, summary])
def report() -> None: ...


@dg.asset(partitions_def=DAYS, deps=[raw])
def daily() -> None: ...


def graph(*assets: dg.AssetsDefinition) -> Any:
    return dg.Definitions(assets=list(assets)).get_repository_def().asset_graph


def test_plan_levels_follow_longest_path_and_partitioning() -> None:
    levels = plan_rebuild(graph(raw, clean, summary, report), dg.AssetKey("raw"), "2024-02-01")
    assert levels == [
        (RebuildRun((dg.AssetKey("raw"),), "2024-02-01"),),
        # the partitioned child keeps the partition, the unpartitioned one runs unpartitioned
        (RebuildRun((dg.AssetKey("clean"),), "2024-02-01"), RebuildRun((dg.AssetKey("summary"),), None)),
        (RebuildRun((dg.AssetKey("report"),), None),),
    ]


def test_plan_from_a_middle_asset_leaves_upstream_out() -> None:
    levels = plan_rebuild(graph(raw, clean, summary, report), dg.AssetKey("clean"), "2024-03-01")
    assert levels == [
        (RebuildRun((dg.AssetKey("clean"),), "2024-03-01"),),
        (RebuildRun((dg.AssetKey("report"),), None),),
    ]


@pytest.mark.parametrize(
    ("assets", "asset", "partition", "message"),
    [
        ((raw, clean), "nope", "2024-01-01", "no materializable asset 'nope'; known: clean, raw"),
        ((raw, clean), "raw", None, "asset 'raw' is partitioned; name the PARTITION"),
        ((raw, clean), "raw", "2024-01-05", "'2024-01-05' is not a partition of asset 'raw'"),
        ((raw, summary), "summary", "2024-01-01", "asset 'summary' is not partitioned"),
        ((raw, daily), "raw", "2024-01-01", "downstream asset 'daily' is partitioned differently"),
    ],
    ids=["unknown-asset", "missing-partition", "bad-partition", "partition-of-unpartitioned", "other-partitioning"],
)
def test_plan_refuses(assets: tuple[dg.AssetsDefinition, ...], asset: str, partition: str | None, message: str) -> None:
    with pytest.raises(RebuildError, match=message.replace("(", r"\(")):
        plan_rebuild(graph(*assets), dg.AssetKey(asset), partition)


# --- real in-process rebuilds ---


def test_rebuild_runs_bronze_then_silver_then_gold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, instance: dg.DagsterInstance
) -> None:
    monkeypatch.chdir(tmp_path)
    land(tmp_path, "sales/orders", ORDERS)
    defs = chain_definitions(tmp_path)

    result = rebuild(key(CHAIN[0]), instance=instance, definitions=defs)

    assert result.success, result.describe_failure()
    events = materializations(instance)
    assert [asset for asset, _, _ in events] == list(CHAIN)
    timestamps = [stamp for _, stamp, _ in events]
    assert timestamps == sorted(timestamps)
    # one run per level, in order, each tagged as a manual rebuild
    assert [run_id for _, _, run_id in events] == [ids[0] for ids in result.run_ids]
    for (run_id,) in result.run_ids:
        run = instance.get_run_by_id(run_id)
        assert run is not None
        assert run.tags[TRIGGER_TAG] == REBUILD
    gold = pl.read_delta(str(tmp_path / "lake" / "gold" / "sales" / "orders")).select(ORDERS.columns).sort("order_id")
    assert gold.equals(ORDERS)


def test_failing_middle_level_stops_before_the_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, instance: dg.DagsterInstance
) -> None:
    monkeypatch.chdir(tmp_path)
    land(tmp_path, "sales/orders", ORDERS)
    defs = chain_definitions(tmp_path, silver_filter="no_such_column > 1")

    result = rebuild(key(CHAIN[0]), instance=instance, definitions=defs)

    assert not result.success
    assert result.failed_level == 1
    assert [asset for asset, _, _ in materializations(instance)] == [CHAIN[0]]
    assert len(result.run_ids) == 2  # gold never started
    assert result.describe_failure().startswith("level 2/3 failed: silver/sales/orders")
    assert result.describe_failure().endswith("not run: gold/sales/orders")
    assert not (tmp_path / "lake" / "gold").exists()


# --- the CLI ---


def cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="datacoolie-dagster")
    add_rebuild_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.handler(args))


def write_code_location(root: Path, silver_filter: str | None = None) -> Path:
    chain_metadata(root, silver_filter)
    path = root / "location.py"
    path.write_text(
        "from datacoolie_dagster import build_definitions\n"
        f"defs = build_definitions({str(root / 'metadata.json')!r}, state_base_path={str(root / 'state')!r},"
        " include_sensors=False, run_retries=0)\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(("silver_filter", "code"), [(None, 0), ("no_such_column > 1", 1)], ids=["ok", "silver-fails"])
@pytest.mark.slow
def test_cli_in_process(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    silver_filter: str | None,
    code: int,
) -> None:
    monkeypatch.chdir(tmp_path)
    land(tmp_path, "sales/orders", ORDERS)
    location = write_code_location(tmp_path, silver_filter)
    home = tmp_path / "dagster_home"
    home.mkdir()

    assert cli(["rebuild", CHAIN[0], "-f", str(location), "--instance", str(home), "--in-process"]) == code

    out, err = capsys.readouterr()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        done = [asset for asset, _, _ in materializations(instance)]
    if code == 0:
        assert done == list(CHAIN)
        assert out.count("level ") == 3
    else:
        assert done == [CHAIN[0]]
        assert "level 2/3 failed: silver/sales/orders" in err
        assert "not run: gold/sales/orders" in err


def test_cli_refuses_a_partition_of_an_unpartitioned_asset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    location = write_code_location(tmp_path)
    home = tmp_path / "dagster_home"
    home.mkdir()
    argv = ["rebuild", CHAIN[0], "2024-01", "-f", str(location), "--instance", str(home), "--in-process"]
    assert cli(argv) == 2
    assert "asset 'bronze/sales/orders' is not partitioned" in capsys.readouterr().err


# --- queued on a real daemon ---


@pytest.mark.daemon
def test_queued_rebuild_on_a_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    land(tmp_path, "sales/orders", ORDERS)
    location = write_code_location(tmp_path)
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(
        f"load_from:\n  - python_file:\n      relative_path: {location}\n      working_directory: {tmp_path}\n"
    )
    home = tmp_path / "dagster_home"
    home.mkdir()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.get_runs(limit=1)  # create the SQLite storage once, before the daemon shares it
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATACOOLIE_", "DAGSTER_"))}
    daemon = Daemon(tmp_path, env | {"DAGSTER_HOME": str(home)})
    with running(daemon), dg.DagsterInstance.from_config(str(home)) as instance:
        target = dagster_internal.load_target(None, None, str(workspace), str(tmp_path))
        result = rebuild(key(CHAIN[0]), instance=instance, target=target, timeout=180, poll_interval=0.5)
        assert result.success, result.describe_failure()
        assert [asset for asset, _, _ in materializations(instance)] == list(CHAIN)
        runs = [instance.get_run_by_id(ids[0]) for ids in result.run_ids]
        assert all(r is not None and r.tags[TRIGGER_TAG] == REBUILD for r in runs)
