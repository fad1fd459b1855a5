"""The browser test's own guard: a missing Chromium skips locally and fails under CI (fast tier)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser import ui_support


@pytest.fixture
def no_chromium(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ui_support.shutil, "which", lambda _name: None)


@pytest.mark.usefixtures("no_chromium")
def test_missing_chromium_skips_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"install them: apt-get update && apt-get install -y chromium"):
        ui_support.chromium_binary()


@pytest.mark.usefixtures("no_chromium")
def test_missing_chromium_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"Chromium or /usr/bin/chromedriver not found"):
        ui_support.chromium_binary()


def test_missing_driver_fails_under_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ui_support, "CHROMEDRIVER", tmp_path / "chromedriver")
    monkeypatch.setattr(ui_support.shutil, "which", lambda _name: "/usr/bin/chromium")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="chromedriver not found"):
        ui_support.chromium_binary()
