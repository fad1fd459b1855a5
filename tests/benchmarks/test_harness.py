"""The benchmark harness measures what it claims: each child's own peak RSS, outputs compared exactly.

The benchmark scripts live beside each other in ``benchmarks/`` (not a package); the fixture puts
that folder on ``sys.path`` as running a script there would.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest
from deltalake import write_deltalake

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
REPORTS_NOTHING = "import json; print(json.dumps({'seconds': 0.0}))"


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import harness

    return harness


@pytest.fixture
def verify(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import verify

    return verify


def test_peak_rss_is_the_childs_own_not_the_forking_process(harness: ModuleType) -> None:
    # Linux carries a forking process's RSS into its child's ru_maxrss: a benchmark process holding
    # its data would be charged to every job it started directly.
    ballast = b"x" * (400 << 20)
    sample = harness.run_child([sys.executable, "-c", f"x = b'y' * (64 << 20); {REPORTS_NOTHING}"])
    assert len(ballast) == 400 << 20
    assert 64 < sample.peak_rss_mib < 200
    assert sample.cpu > 0
    assert sample.wall >= sample.seconds


def test_a_failing_child_raises_with_its_stderr(harness: ModuleType) -> None:
    with pytest.raises(harness.ChildFailed, match=r"exited 3:\n.*boom"):
        harness.run_child([sys.executable, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)"])


@pytest.mark.parametrize(
    ("round_", "order"),
    [(0, ["a", "b", "c"]), (1, ["b", "c", "a"]), (2, ["c", "a", "b"]), (3, ["a", "b", "c"])],
    ids=["first", "second", "third", "wraps"],
)
def test_rounds_rotate_who_goes_first(harness: ModuleType, round_: int, order: list[str]) -> None:
    assert harness.rotated(["a", "b", "c"], round_) == order


def test_spread_is_median_then_min_max(harness: ModuleType) -> None:
    assert harness.spread([1.5, 1.0, 3.0]) == "1.50 (1.00-3.00)"


def _table(path: Path, frame: pl.DataFrame) -> Path:
    write_deltalake(str(path), frame.to_arrow())
    return path


BARE = pl.DataFrame({"order_id": [1, 2, 3], "amount": [1.0, 2.0, 3.0]})


def test_equal_tables_compare_equal_whatever_their_system_columns(verify: ModuleType, tmp_path: Path) -> None:
    ours = BARE.reverse().with_columns(pl.lit("run-1").alias("__dataflow_run_id"))
    assert verify.compare(_table(tmp_path / "bare", BARE), _table(tmp_path / "ours", ours)) == []


@pytest.mark.parametrize(
    ("other", "problem"),
    [
        (BARE.with_columns(pl.Series("amount", [1.0, 2.5, 3.0])), "amount: 1 values differ"),
        (BARE.with_columns(pl.Series("amount", [1.0, None, 3.0])), "amount: 1 values differ"),
        (BARE.head(2), "2 rows, bare has 3"),
        (BARE.with_columns(pl.Series("order_id", [1, 2, 4])), "key set differs: 1 keys missing, 1 extra"),
        (BARE.drop("amount"), "columns missing: ['amount']"),
    ],
    ids=["value", "null", "rows", "keys", "column"],
)
def test_differences_are_named(verify: ModuleType, tmp_path: Path, other: pl.DataFrame, problem: str) -> None:
    assert problem in verify.compare(_table(tmp_path / "bare", BARE), _table(tmp_path / "other", other))


def test_a_plain_output_without_ours_lineage_columns_fails_and_datacoolies_is_noted(
    verify: ModuleType, tmp_path: Path
) -> None:
    outputs = tmp_path / "outputs" / "merge_upsert"
    _table(outputs / "bare", BARE)
    _table(outputs / "ours", BARE.with_columns(pl.lit("a.parquet").alias("__file_name")))
    for impl in ("plain", "datacoolie"):
        _table(outputs / impl, BARE)
    plain, datacoolie = verify.verify(tmp_path, ["merge_upsert"], ["bare", "ours", "plain", "datacoolie"])[1:]
    assert plain.split() == [
        "merge_upsert",
        "plain",
        "columns",
        "differ",
        "from",
        "ours:",
        "plain",
        "lacks",
        "['__file_name']",
    ]
    assert datacoolie.endswith(
        "ok: same rows, keys and values in the bare table's columns "
        "(columns differ from ours: datacoolie lacks ['__file_name'])"
    )


def test_dlt_venv_pins_only_the_shared_data_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    # dlt's own dependencies conflict with pins it does not share with us; the data path must match.
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import datacoolie_peer

    pins = datacoolie_peer._pins(datacoolie_peer.DLT_REQUIREMENT)
    assert sorted(p.split("==")[0] for p in pins) == ["deltalake", "polars", "polars-runtime-32", "pyarrow"]
    assert datacoolie_peer._pins(datacoolie_peer.REQUIREMENT)[0] == "-c"


def test_run_all_replaces_only_its_own_section_of_the_doc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import run_all

    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nhand-written text\n")
    run_all.write_section(doc, "first run")
    run_all.write_section(doc, "second run")
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\nhand-written text\n")
    assert "second run" in text
    assert "first run" not in text
    assert text.count(run_all.BEGIN) == 1
