"""The ``dagster`` run observer's entry point, importable without importing Dagster.

``datacoolie run`` loads every ``datacoolie.run_observers`` entry point before each run; importing
``datacoolie_dagster`` (and Dagster) costs seconds, so this package holds only the check whether an
instance is configured, and imports :mod:`datacoolie_dagster.location.catalog` only when one is.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datacoolie_core.api import RunContext
    from datacoolie_dagster.location.catalog import DagsterCatalog


def run_observer(context: RunContext) -> DagsterCatalog | None:
    """A :class:`~datacoolie_dagster.location.catalog.DagsterCatalog` when ``--observer dagster=<home>`` or
    ``DAGSTER_HOME`` names an instance; ``None`` (nothing imported) otherwise."""
    home = context.target or os.environ.get("DAGSTER_HOME")
    if not home:
        return None
    from datacoolie_dagster.location.catalog import DagsterCatalog

    return DagsterCatalog.open(home, context)
