"""A shard that gets no dataflow says why, in its step's log and in a run tag."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from datacoolie_core import FileProvider
from datacoolie_core.orchestration.distributor import JobDistributor
from datacoolie_dagster.constants import EMPTY_SHARD
from tests.dagster.conftest import definitions, land_lineage

SHARDS = 3


def shards_of_stage(root: Path, stage: str) -> dict[int, list[str]]:
    provider = FileProvider(root / "metadata.json")
    provider.initialize()
    flows = provider.get_dataflows(stage=stage)
    return {i: [d.name for d in JobDistributor(SHARDS, i).select(flows)] for i in range(SHARDS)}


def test_an_empty_shard_logs_and_tags_why_it_ran_nothing(lake: Path, instance: dg.DagsterInstance) -> None:
    land_lineage(lake)
    defs = definitions(lake)
    owned = shards_of_stage(lake, "landing2bronze")
    empty = next(i for i, names in owned.items() if not names)
    busy = ", ".join(str(i) for i, names in owned.items() if names)
    total = sum(len(names) for names in owned.values())

    result = defs.resolve_job_def("datacoolie_landing2bronze").execute_in_process(
        run_config={"job_num": SHARDS, "job_index": empty}, instance=instance
    )

    assert result.success
    reason = (
        f"shard {empty}/{SHARDS} has no dataflow of stage landing2bronze: {total} active dataflow(s) spread over"
        f" {SHARDS} shards (by group_number, else a hash of the dataflow id) went to shard(s) {busy}"
    )
    logged = [r.user_message for r in instance.all_logs(result.run_id) if r.dagster_event is None]
    assert reason in logged
    run = instance.get_run_by_id(result.run_id)
    assert run is not None
    assert run.tags[f"{EMPTY_SHARD}/landing2bronze/{empty}"] == reason


def test_a_shard_with_dataflows_adds_no_empty_tag(lake: Path, instance: dg.DagsterInstance) -> None:
    land_lineage(lake)
    defs = definitions(lake)
    owned = shards_of_stage(lake, "landing2bronze")
    busy = next(i for i, names in owned.items() if names)

    result = defs.resolve_job_def("datacoolie_landing2bronze").execute_in_process(
        run_config={"job_num": SHARDS, "job_index": busy}, instance=instance
    )

    assert result.success
    run = instance.get_run_by_id(result.run_id)
    assert run is not None
    assert not [k for k in run.tags if k.startswith(EMPTY_SHARD)]
