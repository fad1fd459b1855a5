"""Builders for destinations, markers and batches shared by the writer tests."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from datacoolie_core.columns import (
    CREATED_AT,
    DATAFLOW_RUN_ID,
    IS_CURRENT,
    UPDATED_AT,
    UPDATED_BY,
    VALID_FROM,
    VALID_TO,
)
from datacoolie_core.destinations import CommitMarker
from datacoolie_core.models import Connection, Destination

APP = "datacoolie:orders"
TS = pl.Datetime("us", "UTC")


def make_destination(base: Path, fmt: str = "delta", **fields: Any) -> Destination:
    """A destination ``<base>/orders`` of a connection with format ``fmt``."""
    configure = {"base_path": str(base), **fields.pop("connection", {})}
    connection = Connection.model_validate({"name": "lake", "format": fmt, "configure": configure})
    return Destination.model_validate(
        {"connection_name": "lake", "table": "orders", **fields}, context={"connections": {"lake": connection}}
    )


def marker(sequence: int, app_id: str = APP, **metadata: str) -> CommitMarker:
    return CommitMarker(app_id=app_id, sequence=sequence, dataflow_run_id=f"run-{sequence}", metadata=metadata)


def at(day: int, hour: int = 0) -> datetime:
    return datetime(2024, 1, day, hour, tzinfo=UTC)


def system_columns(load: int) -> list[pl.Expr]:
    """The system columns as the transform pipeline adds them: one timestamp per load (day ``10 + load``)."""
    return [
        pl.lit(at(10 + load), dtype=TS).alias(CREATED_AT),
        pl.lit(at(10 + load), dtype=TS).alias(UPDATED_AT),
        pl.lit("DataCoolie").alias(UPDATED_BY),
        pl.lit(f"run-{load}").alias(DATAFLOW_RUN_ID),
    ]


def batch(
    rows: Sequence[tuple[Any, ...]], *, load: int, columns: Sequence[str] = ("id", "name", "amount")
) -> pl.DataFrame:
    """Business rows then the system columns of ``load``."""
    frame = pl.DataFrame([list(r) for r in rows], schema=list(columns), orient="row")
    return frame.with_columns(system_columns(load))


def stored(rows: Sequence[tuple[Any, ...]], *, columns: Sequence[str] = ("id", "name", "amount")) -> pl.DataFrame:
    """Expected table rows: business values, then the load that created and the load that last updated it."""
    frame = pl.DataFrame([list(r[:-2]) for r in rows], schema=list(columns), orient="row")
    created = [at(10 + r[-2]) for r in rows]
    updated = [r[-1] for r in rows]
    return frame.with_columns(
        pl.Series(CREATED_AT, created, dtype=TS),
        pl.Series(UPDATED_AT, [at(10 + u) for u in updated], dtype=TS),
        pl.lit("DataCoolie").alias(UPDATED_BY),
        pl.Series(DATAFLOW_RUN_ID, [f"run-{u}" for u in updated]),
    )


def scd2_batch(rows: Sequence[tuple[int | None, str, datetime]], *, load: int) -> pl.DataFrame:
    """``(id, name, valid_from)`` rows with the scd2 columns the column adder sets, then system columns."""
    frame = pl.DataFrame(
        [list(r) for r in rows], schema={"id": pl.Int64, "name": pl.String, VALID_FROM: TS}, orient="row"
    )
    return frame.with_columns(
        pl.lit(None, dtype=TS).alias(VALID_TO), pl.lit(True).alias(IS_CURRENT), *system_columns(load)
    )


def scd2_stored(rows: Sequence[tuple[int | None, str, datetime, datetime | None, int, int]]) -> pl.DataFrame:
    """``(id, name, valid_from, valid_to, created load, updated load)``; current = no valid_to."""
    frame = pl.DataFrame(
        [list(r[:4]) for r in rows],
        schema={"id": pl.Int64, "name": pl.String, VALID_FROM: TS, VALID_TO: TS},
        orient="row",
    )
    return frame.with_columns(
        pl.col(VALID_TO).is_null().alias(IS_CURRENT),
        pl.Series(CREATED_AT, [at(10 + r[4]) for r in rows], dtype=TS),
        pl.Series(UPDATED_AT, [at(10 + r[5]) for r in rows], dtype=TS),
        pl.lit("DataCoolie").alias(UPDATED_BY),
        pl.Series(DATAFLOW_RUN_ID, [f"run-{r[5]}" for r in rows]),
    )


def read_table(path: str | None, *by: str) -> pl.DataFrame:
    assert path is not None
    return pl.read_delta(path).sort(list(by) or ["id"], maintain_order=True)
