"""Plug-in checks of ``configure.<name>`` sections, found through the ``datacoolie.configure_sections`` group.

A dataflow's (or connection's) ``configure`` is free in DataCoolie's schema, so core cannot know
the keys an orchestrator reads there. A package that reads a section registers a check for it:

    [project.entry-points."datacoolie.configure_sections"]
    dagster = "datacoolie_dagster.location.dataflow_settings:validate_section"

and every validation (``datacoolie validate``, each ``FileProvider`` load) reports that section's
problems at their real path, ``dataflows[3].configure.dagster.max_partition_per_run``. Without
the plug-in a section is not checked, as DataCoolie does. A plug-in is imported only when a
document holds its section: validating a plain DataCoolie file never imports the orchestrator.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from importlib.metadata import EntryPoint
from typing import Any, Literal, Protocol

from datacoolie_core.errors import MetadataIssue
from datacoolie_core.plugins import entry_points_of
from datacoolie_core.suggestions import closest

SECTIONS_GROUP = "datacoolie.configure_sections"
Owner = Literal["dataflow", "connection"]
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


class ConfigureSection(Protocol):
    """Checks one ``configure.<name>`` section, as written in the document.

    Called with the section's value (any JSON value) and the kind of object holding it. Returns
    every problem, never raises for bad input. Each issue's ``path`` is relative to the section
    (``""`` for the section itself, ``partitions.start`` below it); its message says what is wrong
    and how to fix it. Core adds the file, the object's path and its name.
    """

    def __call__(self, value: Any, *, owner: Owner) -> Iterable[MetadataIssue]: ...


class SectionRegistry:
    """Section name -> check; an entry point is loaded on its first use, once."""

    def __init__(self, entries: Mapping[str, EntryPoint | ConfigureSection]) -> None:
        self._entries = dict(entries)
        self._loaded: dict[str, ConfigureSection | str] = {}

    @property
    def names(self) -> list[str]:
        return list(self._entries)

    def get(self, name: str) -> ConfigureSection | str | None:
        """The check of ``name``; a string says why its plug-in could not be loaded; ``None``: no plug-in."""
        if name not in self._entries:
            return None
        if name not in self._loaded:
            self._loaded[name] = _load(self._entries[name])
        return self._loaded[name]

    def with_sections(self, extra: Mapping[str, ConfigureSection]) -> SectionRegistry:
        """This registry plus ``extra`` (``extra`` wins on a name)."""
        return SectionRegistry({**self._entries, **extra})


def _load(entry: EntryPoint | ConfigureSection) -> ConfigureSection | str:
    if not isinstance(entry, EntryPoint):
        return entry
    try:
        return entry.load()
    except Exception as e:  # a broken plug-in leaves its section unchecked, as without it, and says so
        return f"plug-in {entry.value} cannot be loaded: {type(e).__name__}: {e}"


@functools.cache
def discovered_sections() -> SectionRegistry:
    """The checks installed packages register (the entry points are read once per process)."""
    return SectionRegistry({entry.name: entry for entry in entry_points_of(SECTIONS_GROUP)})


def check_sections(
    configure: Mapping[str, Any], *, owner: Owner, path: str, registry: SectionRegistry | None = None
) -> list[MetadataIssue]:
    """The issues of every section of ``configure`` (at ``path``) a plug-in checks, at their full path.

    A key close to a plug-in's section name (``dagstr``) is a warning: it is read by nobody.
    """
    registry = registry or discovered_sections()
    issues: list[MetadataIssue] = []
    for name, value in configure.items():
        where = f"{path}.{name}" if _IDENTIFIER.fullmatch(name) else f"{path}[{name!r}]"
        check = registry.get(name)
        if check is None:
            match = closest(name, registry.names, cutoff=0.85)
            if match and match != name:
                message = f"unknown configure key '{name}' is read by no plug-in; did you mean '{match}'?"
                issues.append(MetadataIssue(where, message, "warning"))
        elif isinstance(check, str):
            issues.append(MetadataIssue(where, f"not checked: {check}", "warning"))
        else:
            issues += [
                MetadataIssue(section_path(where, i.path), i.message, i.severity) for i in check(value, owner=owner)
            ]
    return issues


def section_path(base: str, relative: str) -> str:
    """``base`` + a section-relative path (``""``/``"$"``, ``"a.b"``, ``"[0]"``, ``"['x y']"``)."""
    if relative in ("", "$"):
        return base
    return base + relative if relative.startswith("[") else f"{base}.{relative}"
