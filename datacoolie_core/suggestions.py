"""Suggestions for a misspelt name: every "unknown X; did you mean Y?" of the engine.

A module of its own at the bottom of the layers: models, SQL functions, registries, metadata
validation and the Dagster settings all name the closest known key the same way.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(name: str, candidates: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The candidate closest to ``name``, if any is close enough to be a likely typo."""
    pool = list(candidates)
    lowered = {c.lower(): c for c in pool}
    if name.lower() in lowered:
        return lowered[name.lower()]
    matches = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=cutoff)
    return lowered[matches[0]] if matches else None


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` or ``""``."""
    match = closest(name, candidates)
    return f"; did you mean '{match}'?" if match and match != name else ""
