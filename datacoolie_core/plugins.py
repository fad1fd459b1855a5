"""The entry points of the ``datacoolie.*`` groups (run observers, configure sections, transformers).

``importlib.metadata.entry_points(group=...)`` parses the entry points of every installed
distribution on every call: with Dagster's ~135 distributions that is 10-40 ms per group, paid by
each ``datacoolie run`` three times. Here the installed distributions are scanned once per
process, and only those whose ``entry_points.txt`` names a ``datacoolie.`` group are parsed.
"""

from __future__ import annotations

import functools
import re
from importlib.metadata import Distribution, EntryPoint, distributions

PREFIX = "datacoolie."


def entry_points_of(group: str) -> tuple[EntryPoint, ...]:
    """The installed entry points of ``group`` (one of the ``datacoolie.*`` groups), in install order."""
    if not group.startswith(PREFIX):
        raise ValueError(f"entry_points_of reads the {PREFIX}* groups only, not {group!r}")
    return tuple(entry for entry in _declared() if entry.group == group)


def rescan() -> None:
    """Forget the scan: the next lookup sees distributions installed since (tests install some)."""
    _declared.cache_clear()


@functools.cache
def _declared() -> tuple[EntryPoint, ...]:
    """Every ``datacoolie.*`` entry point; a distribution found twice on ``sys.path``: the first wins."""
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for dist in distributions():
        text = dist.read_text("entry_points.txt")
        if not text or f"[{PREFIX}" not in text:  # most distributions: one small read, nothing parsed
            continue
        name = _normalized_name(dist)
        if name in seen:
            continue
        seen.add(name)
        found += [entry for entry in dist.entry_points if entry.group.startswith(PREFIX)]
    return tuple(found)


def _normalized_name(dist: Distribution) -> str:
    """The distribution's PEP 503 name, from its ``.dist-info`` folder's name when it has one.

    ``dist.metadata`` parses the whole METADATA file with the e-mail parser (10 ms for a package
    whose long description is its README); ``importlib.metadata.entry_points()`` itself reads the
    name from the folder (``_normalized_name``), so this does too, and falls back to the metadata.
    """
    from_folder = getattr(dist, "_normalized_name", None)
    return re.sub(r"[-_.]+", "-", (from_folder or dist.metadata["Name"] or "").lower())
