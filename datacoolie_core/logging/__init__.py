"""Execution and system logs: JSON lines under ``<log_base_path>/{execution_logs,system_logs}``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datacoolie_core.lazy import lazy_exports

if TYPE_CHECKING:
    from datacoolie_core.logging.context import current_dataflow_id, dataflow_context
    from datacoolie_core.logging.execution_logger import LOG_SCHEMA_VERSION, ExecutionLogger
    from datacoolie_core.logging.system_logger import SystemLogger

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "current_dataflow_id": "datacoolie_core.logging.context",
        "dataflow_context": "datacoolie_core.logging.context",
        "LOG_SCHEMA_VERSION": "datacoolie_core.logging.execution_logger",
        "ExecutionLogger": "datacoolie_core.logging.execution_logger",
        "SystemLogger": "datacoolie_core.logging.system_logger",
    },
)

__all__ = ["LOG_SCHEMA_VERSION", "ExecutionLogger", "SystemLogger", "current_dataflow_id", "dataflow_context"]
