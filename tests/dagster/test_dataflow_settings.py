"""``configure.dagster`` typed: typos and bad values fail at load with the file, the JSON path and the fix.

Through every door a user has: ``build_definitions``, a YAML file, and ``datacoolie validate --strict``
as a subprocess (core finds the check through the ``datacoolie.configure_sections`` entry point).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster._utils.schedules import is_valid_cron_string  # the reference the pure cron check must match

from datacoolie_core import FileProvider, MetadataError
from datacoolie_core.metadata import read_metadata_file, validate_document
from datacoolie_dagster.automation.limits import LIMITS_SENSOR
from datacoolie_dagster.location.dataflow_settings import (
    DagsterSettings,
    FreshnessSettings,
    PartitionsSettings,
    ScheduleSettings,
    dagster_settings,
    is_cron,
    validate_section,
)
from tests.dagster.conftest import LINEAGE, METADATA, PARTITIONS, dataflow, definitions, write_metadata

DATACOOLIE = Path(sys.executable).parent / "datacoolie"
DOCS = Path(__file__).parents[2] / "docs" / "dagster-settings.md"
EXAMPLE = Path(__file__).parents[2] / "datacoolie_dagster" / "example" / "metadata.json"
SILVER = "orders_to_silver"
"""``dataflows[3]`` of the lineage fixture."""
SILVER_KEY = dg.AssetKey(["silver", "sales", "orders"])


def configure(**settings: Any) -> Any:
    def edit(document: dict[str, Any]) -> None:
        dataflow(document, SILVER)["configure"] = {"dagster": settings}

    return edit


TYPOS = [
    ({"max_partition_per_run": 3}, "max_partition_per_run", "unknown key 'max_partition_per_run'; did you mean 'max_partitions_per_run'?"),
    ({"schedul": {"cron": "0 * * * *"}}, "schedul", "unknown key 'schedul'; did you mean 'schedule'?"),
    ({"sensr": False}, "sensr", "unknown key 'sensr'; did you mean 'sensor'?"),
    ({"max_run": 2}, "max_run", "unknown key 'max_run'; did you mean 'max_runs'?"),
    ({"partitions": {"start": "2024-01-01", "chunk_intervl": {"months": 1}}}, "partitions.chunk_intervl",
     "unknown key 'chunk_intervl'; did you mean 'chunk_interval'?"),
    ({"schedule": {"cron": "0 * * * *", "timezon": "UTC"}}, "schedule.timezon",
     "unknown key 'timezon'; did you mean 'timezone'?"),
]  # fmt: skip
TYPO_IDS = ["max_partition_per_run", "schedul", "sensr", "max_run", "partitions.chunk_intervl", "schedule.timezon"]


def expected(file: Path, key: str, message: str) -> str:
    return re.escape(f"{file}: dataflows[3].configure.dagster.{key} (dataflow '{SILVER}'): {message}")


@pytest.mark.parametrize(("settings", "key", "message"), TYPOS, ids=TYPO_IDS)
def test_a_typo_fails_build_definitions_with_file_path_and_fix(
    tmp_path: Path, settings: dict[str, Any], key: str, message: str
) -> None:
    with pytest.raises(MetadataError, match=expected(tmp_path / "metadata.json", key, message)):
        definitions(tmp_path, edit=configure(**settings))


@pytest.mark.parametrize(("settings", "key", "message"), TYPOS[:3], ids=TYPO_IDS[:3])
def test_a_typo_in_a_yaml_file_names_its_real_path(
    tmp_path: Path, settings: dict[str, Any], key: str, message: str
) -> None:
    document = json.loads(LINEAGE.read_text())
    configure(**settings)(document)
    path = tmp_path / "metadata.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    assert re.search(rf"^\s*- name: {SILVER}$", path.read_text(), re.M)  # a real YAML list, same index
    with pytest.raises(MetadataError, match=expected(path, key, message)):
        FileProvider(path).initialize()


@pytest.mark.parametrize(
    ("settings", "key", "message"),
    [
        ({"max_runs": "2"}, "max_runs", "must be a positive integer, got '2'"),
        ({"max_partitions_per_run": 0}, "max_partitions_per_run", "must be a positive integer, got 0"),
        ({"sensor": "maybe"}, "sensor", "expected true or false, got 'maybe'"),
        ({"schedule": {"cron": "every hour"}}, "schedule.cron", "'every hour' is not a 5-field cron string"),
        ({"schedule": {"cron": "0 * * * *", "timezone": "Mars/Olympus"}}, "schedule.timezone", "unknown time zone 'Mars/Olympus'"),
        ({"partitions": {"start": "2024-01-01", "chunk_interval": {"month": 1}}}, "partitions.chunk_interval",
         "unknown chunk_interval unit 'month'; did you mean 'months'?"),
        ({"partitions": {"start": "2024-01-01", "chunk_interval": {"days": 2}}}, "partitions.chunk_interval",
         "chunk_interval {'days': 2} has no calendar alignment"),
        ({"partitions": {"start": 0, "chunk_interval": {"step": 100}}}, "partitions",
         "an integer 'step' partitioning needs integer start and end"),
        ({"partitions": {"start": "someday", "chunk_interval": {"months": 1}}}, "partitions",
         "partition bound 'someday' is not a date or datetime"),
        ({"partitions": {"start": "2024-01-01", "chunk_interval": {"months": 1}, "timezone": "Europe/Pariss"}},
         "partitions.timezone", "unknown time zone 'Europe/Pariss'"),
    ],
    ids=["max_runs-string", "max_partitions-zero", "sensor-maybe", "bad-cron", "bad-timezone", "unit-typo",
         "days-2", "step-no-end", "bad-start", "partition-timezone"],
)  # fmt: skip
def test_a_bad_value_fails_at_load_with_its_path(
    tmp_path: Path, settings: dict[str, Any], key: str, message: str
) -> None:
    with pytest.raises(MetadataError, match=expected(tmp_path / "metadata.json", key, message)):
        definitions(tmp_path, edit=configure(**settings))


def test_a_section_that_is_not_an_object_is_an_error(tmp_path: Path) -> None:
    def edit(document: dict[str, Any]) -> None:
        dataflow(document, SILVER)["configure"] = {"dagster": ["schedule"]}

    with pytest.raises(
        MetadataError, match=re.escape(f"dataflows[3].configure.dagster (dataflow '{SILVER}'): expected an object")
    ):
        definitions(tmp_path, edit=edit)  # fmt: skip


def validate_cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(DATACOOLIE), "validate", str(path), *args], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.slow
def test_validate_strict_reports_every_typo_and_exits_2(tmp_path: Path) -> None:
    path = write_metadata(
        tmp_path, LINEAGE, configure(max_partition_per_run=3, schedul={"cron": "0 * * * *"}, sensr=False)
    )
    done = validate_cli(path, "--strict")
    assert done.returncode == 2, done.stdout + done.stderr
    for key, message in [(k, m) for _, k, m in TYPOS[:3]]:
        assert f"{path}: dataflows[3].configure.dagster.{key} (dataflow '{SILVER}'): {message}" in done.stderr
    assert f"INVALID: 3 error(s), 0 warning(s) in {path}" in done.stderr
    assert f"invalid: dataflows[3] (dataflow '{SILVER}')" in done.stderr
    # without --strict too: these are errors, not warnings
    assert validate_cli(path).returncode == 2


def test_validate_warns_of_a_misspelt_section_name(tmp_path: Path) -> None:
    def edit(document: dict[str, Any]) -> None:
        dataflow(document, SILVER)["configure"] = {"dagstr": {"sensor": False}}

    path = write_metadata(tmp_path, LINEAGE, edit)
    assert validate_cli(path).returncode == 0
    done = validate_cli(path, "--strict")
    assert done.returncode == 2
    assert (
        f"dataflows[3].configure.dagstr (dataflow '{SILVER}'): unknown configure key 'dagstr' is read by no plug-in; "
        "did you mean 'dagster'?" in done.stderr
    )


EVERY_KEY = {
    "partitions": {"start": "2024-01-01", "end": "2024-04-01", "chunk_interval": {"months": 1},
                   "chunk_column": "updated_at", "timezone": "UTC", "save_watermark": False},
    "max_partitions_per_run": 2,
    "schedule": {"cron": "0 * * * *", "timezone": "Europe/Paris", "catchup": True},
    "sensor": "no",
    "max_runs": 1,
}  # fmt: skip


def test_every_key_is_accepted_and_read(tmp_path: Path) -> None:
    path = write_metadata(tmp_path, LINEAGE, configure(**EVERY_KEY))
    done = validate_cli(path, "--strict")
    assert done.returncode == 0, done.stderr
    assert "; 0 warning(s)" in done.stdout

    defs = definitions(tmp_path, edit=configure(**EVERY_KEY))
    graph = defs.resolve_asset_graph()
    silver = graph.get(SILVER_KEY)
    assert silver.partitions_def is not None
    assert silver.partitions_def.get_partition_keys() == ["2024-01", "2024-02", "2024-03"]
    assert silver.backfill_policy == dg.BackfillPolicy.multi_run(2)
    schedule = defs.resolve_schedule_def("datacoolie_bronze2silver_schedule")
    assert (schedule.cron_schedule, schedule.execution_timezone) == ("0 * * * *", "Europe/Paris")
    assert defs.resolve_sensor_def("datacoolie_schedule_catchup") is not None
    assert defs.resolve_sensor_def(LIMITS_SENSOR) is not None


@pytest.mark.parametrize(
    ("flag", "followed"), [(None, True), (True, True), ("yes", True), ("no", False), (False, False)]
)
def test_sensor_flag_takes_the_table_out_of_automation(tmp_path: Path, flag: Any, followed: bool) -> None:
    defs = definitions(tmp_path, edit=configure(**({} if flag is None else {"sensor": flag})))
    condition = defs.resolve_asset_graph().get(SILVER_KEY).automation_condition
    assert (condition == dg.AutomationCondition.eager()) is followed
    assert followed or condition is None


@pytest.mark.parametrize(
    "path",
    [EXAMPLE, *sorted(METADATA.glob("*.json")), *sorted(METADATA.glob("*.yaml"))],
    ids=lambda p: p.name,
)
def test_bundled_metadata_still_loads(path: Path) -> None:
    document = validate_document(read_metadata_file(path), file=str(path))
    assert [str(i) for i in document.issues if ".configure." in i.path] == []
    assert document.errors == []


@pytest.mark.parametrize("fixture", [EXAMPLE, PARTITIONS, LINEAGE], ids=lambda p: p.name)
def test_bundled_metadata_builds(tmp_path: Path, fixture: Path) -> None:
    assert definitions(tmp_path, fixture).resolve_asset_graph().get_all_asset_keys()


def test_the_plug_in_is_registered_for_core() -> None:
    (entry,) = [e for e in entry_points(group="datacoolie.configure_sections") if e.name == "dagster"]
    assert entry.load() is validate_section


def test_a_dagster_section_on_a_connection_is_a_warning() -> None:
    (issue,) = validate_section({"sensor": False}, owner="connection")
    assert (issue.path, issue.severity) == ("", "warning")
    assert "read from a dataflow's configure only" in issue.message


def test_a_section_is_parsed_once(tmp_path: Path) -> None:
    provider = FileProvider(write_metadata(tmp_path, PARTITIONS))
    first, second = provider.get_dataflows()[:2]  # the same partitions, written twice
    assert dagster_settings(first) is dagster_settings(first)
    assert dagster_settings(first) is dagster_settings(second)


@pytest.mark.parametrize(
    "cron",
    ["0 * * * *", "*/15 * * * *", "0 0 1 1 *", "@daily", "@hourly", "@weekly", "@monthly", "@yearly", "@annually",
     "@midnight", "@reboot", "0 0 * * MON-FRI", "0 0 * JAN *", "0 0 * * 7", "60 * * * *", "0 24 * * *", "0 0 0 * *",
     "0 0 32 * *", "0 0 * 13 *", "0 0 * * 8", "0 0 30 2 *", "0 0 L * *", "0 0 * * 5L", "0 0 * * 1#2", "0 0 ? * *",
     "? * * * *", "0 0 1-5/2 * *", "1,2,3 * * * *", "* * * * * *", "every hour", "5/10 * * * *", "0 0 15W * *",
     "*/0 * * * *", "0 0 29 2 *", "0 0 5-1 * *", "0 0 * jan-mar *", "*/60 * * * *", "0 0 * * sunday", "1-2-3 * * * *"],
)  # fmt: skip
def test_the_pure_cron_check_agrees_with_dagster(cron: str) -> None:
    assert is_cron(cron) == is_valid_cron_string(cron)


def test_the_docs_list_every_key() -> None:
    text = DOCS.read_text()
    models = ((DagsterSettings, ""), (PartitionsSettings, "partitions."), (ScheduleSettings, "schedule."),
              (FreshnessSettings, "freshness."))  # fmt: skip
    for model, prefix in models:
        for key in model.model_fields:
            if model is DagsterSettings and key in ("partitions", "schedule"):
                continue
            assert f"`{prefix}{key}`" in text, f"docs/dagster-settings.md does not document {prefix}{key}"


def test_a_dataflow_built_in_code_is_checked_when_read(tmp_path: Path) -> None:
    (loaded, *_) = FileProvider(write_metadata(tmp_path, LINEAGE)).get_dataflows()
    built = loaded.model_copy(update={"configure": {"dagster": {"sensr": False}}})
    message = "configure.dagster.sensr (dataflow 'orders_eu_to_bronze'): unknown key 'sensr'; did you mean 'sensor'?"
    with pytest.raises(MetadataError, match=re.escape(message)):
        dagster_settings(built)
