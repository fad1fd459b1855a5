"""Function sources for the function reader's tests (imported by dotted path)."""

from __future__ import annotations

from typing import Any

import polars as pl

calls: list[dict[str, Any]] = []

ROWS = pl.DataFrame({"id": [1, 2, 3, 4], "n": [10, 20, 30, 40], "status": ["ok", "ok", "void", "ok"]})


def orders(**kwargs: Any) -> pl.LazyFrame:
    """Ignores the bounds on purpose: the reader must filter anyway."""
    calls.append(kwargs)
    return ROWS.lazy()


def prefiltered(*, source: Any, watermark: dict[str, Any] | None, read_range: Any) -> pl.DataFrame:
    """Uses the bounds it is given, as a real API or generator would."""
    calls.append({"source": source, "watermark": watermark, "read_range": read_range})
    if watermark is None:
        return ROWS
    return ROWS.filter(pl.col("n") > watermark["n"])


def nothing(**_: Any) -> None:
    return None


def not_a_frame(**_: Any) -> list[int]:
    return [1, 2]


def broken(**_: Any) -> pl.DataFrame:
    raise RuntimeError("upstream API returned 503")


NOT_CALLABLE = 5
