"""What Spark does with the drifting values docs/drift.md describes, next to what we do (``spark``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from datacoolie_core.sources.api.reader import to_frame
from datacoolie_core.sources.window import typed_comparison

RECORDS = [{"id": 1, "updated_at": "2024-04-14T20:45:00Z"}, {"id": 2, "updated_at": "2024-04-15T08:00:00Z"}]


def test_a_json_timestamp_stays_text_as_in_spark(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in RECORDS), encoding="utf-8")
    theirs = {f.name: f.dataType.simpleString() for f in spark.read.json(str(path)).schema.fields}
    assert theirs["updated_at"] == "string"
    assert to_frame(RECORDS, "api").schema["updated_at"] == pl.String


def test_nan_passes_every_lower_bound_in_spark_and_none_here(spark: Any) -> None:
    row = spark.sql(
        "SELECT CAST('NaN' AS DOUBLE) > 1.0e300 AS passes, MAX(v) AS top, "
        "SUM(CASE WHEN v > 1.0 THEN 1 ELSE 0 END) AS passing FROM VALUES (1.5), (CAST('NaN' AS DOUBLE)), (NULL) AS t(v)"
    ).collect()[0]
    assert row["passes"] is True  # Spark orders NaN above every number ...
    assert row["top"] != row["top"]  # ... so its maximum is NaN ...
    assert row["passing"] == 2  # ... and a NaN row passes `v > stored` on every run
    frame = pl.DataFrame({"v": [1.5, float("nan"), None]})
    ours = frame.filter(typed_comparison(pl.col("v"), pl.Float64(), ">", 1.0, label="t"))
    assert ours["v"].to_list() == [1.5]  # here NaN passes no bound, like NULL (docs/state.md)
