"""Running dataflows: the one-dataflow runner, the driver, sharding, the executor and retries."""

from datacoolie_core.orchestration.dataflow_runner import DataflowRun, run_dataflow
from datacoolie_core.orchestration.distributor import JobDistributor
from datacoolie_core.orchestration.driver import DataCoolieDriver, create_driver
from datacoolie_core.orchestration.executor import ParallelExecutor
from datacoolie_core.orchestration.retry import RetryHandler

__all__ = [
    "DataCoolieDriver",
    "DataflowRun",
    "JobDistributor",
    "ParallelExecutor",
    "RetryHandler",
    "create_driver",
    "run_dataflow",
]
