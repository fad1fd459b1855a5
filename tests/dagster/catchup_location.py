"""A code location for the catch-up daemon test: two stages on a minutely cron, one catching up.

``metadata.json`` (relative to the daemon's working directory) gives stage ``caught_up`` and stage
``latest_only`` one dataflow each; a run over an empty landing folder succeeds and writes nothing.
"""

from __future__ import annotations

from datacoolie_dagster import build_definitions

SCHEDULES = {
    "caught_up": {"cron": "* * * * *", "catchup": True},
    "latest_only": {"cron": "* * * * *", "catchup": False},
}

defs = build_definitions(
    "metadata.json", state_base_path="state", schedules=SCHEDULES, include_sensors=False, run_retries=0
)
