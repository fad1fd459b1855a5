"""Execution and system logs: JSON lines under ``<log_base_path>/{execution_logs,system_logs}``."""

from datacoolie_core.logging.context import current_dataflow_id, dataflow_context
from datacoolie_core.logging.execution_logger import LOG_SCHEMA_VERSION, ExecutionLogger
from datacoolie_core.logging.system_logger import SystemLogger

__all__ = ["LOG_SCHEMA_VERSION", "ExecutionLogger", "SystemLogger", "current_dataflow_id", "dataflow_context"]
