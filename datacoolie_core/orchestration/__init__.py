"""Running dataflows: the one-dataflow runner, the driver, sharding, the executor and retries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datacoolie_core.lazy import lazy_exports

if TYPE_CHECKING:
    from datacoolie_core.orchestration.dataflow_runner import DataflowRun, run_dataflow
    from datacoolie_core.orchestration.distributor import JobDistributor
    from datacoolie_core.orchestration.driver import DataCoolieDriver, create_driver
    from datacoolie_core.orchestration.parallel_executor import ParallelExecutor
    from datacoolie_core.orchestration.retry import RetryHandler

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "DataflowRun": "datacoolie_core.orchestration.dataflow_runner",
        "run_dataflow": "datacoolie_core.orchestration.dataflow_runner",
        "JobDistributor": "datacoolie_core.orchestration.distributor",
        "DataCoolieDriver": "datacoolie_core.orchestration.driver",
        "create_driver": "datacoolie_core.orchestration.driver",
        "ParallelExecutor": "datacoolie_core.orchestration.parallel_executor",
        "RetryHandler": "datacoolie_core.orchestration.retry",
    },
)

__all__ = [
    "DataCoolieDriver",
    "DataflowRun",
    "JobDistributor",
    "ParallelExecutor",
    "RetryHandler",
    "create_driver",
    "run_dataflow",
]
