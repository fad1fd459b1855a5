"""The ``datacoolie.*`` entry points: found as ``importlib.metadata`` finds them, scanned once per process."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core import observers, plugins
from datacoolie_core.metadata.sections import discovered_sections
from datacoolie_core.transforms.pipeline import plugin_transformers

GROUPS = ("datacoolie.run_observers", "datacoolie.configure_sections", "datacoolie.transformers")


@pytest.fixture(autouse=True)
def fresh_scan() -> Iterator[None]:
    plugins.rescan()
    discovered_sections.cache_clear()
    plugin_transformers.cache_clear()
    yield
    plugins.rescan()
    discovered_sections.cache_clear()
    plugin_transformers.cache_clear()


@pytest.mark.parametrize("group", GROUPS)
def test_each_group_holds_what_importlib_metadata_finds(group: str) -> None:
    assert plugins.entry_points_of(group) == tuple(entry_points(group=group))


def test_the_installed_dagster_plugins_are_found() -> None:
    assert "dagster" in observers._entry_points()
    assert "dagster" in discovered_sections().names


def test_one_scan_serves_every_group(monkeypatch: pytest.MonkeyPatch) -> None:
    scans: list[int] = []
    real = plugins.distributions

    def counted() -> Any:
        scans.append(1)
        return real()

    monkeypatch.setattr(plugins, "distributions", counted)
    observers._entry_points()
    observers._entry_points()
    assert discovered_sections().names
    plugin_transformers()
    assert len(scans) == 1


def test_a_distribution_installed_twice_counts_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for folder, target in (("first", "pkg_a:factory"), ("second", "pkg_b:factory")):
        dist = tmp_path / folder / "dc_twice-0.1.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dc_twice\nVersion: 0.1\n", encoding="utf-8")
        (dist / "entry_points.txt").write_text(f"[datacoolie.run_observers]\ntwice = {target}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "second"))
    monkeypatch.syspath_prepend(str(tmp_path / "first"))  # first on sys.path: wins, as importlib.metadata has it
    plugins.rescan()
    found = [e.value for e in plugins.entry_points_of("datacoolie.run_observers") if e.name == "twice"]
    assert found == ["pkg_a:factory"]
    assert found == [e.value for e in entry_points(group="datacoolie.run_observers") if e.name == "twice"]


def test_other_groups_are_refused() -> None:
    with pytest.raises(ValueError, match=r"reads the datacoolie\.\* groups only, not 'console_scripts'"):
        plugins.entry_points_of("console_scripts")
