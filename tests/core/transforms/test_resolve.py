from __future__ import annotations

import pytest

from datacoolie_core.destinations.base import ReplaceWindow
from datacoolie_core.errors import TransformError
from datacoolie_core.models.connection import Connection
from datacoolie_core.models.dataflow import Destination
from datacoolie_core.transforms.resolve import final_destination, final_names, final_window, find_column, same_column

RAW = ["Order ID", "Unit Price (€)", "customerName", "HTTPStatus"]
SANITIZED = ["order_id", "unit_price", "customername", "httpstatus"]


@pytest.mark.parametrize(
    ("names", "wanted", "mode", "found"),
    [
        (["customer_id", "name"], "Customer_ID", "lower", "customer_id"),
        (["ID", "id"], "id", "lower", "id"),
        (["ID", "id"], "ID", "lower", "ID"),
        (["a"], "b", "lower", None),
        (RAW, "order_id", "lower", "Order ID"),
        (RAW, "unit_price", "lower", "Unit Price (€)"),
        (RAW, "ORDER-ID", "lower", "Order ID"),
        (SANITIZED, "Order ID", "lower", "order_id"),
        (SANITIZED, "Unit Price (€)", "lower", "unit_price"),
        (SANITIZED, "customerName", "lower", "customername"),
        (RAW, "customer_name", "lower", None),
        (RAW, "customer_name", "snake", "customerName"),
        (RAW, "http_status", "snake", "HTTPStatus"),
        (["customer_name"], "customerName", "snake", "customer_name"),
        (["customer_name"], "customerName", "lower", None),
        (["order_id", "Order ID"], "ORDER ID", "lower", "Order ID"),
        (["__file_name"], "__FILE_NAME", "lower", "__file_name"),
    ],
    ids=[
        "case-insensitive",
        "exact-wins-lower",
        "exact-wins-upper",
        "missing",
        "sanitized-name-finds-raw-column",
        "sanitized-name-finds-symbol-column",
        "other-raw-spelling",
        "raw-name-finds-sanitized-column",
        "raw-symbol-name-finds-sanitized-column",
        "camel-name-lower-mode",
        "snake-spelling-is-not-lower-mode",
        "snake-spelling-in-snake-mode",
        "acronym-in-snake-mode",
        "camel-name-snake-mode",
        "camel-name-lower-mode-misses-snake-column",
        "ignoring-case-beats-sanitized",
        "framework-column",
    ],
)
def test_find_column(names: list[str], wanted: str, mode: str, found: str | None) -> None:
    assert find_column(names, wanted, mode) == found  # type: ignore[arg-type]


def test_ambiguous_case_insensitive_match_is_an_error() -> None:
    with pytest.raises(TransformError, match=r"column 'Id' matches \['ID', 'id'\] ignoring case"):
        find_column(["ID", "id"], "Id")


def test_ambiguous_sanitized_match_is_an_error() -> None:
    with pytest.raises(TransformError, match=r"column 'order_id' matches \['Order ID', 'order-id'\] after sanitizing"):
        find_column(["Order ID", "order-id"], "order_id")


@pytest.mark.parametrize(
    ("a", "b", "mode", "same"),
    [("Order ID", "order_id", "lower", True), ("customerName", "customer_name", "lower", False),
     ("customerName", "customer_name", "snake", True), ("__created_at", "created_at", "lower", False)],
    ids=["raw-and-sanitized", "camel-lower", "camel-snake", "framework-vs-business"],
)  # fmt: skip
def test_same_column(a: str, b: str, mode: str, same: bool) -> None:
    assert same_column(a, b, mode) is same  # type: ignore[arg-type]


def test_final_names_keeps_unknown_names_and_drops_second_spellings() -> None:
    assert final_names(SANITIZED, ["Order ID", "order_id", "missing"]) == ["order_id", "missing"]


def test_final_destination_spells_merge_keys_and_partitions_as_the_data() -> None:
    lake = Connection.model_validate({"name": "lake", "format": "delta", "configure": {"base_path": "./lake"}})
    destination = Destination.model_validate(
        {
            "connection_name": "lake",
            "table": "orders",
            "load_type": "merge_upsert",
            "merge_keys": ["Order ID"],
            "partition_columns": ["Region"],
        },
        context={"connections": {"lake": lake}},
    )

    final = final_destination(destination, ["order_id", "region", "amount"])

    assert final.merge_keys == ["order_id"]
    assert [p.column for p in final.partition_columns] == ["region"]
    assert final.merge_keys_extended == ["order_id", "region"]
    assert final.connection.name == "lake"  # still bound to its connection
    assert destination.merge_keys == ["Order ID"]  # the metadata itself is left alone


def test_final_window_keys_the_bounds_by_the_written_column() -> None:
    window = ReplaceWindow({"Order Date": ("2025-01-01", "2025-01-03")})
    assert final_window(window, ["order_id", "order_date"]) == ReplaceWindow(
        {"order_date": ("2025-01-01", "2025-01-03")}
    )
    assert final_window(None, ["order_date"]) is None
