"""The bundled example's code location: its tables, plus what stands in for the upstream system.

In a real deployment files land in the landing folder from outside. The example has no outside, so
the code location that serves the bundled example (``definitions.py``, only for that metadata) adds:

* the job ``land_example_batch``: lands the next batch of source files under ``./data/landing``
  (new orders, updates, a late file, a new customer snapshot; see ``docs/example.md``), so a user
  can watch the ``datacoolie_sources`` sensor request a run, from the UI alone;
* :class:`ExampleResource`: on a fresh clone nothing was landed, so the first run that executes a
  dataflow lands batch 1 before it reads, and says so in the run's log. A real source stays a real
  source: the file reader still fails on a missing folder (a typo in ``base_path`` must not pass
  for "no new files"), and the definitions still touch no data when they load.
"""

# no `from __future__ import annotations`: Dagster reads the context and config annotations at runtime

import os
from pathlib import Path
from typing import Any

import dagster as dg

from datacoolie_dagster.constants import EXAMPLE
from datacoolie_dagster.example import DATA_ROOT, METADATA_PATH
from datacoolie_dagster.location.factory import build_definitions
from datacoolie_dagster.location.resources import DataCoolieResource

LAND_JOB_NAME = "land_example_batch"
EXAMPLE_TAG = EXAMPLE


class ExampleResource(DataCoolieResource):
    """``DataCoolieResource`` of the bundled example: batch 1 is landed before the first read."""

    example_data_root: str = DATA_ROOT
    """The example's data root (its metadata's base paths are ``./data/...``)."""

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        written = land_first_batch(Path(self.example_data_root))
        if written and context.log is not None:
            context.log.info(
                f"bundled example: no order file under {Path(self.example_data_root) / 'landing'} yet, so batch 1 "
                f"was landed before this run reads it: {', '.join(map(str, written))}. "
                f"Run the job '{LAND_JOB_NAME}' to land the next batch."
            )


def land_first_batch(root: Path) -> list[Path]:
    """Land batch 1 under ``root`` if no batch was landed there; the files written (none if some were).

    Safe when several steps of one run start side by side: a file already in place is kept.
    """
    # the generator needs Polars: imported by the steps that land data, not by every code-location load
    from datacoolie_dagster.example.generate import land_batch, landed_batches

    if landed_batches(root):
        return []
    return land_batch(root, 1)


class LandBatchConfig(dg.Config):
    """What ``land_example_batch`` lands, and where."""

    batch: int | None = None
    """Batch number; unset: one more than the highest landed (batch 1 on an empty folder)."""
    data_root: str = DATA_ROOT
    """Data root, relative to the code location's working directory; files go to ``<data_root>/landing``."""


@dg.op(name="land_batch", tags={EXAMPLE_TAG: "true"})
def _land_batch(context: dg.OpExecutionContext, config: LandBatchConfig) -> dg.Output[None]:
    from datacoolie_dagster.example.generate import land_batch, next_batch  # Polars: see land_first_batch

    root = Path(config.data_root)
    batch = config.batch or next_batch(root)
    written = land_batch(root, batch)
    if not written:
        context.log.info(f"batch {batch} was already landed under {root / 'landing'}: nothing written")
    for path in written:
        context.log.info(f"landed batch {batch}: {path}")
    return dg.Output(
        None,
        metadata={
            "batch": batch,
            "files": dg.MetadataValue.json([os.fspath(p) for p in written]),
            "landing": dg.MetadataValue.path(os.fspath(root / "landing")),
        },
    )


def build_land_job() -> dg.JobDefinition:
    """The job ``land_example_batch`` (one op, no resources)."""

    @dg.job(
        name=LAND_JOB_NAME,
        description=(
            "Bundled example: land the next batch of source files under ./data/landing (40 new orders, 30 "
            "updated orders, a late file of 6 orders of an old month, a new customer snapshot). Turn on the "
            "datacoolie_sources sensor to see it request the landing2bronze tables."
        ),
        tags={EXAMPLE_TAG: "true"},
    )
    def land_example_batch() -> None:
        _land_batch()

    return land_example_batch


def build_example_definitions(
    *,
    state_base_path: str | os.PathLike[str] | None = None,
    log_base_path: str | os.PathLike[str] | None = None,
    data_root: str = DATA_ROOT,
    state_url: str | None = None,
    **kwargs: Any,
) -> dg.Definitions:
    """The bundled example's definitions: ``build_definitions`` with :class:`ExampleResource`, plus the land job.

    Args:
        state_base_path, log_base_path, state_url: as for ``build_definitions``.
        data_root: the example's data root (where batch 1 lands on the first run).
        kwargs: passed to ``build_definitions``.
    """
    resource = ExampleResource(
        metadata_path=os.fspath(METADATA_PATH),
        state_base_path=os.fspath(state_base_path) if state_base_path is not None else None,
        state_url=state_url,
        log_base_path=os.fspath(log_base_path) if log_base_path is not None else None,
        example_data_root=data_root,
    )
    tables = build_definitions(METADATA_PATH, resource=resource, **kwargs)
    return dg.Definitions.merge(tables, dg.Definitions(jobs=[build_land_job()]))
