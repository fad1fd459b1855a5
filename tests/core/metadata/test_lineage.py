"""Lineage ``validate`` refuses (and so does every run): cycles, self-reads, an overwrite sharing its table."""

from __future__ import annotations

from pathlib import Path

import pytest

from datacoolie_core.cli import main
from datacoolie_core.metadata import validate_document
from datacoolie_core.metadata.lineage import _cyclic_components
from tests.core.orchestration.driver_support import Lake


def lake_document(root: Path) -> Lake:
    lake = Lake(root)
    lake.connections.append({"name": "x", "format": "delta", "configure": {"base_path": str(root / "x")}})
    return lake


def errors(lake: Lake) -> list[str]:
    document = validate_document({"connections": lake.connections, "dataflows": lake.dataflows})
    return [f"{e.path}: {e.message}" for e in document.errors]


def test_a_lineage_cycle_is_refused_naming_both_dataflows(tmp_path: Path) -> None:
    lake = lake_document(tmp_path)
    lake.add(
        "a_to_b", source={"connection_name": "x", "table": "a"}, destination={"connection_name": "x", "table": "b"}
    )
    lake.add(
        "b_to_a", source={"connection_name": "x", "table": "b"}, destination={"connection_name": "x", "table": "a"}
    )
    found = errors(lake)
    assert len(found) == 2
    assert all("dataflows 'a_to_b' (writes" in e and "'b_to_a' (writes" in e and "in a cycle" in e for e in found)
    assert found[0].startswith("dataflows[0].source")
    assert found[1].startswith("dataflows[1].source")


def test_a_cycle_through_a_lakehouse_query_is_refused(tmp_path: Path) -> None:
    lake = lake_document(tmp_path)
    lake.add("a_to_b", source={"connection_name": "x", "query": "SELECT * FROM a"},
             destination={"connection_name": "x", "table": "b"})  # fmt: skip
    lake.add(
        "b_to_a", source={"connection_name": "x", "table": "b"}, destination={"connection_name": "x", "table": "a"}
    )
    assert len(errors(lake)) == 2


def test_a_dataflow_reading_the_table_it_writes_is_refused(tmp_path: Path) -> None:
    lake = lake_document(tmp_path)
    lake.add("again", source={"connection_name": "x", "table": "t", "watermark_columns": ["__created_at"]},
             destination={"connection_name": "x", "table": "t", "load_type": "append"})  # fmt: skip
    (found,) = errors(lake)
    assert found.startswith("dataflows[0].source: dataflow 'again' reads the table it writes")


def test_an_overwrite_sharing_its_table_with_an_append_is_refused(tmp_path: Path) -> None:
    lake = lake_document(tmp_path)
    lake.add("full", destination={"table": "t", "load_type": "overwrite"})
    lake.add("more", destination={"table": "t", "load_type": "append"})
    (found,) = errors(lake)
    assert found.startswith("dataflows[0].destination.load_type: dataflows 'full' (overwrite), 'more' (append)")


def test_a_chain_fan_in_and_inactive_dataflows_are_fine(tmp_path: Path) -> None:
    lake = lake_document(tmp_path)
    lake.add(
        "a_to_b", source={"connection_name": "x", "table": "a"}, destination={"connection_name": "x", "table": "b"}
    )
    lake.add(
        "b_to_c", source={"connection_name": "x", "table": "b"}, destination={"connection_name": "x", "table": "c"}
    )
    lake.add("in1", destination={"table": "t", "load_type": "append"})
    lake.add("in2", destination={"table": "t", "load_type": "merge_upsert", "merge_keys": ["order_id"]})
    lake.add("old", destination={"table": "t", "load_type": "overwrite"}, is_active=False)
    assert errors(lake) == []


def test_validate_and_run_refuse_a_cycle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lake = lake_document(tmp_path)
    lake.add(
        "a_to_b", source={"connection_name": "x", "table": "a"}, destination={"connection_name": "x", "table": "b"}
    )
    lake.add(
        "b_to_a", source={"connection_name": "x", "table": "b"}, destination={"connection_name": "x", "table": "a"}
    )
    metadata = lake.write()
    assert main(["validate", str(metadata)]) != 0
    captured = capsys.readouterr()
    assert "in a cycle" in captured.out + captured.err
    assert main(["run", "--metadata", str(metadata), "--stage", "bronze2silver"]) != 0
    assert not (tmp_path / "x" / "a").exists()
    assert not (tmp_path / "x" / "b").exists()


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": set()}, []),
        ({"a": {"b"}, "b": {"a"}}, [{"a", "b"}]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [{"a", "b", "c"}]),
        ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, [{"a", "b"}, {"c", "d"}]),
    ],
    ids=["chain", "pair", "triangle-with-tail", "two-cycles"],
)
def test_cyclic_components(graph: dict[str, set[str]], expected: list[set[str]]) -> None:
    assert sorted(_cyclic_components(graph), key=sorted) == expected
