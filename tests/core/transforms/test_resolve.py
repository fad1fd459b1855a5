from __future__ import annotations

import pytest

from datacoolie_core.errors import TransformError
from datacoolie_core.transforms.resolve import find_column


@pytest.mark.parametrize(
    ("names", "wanted", "found"),
    [
        (["customer_id", "name"], "Customer_ID", "customer_id"),
        (["ID", "id"], "id", "id"),
        (["ID", "id"], "ID", "ID"),
        (["a"], "b", None),
    ],
    ids=["case-insensitive", "exact-wins-lower", "exact-wins-upper", "missing"],
)
def test_find_column(names: list[str], wanted: str, found: str | None) -> None:
    assert find_column(names, wanted) == found


def test_ambiguous_case_insensitive_match_is_an_error() -> None:
    with pytest.raises(TransformError, match=r"column 'Id' matches \['ID', 'id'\] ignoring case"):
        find_column(["ID", "id"], "Id")
