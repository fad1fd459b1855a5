"""Running dataflows: the one-dataflow runner (the driver, sharding and executor build on it)."""

from datacoolie_core.orchestration.dataflow_runner import DataflowRun, run_dataflow

__all__ = ["DataflowRun", "run_dataflow"]
