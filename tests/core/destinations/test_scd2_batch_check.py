"""An scd2 batch is refused, before any write, when the scd2 column adder has not run or left a null
``__valid_from``; the Delta and the Iceberg writer share the check and name their table."""

from __future__ import annotations

from datetime import datetime

import polars as pl
import pytest

from datacoolie_core import columns as fc
from datacoolie_core.destinations.scd2_history import check_scd2_batch
from datacoolie_core.errors import DestinationError

T = datetime(2024, 1, 1)


def batch(valid_from: list[datetime | None], *, drop: tuple[str, ...] = ()) -> pl.DataFrame:
    frame = pl.DataFrame(
        {"id": list(range(len(valid_from))), fc.VALID_FROM: valid_from, fc.VALID_TO: [None] * len(valid_from),
         fc.IS_CURRENT: [True] * len(valid_from)},
        schema_overrides={fc.VALID_FROM: pl.Datetime("us"), fc.VALID_TO: pl.Datetime("us")},
    )  # fmt: skip
    return frame.drop(list(drop))


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (batch([T], drop=(fc.VALID_TO, fc.IS_CURRENT)), r"scd2 write to lake/dim: the batch lacks __valid_to, __is_current; the scd2 column adder"),
        (batch([T, None, None]), r"scd2 write to lake/dim: 2 row\(s\) have a null __valid_from; make configure.scd2_effective_column non-null"),
    ],
    ids=["adder-not-run", "null-valid-from"],
)  # fmt: skip
def test_a_batch_the_scd2_adder_did_not_complete_is_refused(frame: pl.DataFrame, message: str) -> None:
    with pytest.raises(DestinationError, match=message):
        check_scd2_batch(frame, "lake/dim")
