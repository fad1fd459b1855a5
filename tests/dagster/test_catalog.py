"""Tables built outside Dagster are in its catalog, and partition status follows the rows written.

A real SQLite ``DAGSTER_HOME`` per test; ``datacoolie run`` / ``replay`` as a user runs them; the
stage job executed in process. Each assertion reads the instance's event log, and row counts are
checked against the Delta tables' own history.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest
from deltalake import DeltaTable

from datacoolie_core.cli import main as datacoolie
from datacoolie_dagster import build_definitions, constants
from datacoolie_dagster.location.provenance import CODE_VERSION_TAG

BIN = Path(sys.executable).parent
BRONZE = dg.AssetKey(["bronze", "sales", "orders"])
SILVER = dg.AssetKey(["silver", "sales", "orders"])

METADATA: dict[str, Any] = {
    "connections": [
        {"name": "landing", "connection_type": "file", "format": "parquet",
         "configure": {"base_path": "./lake/landing"}},
        {"name": "bronze", "connection_type": "lakehouse", "format": "delta",
         "configure": {"base_path": "./lake/bronze"}},
        {"name": "silver", "connection_type": "lakehouse", "format": "delta",
         "configure": {"base_path": "./lake/silver"}},
    ],
    "dataflows": [
        {"name": "orders_to_bronze", "stage": "landing2bronze",
         "source": {"connection_name": "landing", "schema_name": "sales", "table": "orders",
                    "watermark_columns": ["updated_at"]},
         "destination": {"connection_name": "bronze", "schema_name": "sales", "table": "orders",
                         "load_type": "append"}},
        # partitioned by the order's month; loaded incrementally by updated_at: a late row of an old
        # month arrives with a new updated_at
        {"name": "orders_to_silver", "stage": "bronze2silver",
         "source": {"connection_name": "bronze", "schema_name": "sales", "table": "orders",
                    "watermark_columns": ["updated_at"]},
         "destination": {"connection_name": "silver", "schema_name": "sales", "table": "orders",
                         "load_type": "merge_upsert", "merge_keys": ["order_id"]},
         "configure": {"dagster": {"partitions": {"start": "2024-01-01", "chunk_interval": {"months": 1},
                                                  "chunk_column": "order_date"}}}},
    ],
}  # fmt: skip

BATCH_1 = pl.DataFrame(
    {
        "order_id": [1, 2, 3],
        "amount": [10.0, 20.0, 5.0],
        "order_date": [datetime(2024, 1, 5), datetime(2024, 1, 20), datetime(2024, 2, 5)],
        "updated_at": [datetime(2024, 2, 6), datetime(2024, 2, 6), datetime(2024, 2, 6)],
    }
)
BATCH_2 = pl.DataFrame(
    {
        "order_id": [4, 5],
        "amount": [7.0, 8.0],
        "order_date": [datetime(2024, 2, 10), datetime(2024, 7, 3)],  # February is late
        "updated_at": [datetime(2024, 7, 4), datetime(2024, 7, 4)],
    }
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Metadata and landing files under ``tmp_path/project`` (the working directory)."""
    root = tmp_path / "project"
    (root / "lake" / "landing" / "sales" / "orders").mkdir(parents=True)
    (root / "metadata.json").write_text(json.dumps(METADATA), encoding="utf-8")
    land(root, BATCH_1, 1)
    monkeypatch.chdir(root)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A real SQLite Dagster instance (its storages created once, before any process uses it)."""
    folder = tmp_path / "dagster_home"
    folder.mkdir()
    with dg.DagsterInstance.from_config(str(folder)) as instance:
        instance.get_runs(limit=1)
    return folder


def land(root: Path, frame: pl.DataFrame, batch: int) -> None:
    frame.write_parquet(root / "lake" / "landing" / "sales" / "orders" / f"batch_{batch:03d}.parquet")


def cli(root: Path, *args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "DATACOOLIE_"))}
    env |= {"DAGSTER_HOME": str(home)} if home is not None else {}
    return subprocess.run(
        [str(BIN / "datacoolie"), *args, "--metadata", "metadata.json", "--state-path", "state"],
        cwd=root, env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip


def events(home: Path, key: dg.AssetKey) -> list[dg.EventLogRecord]:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return list(instance.fetch_materializations(key, limit=100).records)


def history_rows(path: Path, version: int) -> dict[str, int]:
    """Rows the commit at ``version`` inserted and updated, from the Delta log itself."""
    commit = next(c for c in DeltaTable(str(path)).history() if c["version"] == version)
    metrics = commit["operationMetrics"]
    if commit["operation"] == "MERGE":
        return {
            "inserted": int(metrics["num_target_rows_inserted"]),
            "updated": int(metrics["num_target_rows_updated"]),
        }
    return {"inserted": int(metrics["num_added_rows"]), "updated": 0}


def row_counts(record: dg.EventLogRecord) -> dict[str, int]:
    metadata = record.asset_materialization.metadata  # type: ignore[union-attr]
    return {"inserted": metadata[constants.ROWS_INSERTED].value, "updated": metadata[constants.ROWS_UPDATED].value}


@pytest.mark.slow
def test_cli_runs_are_recorded_as_the_code_location_would(project: Path, home: Path) -> None:
    bronze = cli(project, "run", "--stage", "landing2bronze", home=home)
    silver = cli(project, "run", "--stage", "bronze2silver", home=home)

    assert bronze.returncode == 0, bronze.stderr
    assert silver.returncode == 0, silver.stderr
    assert f"dagster: recorded 1 materialization(s) of 1 table(s) in the instance at {home}" in bronze.stderr
    assert f"dagster: recorded 2 materialization(s) of 1 table(s) (2 partition(s)) in the instance at {home}" in (
        silver.stderr
    )
    # the keys are those of the code location built from the same metadata
    defs = build_definitions(project / "metadata.json")
    specs = {s.key: s for s in defs.resolve_all_asset_specs()}
    assert {BRONZE, SILVER} <= set(specs)
    (bronze_event,) = events(home, BRONZE)
    assert bronze_event.partition_key is None
    assert (
        row_counts(bronze_event)
        == history_rows(project / "lake/bronze/sales/orders", 0)
        == {
            "inserted": 3,
            "updated": 0,
        }
    )
    silver_events = events(home, SILVER)
    assert sorted(e.partition_key for e in silver_events) == ["2024-01", "2024-02"]  # type: ignore[type-var]
    for event in silver_events:
        materialization = event.asset_materialization
        assert materialization is not None
        assert materialization.tags == {
            CODE_VERSION_TAG: specs[SILVER].code_version,
            "dagster/data_version": "0",  # the Delta version
            "dagster/data_version_is_user_provided": "true",
            # what bronze was when silver read it: silver is in sync with it
            f"dagster/input_data_version/{BRONZE.to_user_string()}": "0",
            f"dagster/input_event_pointer/{BRONZE.to_user_string()}": str(bronze_event.storage_id),
        }
        assert materialization.metadata[constants.RECORDED_BY].value == "datacoolie run"
    # each partition carries its own counts, which add up to the commit's
    by_partition = {str(e.partition_key): row_counts(e) for e in silver_events}
    assert by_partition == {"2024-01": {"inserted": 2, "updated": 0}, "2024-02": {"inserted": 1, "updated": 0}}
    assert history_rows(project / "lake/silver/sales/orders", 0) == {"inserted": 3, "updated": 0}
    rows = {e.partition_key: e.asset_materialization.metadata["dagster/row_count"].value for e in silver_events}  # type: ignore[union-attr]
    assert rows == {"2024-01": 2, "2024-02": 1}  # the partition's rows, not the table's


def test_without_an_instance_nothing_is_recorded(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = datacoolie(["run", "--stage", "landing2bronze", "--metadata", "metadata.json", "--state-path", "state"])

    assert code == 0
    err = capsys.readouterr().err
    assert "dagster" not in err
    assert "warning" not in err
    assert not (tmp_path / "dagster_home").exists()
    assert pl.read_delta(str(project / "lake/bronze/sales/orders")).height == 3


def test_a_missing_dagster_home_is_a_warning_not_a_failed_run(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "no_such_home"))

    code = datacoolie(["run", "--stage", "landing2bronze", "--metadata", "metadata.json", "--state-path", "state"])

    assert code == 0
    assert "warning: run observer 'dagster' is not recording this run: Dagster home" in capsys.readouterr().err
    assert not (tmp_path / "no_such_home").exists()
    assert pl.read_delta(str(project / "lake/bronze/sales/orders")).height == 3


def test_an_unknown_observer_is_a_usage_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = datacoolie(["run", "--metadata", "metadata.json", "--observer", "dagstr=/tmp/x"])

    assert code == 2
    assert "no run observer named 'dagstr'; did you mean 'dagster'?" in capsys.readouterr().err
    assert not (project / "lake" / "bronze").exists()


def test_a_replay_records_each_chunk_as_its_partition(
    project: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--metadata", "metadata.json", "--state-path", "state", "--observer", f"dagster={home}"]
    assert datacoolie(["run", "--stage", "landing2bronze", *common]) == 0
    capsys.readouterr()

    code = datacoolie(
        ["replay", "--stage", "bronze2silver", "--start", "2024-01-01", "--end", "2024-03-01",
         "--chunk-interval-json", '{"months": 1}', "--chunk-column", "order_date", *common]
    )  # fmt: skip

    assert code == 0
    assert f"recorded 2 materialization(s) of 1 table(s) (2 partition(s)) in the instance at {home}" in (
        capsys.readouterr().err
    )
    replayed = {e.partition_key: e.asset_materialization for e in events(home, SILVER)}
    assert set(replayed) == {"2024-01", "2024-02"}
    assert replayed["2024-01"].metadata[constants.WINDOW].value == (  # type: ignore[union-attr]
        "[2024-01-01 00:00:00+00:00, 2024-02-01 00:00:00+00:00)"
    )
    assert replayed["2024-01"].metadata[constants.ROWS_READ].value == 2  # type: ignore[union-attr]
    assert replayed["2024-01"].metadata[constants.PARTITION_ROWS].value == 2  # type: ignore[union-attr]
    assert replayed["2024-02"].metadata[constants.ROWS_READ].value == 1  # type: ignore[union-attr]
    assert replayed["2024-01"].metadata[constants.RECORDED_BY].value == "datacoolie replay"  # type: ignore[union-attr]


def test_a_replay_in_chunks_unlike_the_partitions_records_the_partitions_written(
    project: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--metadata", "metadata.json", "--state-path", "state", "--observer", f"dagster={home}"]
    assert datacoolie(["run", "--stage", "landing2bronze", *common]) == 0

    # one 3-month chunk is no partition: the months its rows fall in are
    code = datacoolie(
        ["replay", "--stage", "bronze2silver", "--start", "2024-01-01", "--end", "2024-04-01",
         "--chunk-interval-json", '{"months": 3}', "--chunk-column", "order_date", *common]
    )  # fmt: skip

    assert code == 0
    assert sorted(str(e.partition_key) for e in events(home, SILVER)) == ["2024-01", "2024-02"]


def test_a_replay_on_another_column_records_the_partitions_its_rows_fall_in(
    project: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--metadata", "metadata.json", "--state-path", "state", "--observer", f"dagster={home}"]
    assert datacoolie(["run", "--stage", "landing2bronze", *common]) == 0

    # February by updated_at (the watermark column) holds January and February orders
    code = datacoolie(
        ["replay", "--stage", "bronze2silver", "--start", "2024-02-01", "--end", "2024-03-01",
         "--chunk-interval-json", '{"months": 1}', *common]
    )  # fmt: skip

    assert code == 0
    replayed = {e.partition_key: e.asset_materialization for e in events(home, SILVER)}
    assert {k: m.metadata[constants.PARTITION_ROWS].value for k, m in replayed.items()} == {  # type: ignore[union-attr]
        "2024-01": 2,
        "2024-02": 1,
    }


@pytest.mark.slow
def test_an_incremental_stage_job_load_marks_exactly_the_touched_partitions(project: Path, home: Path) -> None:
    defs = build_definitions(project / "metadata.json", state_base_path=project / "state")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        # load 1 — initial: January and February
        for job in ("datacoolie_landing2bronze", "datacoolie_bronze2silver"):
            assert defs.resolve_job_def(job).execute_in_process(instance=instance).success
        assert instance.get_materialized_partitions(SILVER) == {"2024-01", "2024-02"}

        # load 2 — a late February order and a July order, past the watermark
        land(project, BATCH_2, 2)
        assert defs.resolve_job_def("datacoolie_landing2bronze").execute_in_process(instance=instance).success
        second = defs.resolve_job_def("datacoolie_bronze2silver").execute_in_process(instance=instance)

        assert second.success
        events_ = second.get_asset_materialization_events()
        touched = [e.materialization for e in events_ if e.asset_key == SILVER]
        assert sorted(str(m.partition) for m in touched) == ["2024-02", "2024-07"]
        assert {m.partition: m.metadata[constants.PARTITION_ROWS].value for m in touched} == {
            "2024-02": 1,
            "2024-07": 1,
        }
        # the instance's event log agrees: this run materialized those two partitions and nothing else
        records = instance.fetch_materializations(SILVER, limit=100).records
        assert sorted(str(r.partition_key) for r in records if r.run_id == second.run_id) == ["2024-02", "2024-07"]
        assert instance.get_materialized_partitions(SILVER) == {"2024-01", "2024-02", "2024-07"}
        # each partition names the bronze version it read: loaded after bronze last changed, it is in sync
        (bronze,) = instance.fetch_materializations(BRONZE, limit=1).records
        for record in records:
            if record.run_id == second.run_id:
                tags = record.asset_materialization.tags or {}  # type: ignore[union-attr]
                assert tags[f"dagster/input_event_pointer/{BRONZE.to_user_string()}"] == str(bronze.storage_id)
        # each partition carries its own share of the commit, not the whole commit's counts
        version = DeltaTable(str(project / "lake/silver/sales/orders")).version()
        shares = {str(r.partition_key): row_counts(r) for r in records if r.run_id == second.run_id}
        assert shares == {"2024-02": {"inserted": 1, "updated": 0}, "2024-07": {"inserted": 1, "updated": 0}}
        assert history_rows(project / "lake/silver/sales/orders", version) == {"inserted": 2, "updated": 0}
        # and the rows each partition holds now: February its two orders, July its one
        latest = {str(r.partition_key): r for r in reversed(records)}  # records come newest first
        held = {k: r.asset_materialization.metadata["dagster/row_count"].value for k, r in latest.items()}  # type: ignore[union-attr]
        assert held == {"2024-01": 2, "2024-02": 2, "2024-07": 1}


def test_without_an_instance_dagster_is_not_even_imported(project: Path) -> None:
    """Every ``datacoolie run`` loads the observers: an inactive one must cost nothing."""
    script = (
        "import sys; from datacoolie_core.cli import main; "
        "code = main(['run', '--stage', 'landing2bronze', '--metadata', 'metadata.json', '--state-path', 'state']); "
        "print(code, 'dagster' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "DATACOOLIE_"))}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.split() == ["0", "False"], done.stderr


@pytest.mark.slow
def test_partitions_replayed_from_the_command_line_are_done_for_backfill(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bundled example: a CLI replay of two months leaves only the third to ``backfill``."""
    from datacoolie_dagster.commands.backfill import plan_backfill
    from datacoolie_dagster.example import METADATA_PATH
    from datacoolie_dagster.example.generate import land_batch
    from tests.dagster.test_backfill import asset_graph

    project = tmp_path / "example"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.delenv("DATACOOLIE_METADATA", raising=False)
    land_batch(project / "data", 1)
    document = json.loads(Path(METADATA_PATH).read_text(encoding="utf-8"))
    flow = next(d for d in document["dataflows"] if (d.get("configure") or {}).get("dagster", {}).get("partitions"))
    column = flow["configure"]["dagster"]["partitions"].get("chunk_column") or flow["source"]["watermark_columns"][0]
    common = ["--metadata", str(METADATA_PATH), "--state-path", "data/state", "--observer", f"dagster={home}"]
    assert datacoolie(["run", "--stage", "landing2bronze", *common]) == 0

    code = datacoolie(
        ["replay", "--stage", flow["stage"], "--dataflow", flow["name"], "--start", "2024-01-01", "--end", "2024-03-01",
         "--chunk-interval-json", '{"months": 1}', "--chunk-column", column, *common]
    )  # fmt: skip

    assert code == 0
    with dg.DagsterInstance.from_config(str(home)) as instance:
        plan = plan_backfill(instance, asset_graph(instance), "silver/sales/orders", "2024-01..2024-03")
    assert plan.done == {SILVER: ("2024-01", "2024-02")}
    assert [run.partition_keys for run in plan.runs] == [("2024-03",)]
