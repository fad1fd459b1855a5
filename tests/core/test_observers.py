"""Run observers: what ``datacoolie run`` hands to plug-ins, and why a plug-in never fails a run.

The plug-ins here are real entry points (``importlib.metadata.EntryPoint``) naming the factories
of this module; only the installed list is replaced.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from datacoolie_core import FileProvider, observers
from datacoolie_core.cli import main
from datacoolie_core.models.run_config import WindowSpec
from datacoolie_core.models.runtime import ExecutionResult
from datacoolie_core.observers import RunContext
from tests.core.orchestration.driver_support import Lake, function_source

SEEN: list[tuple[RunContext, ExecutionResult]] = []


WANTED: list[str] = []
"""The dataflow ids the recorder asks windows for."""


class Recorder:
    """Asks for monthly windows of ``updated_at`` on ``WANTED``, and keeps what it is told."""

    def __init__(self, context: RunContext) -> None:
        self.context = context

    def windows(self) -> Mapping[str, WindowSpec]:
        return dict.fromkeys(WANTED, WindowSpec(column="updated_at", every="1mo"))

    def record(self, result: ExecutionResult) -> str:
        SEEN.append((self.context, result))
        return f"recorder: {result.succeeded} dataflow(s) to {self.context.target}"


def recorder(context: RunContext) -> Recorder:
    return Recorder(context)


def inactive(context: RunContext) -> None:
    return None


def broken_factory(context: RunContext) -> Recorder:
    raise RuntimeError("cannot reach the catalog")


class BrokenRecord(Recorder):
    def record(self, result: ExecutionResult) -> str:
        raise OSError("disk full")


def broken_record(context: RunContext) -> BrokenRecord:
    return BrokenRecord(context)


def install(monkeypatch: pytest.MonkeyPatch, **factories: str) -> None:
    points = {name: EntryPoint(name, f"{__name__}:{attr}", observers.GROUP) for name, attr in factories.items()}
    monkeypatch.setattr(observers, "_entry_points", lambda: points)


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    lake = Lake(tmp_path)
    lake.add("orders", source=function_source("orders") | {"watermark_columns": ["updated_at"]})
    lake.write()
    SEEN.clear()
    return lake


def test_an_observer_measures_and_records_the_run(
    lake: Lake, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install(monkeypatch, rec="recorder", off="inactive")
    WANTED[:] = [d.dataflow_id for d in FileProvider(lake.metadata_path).get_dataflows()]

    code = main(["run", "--metadata", str(lake.metadata_path), "--observer", "rec=somewhere"])

    assert code == 0
    assert "recorder: 1 dataflow(s) to somewhere" in capsys.readouterr().err
    ((context, result),) = SEEN
    assert (context.command, context.target) == ("run", "somewhere")
    touched = result.runtimes[0].destination.touched
    assert touched is not None
    assert (touched.column, sum(touched.rows)) == ("updated_at", result.runtimes[0].destination.rows_written)


@pytest.mark.parametrize(
    ("factory", "warning"),
    [
        ("broken_factory", "warning: run observer 'bad' is not recording this run: cannot reach the catalog"),
        ("broken_record", "warning: run observer 'bad' did not record this run: OSError: disk full"),
    ],
    ids=["factory-raises", "record-raises"],
)
def test_a_failing_observer_is_a_warning_never_a_failed_run(
    lake: Lake, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], factory: str, warning: str
) -> None:
    install(monkeypatch, bad=factory)

    code = main(["run", "--metadata", str(lake.metadata_path)])

    assert code == 0
    assert warning in capsys.readouterr().err
    assert lake.table("orders").height == 3


def test_a_dry_run_and_no_observers_record_nothing(
    lake: Lake, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install(monkeypatch, rec="recorder")

    assert main(["run", "--metadata", str(lake.metadata_path), "--dry-run"]) == 0
    assert main(["run", "--metadata", str(lake.metadata_path), "--no-observers"]) == 0

    assert SEEN == []
    assert "recorder" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("reco=/x", "no run observer named 'reco'; did you mean 'rec'? (known: rec)"),
        ("rec", "--observer 'rec': expected NAME=TARGET"),
    ],
    ids=["unknown-name", "no-target"],
)
def test_bad_observer_arguments_are_usage_errors(
    lake: Lake, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    install(monkeypatch, rec="recorder")

    assert main(["run", "--metadata", str(lake.metadata_path), "--observer", value]) == 2
    assert message in capsys.readouterr().err
    assert not lake.has_table("orders")
