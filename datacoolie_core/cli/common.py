"""Shared pieces of the CLI commands."""

from __future__ import annotations

EXIT_OK = 0
EXIT_DATAFLOW_FAILED = 1
EXIT_USAGE = 2
