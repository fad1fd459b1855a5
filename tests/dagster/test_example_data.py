"""The bundled example's data: realistic batches, and one meaning of "2024-01" for every window.

An order keeps its ``created_at`` across batches, so it lives in one ``order_month`` partition; the
replay window column (``make.sh``'s replay, ``configure.dagster.partitions.chunk_column``) is the
column the partition is derived from, so a replay of 2024-01 rewrites exactly partition 2024-01.
The end-to-end test runs the commands of ``make.sh``'s ``example()`` themselves, in-process, twice.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest
from deltalake import DeltaTable
from polars.testing import assert_frame_equal

from datacoolie_core.cli import main as datacoolie
from datacoolie_dagster.example import METADATA_PATH, generate
from datacoolie_dagster.example.generate import (
    LATE_ORDERS,
    NEW_ORDERS,
    UPDATES,
    batch_month,
    late_month,
    late_orders,
    orders,
)
from datacoolie_dagster.location.example_jobs import build_example_definitions, land_first_batch
from tests.dagster.conftest import REPOSITORY

BATCHES = range(1, 8)
RUN_ID = "__dataflow_run_id"
SCHEMA = REPOSITORY.parent / "shared" / "reference" / "datacoolie-metadata-0.2.0.schema.json"
FIRST_BATCH_SHA256 = "6e6813297934fb8828148388c53e312d5b81cf83478cb6aefd2be455d8ea4f7c"


def landed(batches: range) -> pl.DataFrame:
    """Every order row of ``batches`` in landing order, with the batch that carried it."""
    frames = [orders(b).with_columns(batch=pl.lit(b)) for b in batches]
    frames += [late_orders(b).with_columns(batch=pl.lit(b)) for b in batches if b > 1]
    return pl.concat(frames)


def months(frame: pl.DataFrame, column: str = "created_at") -> set[str]:
    return set(frame[column].str.slice(0, 7))


def test_an_order_keeps_its_created_at_customer_and_quantity() -> None:
    rows = landed(BATCHES)
    per_order = rows.group_by("order_id").agg(pl.len(), pl.col("created_at", "customer_id", "quantity").n_unique())
    assert per_order.filter(pl.col("len") > 1).height == UPDATES * (len(BATCHES) - 1)  # updates exist
    assert per_order.select(pl.max("created_at", "customer_id", "quantity")).row(0) == (1, 1, 1)


@pytest.mark.parametrize("batch", [2, 3, 4, 7], ids=lambda b: f"batch{b}")
def test_a_later_batch_holds_its_month_the_month_before_and_a_late_window(batch: int) -> None:
    month, late = batch_month(batch).strftime("%Y-%m"), late_month(batch).strftime("%Y-%m")
    regular, late_file = orders(batch), late_orders(batch)
    new = regular.head(NEW_ORDERS)
    updates = regular.tail(UPDATES)
    assert regular.height == NEW_ORDERS + UPDATES
    assert months(new) == {month}
    assert months(updates) < {f"{month}"} | months(landed(range(1, batch)))  # orders landed before …
    assert months(updates, "updated_at") == {month}  # … updated in the batch's month
    assert (late_file.height, months(late_file)) == (LATE_ORDERS, {late})
    assert late < "2024-04"  # Q1: the months make.sh replays
    # behind every watermark: older than anything the previous batches carried
    earlier = landed(range(1, batch))
    assert late_file["updated_at"].max() < earlier["updated_at"].max()  # type: ignore[operator]
    # new rows are newer than every row landed before: the incremental read sees them
    assert regular["updated_at"].min() > earlier["updated_at"].max()  # type: ignore[operator]


def test_the_first_batch_is_as_it_always_was(tmp_path: Path) -> None:
    """Batch 1 is the file the example always landed (the CLI and daemon tests count its rows)."""
    first = orders(1)
    assert (first.height, first["order_id"].to_list()) == (600, list(range(1, 601)))
    assert months(first) == {f"2024-0{m}" for m in range(1, 7)}
    (path, _) = generate.land_batch(tmp_path, 1)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == FIRST_BATCH_SHA256


@pytest.mark.skipif(not SCHEMA.exists(), reason="DataCoolie's JSON Schema is not beside the checkout")
def test_the_example_metadata_is_valid_for_datacoolie_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    assert list(validator.iter_errors(json.loads(METADATA_PATH.read_text(encoding="utf-8")))) == []


def test_steps_landing_the_first_batch_side_by_side_land_it_once(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=6) as pool:
        outcomes = list(pool.map(lambda _: land_first_batch(tmp_path), range(6)))
    assert sorted(p.name for written in outcomes for p in written) == ["customers.parquet", "orders_0001.csv"]
    assert sorted(p.name for p in (tmp_path / "landing").rglob("*")) == [
        "crm", "customers", "customers.parquet", "orders", "orders_0001.csv", "sales",
    ]  # fmt: skip
    orders_file = tmp_path / "landing/sales/orders/orders_0001.csv"
    assert hashlib.sha256(orders_file.read_bytes()).hexdigest() == FIRST_BATCH_SHA256


def test_the_replay_windows_and_the_partitions_select_on_the_partition_column() -> None:
    document = json.loads(METADATA_PATH.read_text(encoding="utf-8"))
    (dataflow,) = [d for d in document["dataflows"] if d["name"] == "orders_bronze_to_silver"]
    (partition,) = dataflow["destination"]["partition_columns"]
    dagster = dataflow["configure"]["dagster"]["partitions"]
    replay = _flags(next(c for c in example_commands() if c[1:2] == ["replay"]))
    assert partition == {"column": "order_month", "expression": "DATE_FORMAT(created_at, 'yyyy-MM')"}
    assert dagster["chunk_column"] == replay["--chunk-column"] == "created_at"
    assert dagster["chunk_interval"] == json.loads(replay["--chunk-interval-json"]) == {"months": 1}


@pytest.mark.slow
def test_the_example_twice_keeps_one_row_per_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        run_example(monkeypatch)
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "landed batch 2: data/landing/sales/orders/orders_0002_late.csv" in out
    assert "succeeded orders_bronze_to_silver (read 70, wrote 70)" in out  # the 6 late orders are behind the watermark
    assert "succeeded orders_bronze_to_silver (read 299, wrote 299)" in out  # the Q1 replay loads them
    silver = pl.read_delta("data/silver/sales/orders")
    assert silver.height == silver["order_id"].n_unique() == 600 + NEW_ORDERS + LATE_ORDERS
    # the latest version of every landed order, the late ones included (loaded by the Q1 replay)
    latest = landed(range(1, 3)).sort("updated_at").unique("order_id", keep="last")
    expected = latest.select(
        "order_id", pl.col("status").str.strip_chars(" ").str.to_lowercase(), pl.col("amount").cast(pl.Decimal(12, 2))
    )
    assert_frame_equal(silver.select(expected.columns).sort("order_id"), expected.sort("order_id"))
    assert (silver["order_month"] == silver["created_at"].dt.strftime("%Y-%m")).all()

    # a replay of 2024-01 as make.sh replays (one month): it rewrites exactly partition 2024-01
    replay = next(c for c in example_commands() if c[1:2] == ["replay"])
    one_month = _with_flags(replay, {"--start": "2024-01-01", "--end": "2024-02-01"})
    january = rewritten_by(lambda: _execute(one_month, monkeypatch))
    assert january == set(silver.filter(pl.col("order_month") == "2024-01")["order_id"])
    metrics = DeltaTable("data/silver/sales/orders").history(1)[0]["operationMetrics"]
    assert (metrics["num_target_rows_inserted"], metrics["num_target_rows_updated"]) == (0, len(january))

    # the Dagster partition 2024-01 selects the same rows
    defs = build_example_definitions(state_base_path="data/state", log_base_path="data/logs")
    with dg.instance_for_test() as instance:
        partition_run = rewritten_by(
            lambda: dg.materialize(
                list(defs.assets or []),  # type: ignore[arg-type]
                resources=defs.resources,
                instance=instance,
                selection=["silver/sales/orders"],
                partition_key="2024-01",
            )
        )
    assert partition_run == january


def rewritten_by(action: Callable[[], Any]) -> set[int]:
    """The order ids whose silver row ``action`` rewrote (a new dataflow run id); the table keeps its rows."""
    before = pl.read_delta("data/silver/sales/orders").select("order_id", RUN_ID)
    action()
    after = pl.read_delta("data/silver/sales/orders").select("order_id", RUN_ID)
    assert sorted(after["order_id"]) == sorted(before["order_id"])
    changed = after.join(before, on="order_id", suffix="_before").filter(pl.col(RUN_ID) != pl.col(f"{RUN_ID}_before"))
    return set(changed["order_id"])


def example_commands() -> list[list[str]]:
    """The commands of ``make.sh``'s ``example()`` (after ``install``), its locals expanded."""
    text = (REPOSITORY / "make.sh").read_text(encoding="utf-8")
    match = re.search(r"^example\(\) \{\n(.*?)^\}", text, re.S | re.M)
    assert match is not None, "make.sh has no example() function"
    variables: dict[str, list[str]] = {}
    commands = []
    for line in match[1].replace("\\\n", " ").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or line in ("install", "installed || install"):
            continue
        if line.startswith("local "):
            name, value = line.removeprefix("local ").split("=", 1)
            variables[name] = shlex.split(value.removeprefix("(").removesuffix(")"))
            continue
        commands.append([word for token in shlex.split(line) for word in _expand(token, variables)])
    return commands


def run_example(monkeypatch: pytest.MonkeyPatch) -> None:
    for command in example_commands():
        _execute(command, monkeypatch)


def _expand(token: str, variables: dict[str, list[str]]) -> list[str]:
    if m := re.fullmatch(r"\$\{(\w+)\[@\]\}", token):
        return variables[m[1]]
    if m := re.fullmatch(r"\$(\w+)", token):
        (value,) = variables[m[1]]
        return [str(REPOSITORY / value)]  # the repository's file: the commands run in tmp_path
    return [token]


def _execute(command: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    program, *args = command
    if program == "echo":
        print(*args)
    elif program == "record_in_ui_instance":  # sets DAGSTER_HOME only when ./.dagster exists: not in tmp_path
        assert not Path(".dagster").exists()
    elif program == "$VENV/bin/datacoolie":
        assert datacoolie(args) == 0, command
    elif program == "$VENV/bin/python" and args[:2] == ["-m", "datacoolie_dagster.example.generate"]:
        monkeypatch.setattr(sys, "argv", ["generate", *args[2:]])
        generate.main()
    else:
        pytest.fail(f"make.sh example() runs {command}: teach this test what it does")


def _flags(command: list[str]) -> dict[str, str]:
    return {word: value for word, value in pairwise(command) if word.startswith("--")}


def _with_flags(command: list[str], values: dict[str, str]) -> list[str]:
    return [values.get(previous, word) for previous, word in pairwise(["", *command])]
