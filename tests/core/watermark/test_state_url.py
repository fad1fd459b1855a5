"""State URLs whose password holds URL-reserved characters: refused without echo, masked wherever shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from datacoolie_core.cli import main
from datacoolie_core.errors import DataCoolieError
from datacoolie_core.redaction import mask
from datacoolie_core.watermark.store import check_state_url, redact_url
from tests.core.orchestration.driver_support import Lake

SECRET_TAIL = "Zq7secretTail"
PASSWORDS = [f"p{c}{SECRET_TAIL}" for c in "#/?@["]
IDS = ["hash", "slash", "question-mark", "at", "bracket"]


def url(password: str) -> str:
    return f"postgresql://etl:{password}@db.internal:5432/state"


@pytest.mark.parametrize("password", PASSWORDS, ids=IDS)
def test_check_state_url_refuses_without_echo_and_masks_the_password(password: str) -> None:
    with pytest.raises(DataCoolieError, match=r"must percent-encode '.' as %[0-9A-F]{2}") as error:
        check_state_url(url(password))
    assert SECRET_TAIL not in str(error.value)
    assert SECRET_TAIL not in mask(f"connecting to {url(password)}")


@pytest.mark.parametrize("password", PASSWORDS, ids=IDS)
def test_redact_url_never_shows_such_a_password(password: str) -> None:
    shown = redact_url(url(password))
    assert SECRET_TAIL not in shown
    assert shown == "postgresql://***@db.internal:5432/state"


def test_an_encoded_password_is_accepted_and_redacted() -> None:
    check_state_url(url("p%23Zq7secretTail"))
    assert redact_url(url("p%23Zq7secretTail")) == "postgresql://etl:***@db.internal:5432/state"


@pytest.mark.parametrize("password", PASSWORDS, ids=IDS)
@pytest.mark.parametrize(
    "command",
    [
        ["run", "--stage", "bronze2silver"],
        ["run", "--stage", "bronze2silver", "--json"],
        ["state", "show", "--dataflow", "orders"],
        ["state", "migrate"],
    ],
    ids=["run", "run-json", "state-show", "state-migrate"],
)
def test_no_command_prints_it_or_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], password: str, command: list[str]
) -> None:
    lake = Lake(tmp_path)
    lake.add("orders")
    metadata = lake.write()
    if command[:2] == ["state", "migrate"]:
        argv = [*command, "--from", url(password), "--to", str(tmp_path / "state")]
    else:
        argv = [*command, "--metadata", str(metadata), "--state-url", url(password)]
    code = main(argv)
    captured = capsys.readouterr()
    output = captured.out + captured.err
    assert code != 0
    assert SECRET_TAIL not in output
    assert "Traceback" not in output
    assert "percent-encode" in output
    assert not lake.has_table("orders")


def test_the_environment_variable_is_checked_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = Lake(tmp_path)
    lake.add("orders")
    monkeypatch.setenv("DATACOOLIE_STATE_URL", url(PASSWORDS[0]))
    assert main(["run", "--metadata", str(lake.write()), "--stage", "bronze2silver"]) != 0
    captured = capsys.readouterr()
    assert SECRET_TAIL not in captured.out + captured.err
    assert "percent-encode" in captured.err
