"""The private Dagster uses live in one module, checked against one Dagster version; the public
replacements elsewhere give what the private functions gave (Dagster's own code as the reference)."""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.dependency import (  # the edges build_node_deps returns
    BlockingAssetChecksDependencyDefinition,
    DependencyDefinition,
)
from dagster._core.storage.dagster_run import NOT_FINISHED_STATUSES  # the reference
from dagster._utils.schedules import cron_string_iterator, is_valid_cron_string  # the reference

import datacoolie_dagster
from datacoolie_dagster import build_definitions, dagster_internal
from datacoolie_dagster.automation.schedules import _fires_before_latest, dagster_accepts_cron
from datacoolie_dagster.commands.backfill import NOT_FINISHED
from datacoolie_dagster.location.dataflow_settings import ScheduleSettings
from tests.dagster.conftest import LINEAGE, PARTITIONS, write_metadata

PACKAGE = Path(datacoolie_dagster.__file__).parent


def test_installed_dagster_is_the_checked_version() -> None:
    assert dagster_internal.version_mismatch() is None, dagster_internal.version_mismatch()


def test_version_mismatch_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dg, "__version__", "1.99.0")
    message = dagster_internal.version_mismatch()
    assert message is not None
    assert re.search(r"dagster 1\.99\.0 is installed.*checked against 1\.13\.27.*dagster_internal\.py", message)


def test_every_private_name_used_still_resolves() -> None:
    assert dagster_internal.missing_private_names() == [], "Dagster moved private names; see dagster_internal.py"


def test_private_dagster_imports_only_in_dagster_internal() -> None:
    users = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "dagster._" in path.read_text(encoding="utf-8")
    )
    assert users == ["dagster_internal.py"]


def test_every_private_module_imported_is_listed() -> None:
    text = (PACKAGE / "dagster_internal.py").read_text(encoding="utf-8")
    imported = set(re.findall(r"from (dagster\._[\w.]+) import", text))
    assert imported - set(dagster_internal.PRIVATE_USES) == set()


def test_not_finished_statuses_are_dagsters() -> None:
    assert set(NOT_FINISHED) == set(NOT_FINISHED_STATUSES)


def _reference_fires(cron: str, timezone: str, last: datetime, now: datetime) -> list[datetime]:
    """What the catch-up computed with Dagster's private cron iterator (the schedule daemon's)."""
    fires = []
    for fire in cron_string_iterator(now.timestamp(), cron, timezone, ascending=False):
        if fire > now:
            continue
        if fire <= last:
            break
        fires.append(fire)
    return list(reversed(fires[1:]))


CRONS = [
    ("0 * * * *", "Europe/Paris"),
    ("30 2 * * *", "Europe/Paris"),  # 02:30 does not exist on the spring-forward day
    ("30 1 * * *", "America/New_York"),  # 01:30 happens twice on the fall-back day
    ("*/15 * * * *", "America/New_York"),
    ("15 */2 * * *", "Australia/Lord_Howe"),  # a 30-minute DST shift
    ("0 0 1 * *", "Asia/Kolkata"),
    ("0 9 * * 1-5", "Europe/London"),
    ("@daily", "UTC"),
]
SPANS = [
    (datetime(2024, 3, 28, tzinfo=UTC), datetime(2024, 4, 2, 5, 7, tzinfo=UTC)),  # Europe springs forward
    (datetime(2024, 10, 25, 1, tzinfo=UTC), datetime(2024, 11, 5, 3, tzinfo=UTC)),  # both fall back
    (datetime(2024, 3, 10, 5, tzinfo=UTC), datetime(2024, 3, 10, 9, tzinfo=UTC)),  # New York springs forward
    (datetime(2024, 11, 3, 4, 30, tzinfo=UTC), datetime(2024, 11, 3, 8, tzinfo=UTC)),  # New York falls back
    (datetime(2024, 1, 1, 0, tzinfo=UTC), datetime(2024, 1, 1, 0, tzinfo=UTC) + timedelta(days=3)),  # now is a fire
]


@pytest.mark.parametrize(("cron", "timezone"), CRONS)
def test_catchup_fires_are_the_fires_of_dagsters_cron_iterator(cron: str, timezone: str) -> None:
    settings = ScheduleSettings(cron=cron, timezone=timezone)
    for last, now in SPANS:
        # in UTC: an aware datetime in a DST fold never equals one of another zone (Python's rule)
        expected = [fire.astimezone(UTC) for fire in _reference_fires(cron, timezone, last, now)]
        assert _fires_before_latest(settings, last, now) == expected, (cron, timezone, last, now)


def test_catchup_fires_leave_the_latest_fire_to_the_schedule() -> None:
    settings = ScheduleSettings(cron="0 * * * *", timezone="UTC")
    last, now = datetime(2024, 1, 1, 0, tzinfo=UTC), datetime(2024, 1, 1, 3, tzinfo=UTC)
    assert _fires_before_latest(settings, last, now) == [datetime(2024, 1, 1, h, tzinfo=UTC) for h in (1, 2)]


@pytest.mark.parametrize(
    "cron",
    ["0 * * * *", "@daily", "0 0 L * *", "0 0 * * MON", "bogus", "61 * * * *", "* * * *", "0 0 31 2 *", "*/0 * * * *"],
)
def test_cron_check_is_dagsters(cron: str) -> None:
    assert dagster_accepts_cron(cron) == is_valid_cron_string(cron)


# --- build_node_deps: the set of checked asset keys built once per assets definition -----------------


def _upstream_checks() -> dg.Definitions:
    """Dagster's own cases of the rewritten branch: an assets definition checking its upstream (its
    input is then not blocked by the upstream's checks) and a check-only definition with extra deps."""

    @dg.asset(check_specs=[dg.AssetCheckSpec("positive", asset="a", blocking=True)])
    def a() -> dg.MaterializeResult:
        return dg.MaterializeResult()

    @dg.multi_asset(
        specs=[dg.AssetSpec("b", deps=["a"])],
        check_specs=[dg.AssetCheckSpec("fresh", asset="a", blocking=True)],
        allow_arbitrary_check_specs=True,
    )
    def b() -> Iterator[dg.MaterializeResult]:
        yield dg.MaterializeResult(asset_key="b")

    @dg.multi_asset(specs=[dg.AssetSpec("c", deps=["a"])])
    def c() -> Iterator[dg.MaterializeResult]:
        yield dg.MaterializeResult(asset_key="c")

    @dg.asset_check(asset="c", additional_deps=["a"], blocking=True)
    def c_rows() -> dg.AssetCheckResult:
        return dg.AssetCheckResult(passed=True)

    return dg.Definitions(assets=[a, b, c], asset_checks=[c_rows])


def _ours(root: Path, fixture: Path, **fields: object) -> dg.Definitions:
    return build_definitions(write_metadata(root, fixture), state_base_path=root / "state", **fields)


@pytest.mark.parametrize(
    ("build", "blocked"),
    [
        (lambda root: _ours(root, LINEAGE), 0),  # one multi-asset: no edge between nodes
        # a multi-asset per limited stage: each reads the stage before through its blocking checks
        (lambda root: _ours(root, LINEAGE, max_runs={"bronze2silver": 1, "silver2gold": 2}), 4),
        (lambda root: _ours(root, PARTITIONS), 0),
        (lambda root: _upstream_checks(), 2),
    ],
    ids=["lineage", "a-multi-asset-per-stage", "partitions", "checks-on-upstreams"],
)
def test_the_hoisted_build_node_deps_returns_what_dagsters_returns(
    tmp_path: Path, build: Callable[[Path], dg.Definitions], blocked: int
) -> None:
    assert dagster_internal.hoist_build_node_deps()
    hoisted = importlib.import_module(dagster_internal.ASSET_JOB_MODULE).build_node_deps
    graph = build(tmp_path).resolve_asset_graph()
    deps, handles = hoisted(graph)
    assert (deps, handles) == hoisted.__wrapped__(graph)
    assert handles
    edges = [edge for inputs in deps.values() for edge in inputs.values()]
    assert sum(isinstance(edge, BlockingAssetChecksDependencyDefinition) for edge in edges) == blocked
    if blocked == 2:  # Dagster's own case: the exempted input too
        by_node = {n.name: inputs for n, inputs in deps.items()}
        assert type(by_node["b"]["a"]) is DependencyDefinition  # b checks a: a's checks do not block it
        assert isinstance(by_node["c"]["a"], BlockingAssetChecksDependencyDefinition)


def test_a_built_code_location_resolves_its_asset_job_with_the_hoisted_loop(tmp_path: Path) -> None:
    _ours(tmp_path, LINEAGE)
    build_node_deps = importlib.import_module(dagster_internal.ASSET_JOB_MODULE).build_node_deps
    assert getattr(build_node_deps, dagster_internal.HOISTED_MARK, False)
    source = inspect.getsource(build_node_deps.__wrapped__)
    assert dagster_internal.CHECKED_ASSET_KEYS in source, "Dagster's loop changed: re-read hoist_build_node_deps"


def _no_input_loop(assets_def: object) -> set[object]:
    return {ck.asset_key for ck in assets_def.check_keys}  # type: ignore[attr-defined]


def _two_input_loops(assets_defs: list[object], inputs_map: dict[str, object]) -> int:
    found = 0
    for assets_def in assets_defs:
        for _ in inputs_map.items():
            found += len({ck.asset_key for ck in assets_def.check_keys})  # type: ignore[attr-defined]
        for _ in inputs_map.items():
            found += len({ck.asset_key for ck in assets_def.check_keys})  # type: ignore[attr-defined]
    return found


@pytest.mark.parametrize("function", [_no_input_loop, _two_input_loops], ids=["no-input-loop", "two-input-loops"])
def test_a_function_not_shaped_like_dagsters_is_not_rewritten(function: object) -> None:
    assert dagster_internal._hoisted(function) is None  # type: ignore[arg-type]


def test_another_dagster_keeps_its_own_build_node_deps(monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module(dagster_internal.ASSET_JOB_MODULE)
    original = getattr(module.build_node_deps, "__wrapped__", module.build_node_deps)
    monkeypatch.setattr(module, "build_node_deps", original)
    monkeypatch.setattr(dg, "__version__", "1.99.0")
    assert not dagster_internal.hoist_build_node_deps()
    assert module.build_node_deps is original
