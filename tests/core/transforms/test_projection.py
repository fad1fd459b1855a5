from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.errors import TransformError
from datacoolie_core.transforms import ColumnProjector

from .conftest import MakeCtx

FRAME = pl.DataFrame(
    {
        "Id": [1],
        "Name": ["ann"],
        "email": ["a@x"],
        "region": ["eu"],
        "__file_name": ["f.csv"],
        "__updated_at": ["t"],
    }
)
UPSERT = {"load_type": "merge_upsert", "merge_keys": ["id"], "partition_columns": ["Region"]}


@pytest.mark.parametrize(
    ("transform", "columns"),
    [
        ({"select_columns": ["region", "ID", "name"]}, ["region", "Id", "Name", "__file_name", "__updated_at"]),
        ({"drop_columns": ["EMAIL"]}, ["Id", "Name", "region", "__file_name", "__updated_at"]),
        (
            {"select_columns": ["id", "region", "name"], "rename_columns": {"NAME": "full_name"}},
            ["Id", "region", "full_name", "__file_name", "__updated_at"],
        ),
        (
            {"rename_columns": {"name": "email_2", "email": "name_2"}},
            ["Id", "email_2", "name_2", "region", "__file_name", "__updated_at"],
        ),
    ],
    ids=["select-keeps-framework-columns", "drop", "select-then-rename", "two-renames-at-once"],
)
def test_projection(make_ctx: MakeCtx, transform: dict[str, Any], columns: list[str]) -> None:
    out, label = ColumnProjector().apply(FRAME.lazy(), make_ctx(transform=transform, destination=UPSERT))

    assert label == "ColumnProjector"
    assert out.collect().columns == columns
    assert out.collect().row(0) == tuple(FRAME.row(0, named=True)[c] for c in _originals(columns, transform))


def _originals(columns: list[str], transform: dict[str, Any]) -> list[str]:
    back = {new: old for old, new in transform.get("rename_columns", {}).items()}
    by_lower = {c.lower(): c for c in FRAME.columns}
    return [by_lower[back.get(c, c).lower()] for c in columns]


@pytest.mark.parametrize(
    ("transform", "message"),
    [
        ({"select_columns": ["name", "region"]}, r"transform.select_columns omits \['id'\], which is a merge key"),
        (
            {"select_columns": ["id", "name"]},
            r"transform.select_columns omits \['Region'\], which is a partition column",
        ),
        ({"drop_columns": ["ID"]}, r"transform.drop_columns: 'ID' is a merge key and cannot be dropped"),
        ({"drop_columns": ["region"]}, r"'region' is a partition column and cannot be dropped"),
        ({"drop_columns": ["__file_name"]}, r"'__file_name' is a framework column and cannot be dropped"),
        ({"rename_columns": {"id": "key"}}, r"transform.rename_columns: 'id' is a merge key and cannot be renamed"),
        ({"rename_columns": {"name": "__Is_Current"}}, r"renames 'name' to the framework name '__Is_Current'"),
        ({"rename_columns": {"name": "EMAIL"}}, r"renames 'name' to 'EMAIL', but column 'email' already exists"),
        (
            {"select_columns": ["id", "region", "nmae"]},
            r"transform.select_columns names column 'nmae'.*did you mean 'Name'",
        ),
        ({"rename_columns": {"nmae": "x"}}, r"transform.rename_columns names column 'nmae'"),
    ],
    ids=[
        "select-omits-merge-key",
        "select-omits-partition",
        "drop-merge-key",
        "drop-partition",
        "drop-framework",
        "rename-merge-key",
        "rename-to-reserved",
        "rename-onto-existing",
        "select-missing",
        "rename-missing",
    ],
)
def test_refusals(make_ctx: MakeCtx, transform: dict[str, Any], message: str) -> None:
    with pytest.raises(TransformError, match=message):
        ColumnProjector().apply(FRAME.lazy(), make_ctx(transform=transform, destination=UPSERT))


def test_missing_columns_skipped_with_ignore(make_ctx: MakeCtx) -> None:
    transform = {
        "drop_columns": ["email", "gone"],
        "rename_columns": {"lost": "found", "name": "full_name"},
        "configure": {"missing_column_policy": "ignore"},
    }

    out, _ = ColumnProjector().apply(FRAME.lazy(), make_ctx(transform=transform))

    assert_frame_equal(out.collect(), FRAME.drop("email").rename({"Name": "full_name"}))


def test_no_projection_is_a_no_op(make_ctx: MakeCtx) -> None:
    out, label = ColumnProjector().apply(FRAME.lazy(), make_ctx())

    assert label is None
    assert_frame_equal(out.collect(), FRAME)
