"""Definitions for the snapshot tests, built once per process from ``DATACOOLIE_TEST_METADATA``.

The test process builds them first (the "code location load"); every step process of the
multiprocess executor imports this module anew and builds them again from the file as it is then,
as a run worker re-importing a code location does.
"""

from __future__ import annotations

import functools
import os

import dagster as dg

from datacoolie_dagster.location.factory import build_definitions

STAGE_JOB = "datacoolie_landing2bronze"
ASSET_JOB = "snapshot_assets"
"""An asset job over every table: a reconstructable target, which the implicit asset job is not."""


@functools.cache
def defs() -> dg.Definitions:
    metadata = os.environ["DATACOOLIE_TEST_METADATA"]
    loaded = build_definitions(metadata, state_base_path=os.environ["DATACOOLIE_TEST_STATE"], include_sensors=False)
    return dg.Definitions.merge(loaded, dg.Definitions(jobs=[dg.define_asset_job(ASSET_JOB)]))


def stage_job() -> dg.JobDefinition:
    return defs().resolve_job_def(STAGE_JOB)


def asset_job() -> dg.JobDefinition:
    return defs().resolve_job_def(ASSET_JOB)
