"""Job sharding: which dataflows one of ``job_num`` parallel jobs runs (DataCoolie O-05).

The external orchestrator launches jobs ``0..job_num-1`` with the same metadata snapshot; each job
keeps only its own shard. Assignment is deterministic (never random, never balanced by duration), so
every process computes the same answer: a grouped dataflow goes to ``group_number % job_num`` (a
whole group stays on one job, keeping its execution order meaningful), an ungrouped one to
``md5(dataflow_id) % job_num``. Changing ``job_num`` can move assignments.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.models.run_config import DataCoolieRunConfig


class JobDistributor:
    """Selects the dataflows of shard ``job_index`` out of ``job_num``.

    Example:
        >>> distributor = JobDistributor(job_num=4, job_index=2)
        >>> mine = distributor.select(provider.get_dataflows(stage="bronze2silver"))
    """

    def __init__(self, job_num: int = 1, job_index: int = 0) -> None:
        """Args:
            job_num: Number of shards the orchestrator launches (at least 1).
            job_index: This job's shard, ``0 <= job_index < job_num``.

        Raises:
            ValueError: ``job_num`` or ``job_index`` out of range.
        """
        if isinstance(job_num, bool) or not isinstance(job_num, int) or job_num < 1:
            raise ValueError(f"job_num must be a positive integer, got {job_num!r}; use 1 for a single job")
        if isinstance(job_index, bool) or not isinstance(job_index, int) or not 0 <= job_index < job_num:
            raise ValueError(
                f"job_index must be an integer in 0..{job_num - 1} for job_num {job_num}, got {job_index!r}; "
                "launch one job per index"
            )
        self.job_num = job_num
        self.job_index = job_index

    @classmethod
    def from_config(cls, config: DataCoolieRunConfig) -> JobDistributor:
        """The distributor of a run configuration's ``job_num`` / ``job_index``."""
        return cls(job_num=config.job_num, job_index=config.job_index)

    @staticmethod
    def shard_of(dataflow: DataFlow, job_num: int) -> int:
        """The shard (``0..job_num-1``) that runs ``dataflow``.

        ``group_number % job_num`` when the dataflow is grouped (Python modulo: negative groups map
        into range), else ``int(md5(dataflow_id).hexdigest(), 16) % job_num``. md5 rather than
        ``hash()``: Python's string hash is salted per process, shards must agree across machines.
        """
        if dataflow.group_number is not None:
            return dataflow.group_number % job_num
        digest = hashlib.md5((dataflow.dataflow_id or "").encode(), usedforsecurity=False).hexdigest()
        return int(digest, 16) % job_num

    def owns(self, dataflow: DataFlow) -> bool:
        """Whether this job's shard runs ``dataflow`` (always true for a single job)."""
        return self.job_num == 1 or self.shard_of(dataflow, self.job_num) == self.job_index

    def select(self, dataflows: Iterable[DataFlow], *, active_only: bool = True) -> list[DataFlow]:
        """This job's dataflows, in their given order.

        Args:
            dataflows: Candidate dataflows (typically all of a stage).
            active_only: Drop dataflows with ``is_active`` false. Connection activity is not looked
                at here: the driver reports an inactive connection as a skipped dataflow.
        """
        return [d for d in dataflows if (d.is_active or not active_only) and self.owns(d)]

    def __repr__(self) -> str:
        return f"JobDistributor(job_num={self.job_num}, job_index={self.job_index})"
