"""Run observers: plug-ins told what a ``datacoolie run`` / ``replay`` built.

An observer records the run somewhere else (``datacoolie_dagster`` records materializations in a
Dagster instance, so the asset catalog is true however a table was loaded). Observers register in
the entry-point group ``datacoolie.run_observers``; the entry point names a factory
``(RunContext) -> RunObserver | None`` (``None``: nothing to record to, e.g. no instance
configured). Every entry point is loaded before each run: keep its module light and import the
heavy part only when the observer is active.

Recording is best effort: an observer that fails to start or to record is a warning, never a
failed run (the data and the watermarks are already committed).

Example (``pyproject.toml`` of a plug-in)::

    [project.entry-points."datacoolie.run_observers"]
    dagster = "datacoolie_dagster_hook:run_observer"
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from typing import Literal, Protocol

from datacoolie_core.errors import DataCoolieError
from datacoolie_core.models.run_config import ReplayConfig, WindowSpec
from datacoolie_core.models.runtime import ExecutionResult
from datacoolie_core.plugins import entry_points_of
from datacoolie_core.suggestions import did_you_mean

GROUP = "datacoolie.run_observers"


@dataclass(frozen=True)
class RunContext:
    """What an observer factory knows about the run it is asked to observe."""

    command: Literal["run", "replay"]
    metadata_path: str
    """The ``--metadata`` argument: file, or folder holding ``metadata.json``."""
    target: str | None = None
    """``--observer NAME=TARGET`` for this observer (e.g. a Dagster home folder); ``None`` if not given."""
    replay: ReplayConfig | None = None
    """The replay's range and chunking (``replay`` only)."""


class RunObserver(Protocol):
    """Told about one run: asked before it what to measure, told after it what was built.

    ``windows`` is called once before the run: the dataflows whose writes should report touched
    windows (see :class:`~datacoolie_core.models.run_config.WindowSpec`). ``record`` is called once
    after it with the result and returns one line saying what was recorded where. Either may raise;
    the caller reports the error as a warning.
    """

    def windows(self) -> Mapping[str, WindowSpec]: ...

    def record(self, result: ExecutionResult) -> str: ...


ObserverFactory = Callable[[RunContext], RunObserver | None]


class ObserverError(DataCoolieError):
    """``--observer`` names an observer that is not installed, or is malformed."""


@dataclass
class Observers:
    """The observers of one run, by entry-point name, and the warnings of those that did not start."""

    active: dict[str, RunObserver] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def windows(self) -> dict[str, WindowSpec]:
        """Every observer's window specs (the first observer asking for a dataflow wins)."""
        specs: dict[str, WindowSpec] = {}
        for name, observer in self.active.items():
            try:
                for dataflow_id, spec in observer.windows().items():
                    specs.setdefault(dataflow_id, spec)
            except Exception as e:  # best effort: the run goes on without this observer's windows
                self.warnings.append(f"warning: run observer '{name}' could not say what to measure: {e}")
        return specs

    def record(self, result: ExecutionResult) -> list[str]:
        """Hand ``result`` to each observer; its line, or a warning line."""
        lines = []
        for name, observer in self.active.items():
            try:
                lines.append(observer.record(result))
            except Exception as e:  # the run is committed: failing to record it is not a failed run
                lines.append(f"warning: run observer '{name}' did not record this run: {type(e).__name__}: {e}")
        return lines


def parse_targets(values: Sequence[str]) -> dict[str, str]:
    """``["dagster=/srv/home"]`` -> ``{"dagster": "/srv/home"}``.

    Raises:
        ObserverError: a value without ``NAME=``, or naming an observer that is not installed.
    """
    installed = sorted(_entry_points())
    targets: dict[str, str] = {}
    for value in values:
        name, sep, target = value.partition("=")
        if not sep or not name.strip():
            raise ObserverError(f"--observer {value!r}: expected NAME=TARGET, e.g. dagster=/path/to/dagster_home")
        if name not in installed:
            known = ", ".join(installed) or "none installed"
            raise ObserverError(
                f"--observer: no run observer named {name!r}{did_you_mean(name, installed)} (known: {known})"
            )
        targets[name] = target
    return targets


def start_observers(context: RunContext, targets: Mapping[str, str] | None = None) -> Observers:
    """Load every installed observer and start it for ``context`` (``targets``: ``--observer`` values)."""
    observers = Observers()
    for name, entry in sorted(_entry_points().items()):
        try:
            factory: ObserverFactory = entry.load()
            observer = factory(_with_target(context, (targets or {}).get(name)))
        except Exception as e:  # a broken plug-in must not stop the run
            observers.warnings.append(f"warning: run observer '{name}' is not recording this run: {e}")
            continue
        if observer is not None:
            observers.active[name] = observer
    return observers


def _with_target(context: RunContext, target: str | None) -> RunContext:
    return RunContext(context.command, context.metadata_path, target, context.replay)


def _entry_points() -> dict[str, EntryPoint]:
    return {entry.name: entry for entry in entry_points_of(GROUP)}
