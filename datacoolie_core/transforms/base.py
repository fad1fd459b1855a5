"""The transformer contract and the context every transformer receives."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

import polars as pl

from datacoolie_core.models.dataflow import DataFlow

ColumnNameMode = Literal["lower", "snake"]


@dataclass(frozen=True)
class TransformContext:
    """One execution's constants: the same for every transformer and every row of the batch."""

    dataflow: DataFlow
    dataflow_run_id: str
    run_time: datetime
    """UTC instant of this execution: ``__created_at``/``__updated_at`` and SQL ``NOW()``."""
    column_name_mode: ColumnNameMode = "lower"


class Transformer(Protocol):
    """One slot of the pipeline.

    ``order`` is the slot (5 value rules ... 90 column names; 40-50 for plugins). ``apply`` returns the
    new frame and a label to record (``"Deduplicator(RANK)"``), or ``None`` when the transformer had
    nothing to do. Raise :class:`~datacoolie_core.errors.TransformError` naming the dataflow, the
    metadata key and the column when metadata and data disagree.
    """

    name: str
    order: int

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]: ...
