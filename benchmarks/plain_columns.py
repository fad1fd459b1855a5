"""The system columns the plain baselines add by hand, as our engine adds them (same names, types)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def system_columns(pl: Any) -> list[Any]:
    """``__created_at``/``__updated_at`` (now), ``__updated_by`` and ``__dataflow_run_id`` literals."""
    now = datetime.now(UTC)
    return [
        pl.lit(now).alias("__created_at"),
        pl.lit(now).alias("__updated_at"),
        pl.lit("DataCoolie").alias("__updated_by"),
        pl.lit("run").alias("__dataflow_run_id"),
    ]
