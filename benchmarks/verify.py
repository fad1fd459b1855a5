"""Correctness of every benchmark output, checked after the timed rounds (untimed).

Each implementation's output table of the last timed round is kept under
``<root>/outputs/<scenario>/<impl>``. Against the bare job's table it must have the same row count,
the same key set and, for every data column the bare table has, the same values row by row (by
key); for merge_upsert that is the final table's content. Lineage and system columns (``__*``) are
left out: they hold each run's own file paths, times and run ids. Plain's table must have the columns
ours has (those seven included): plain is the floor only while it does the same work. Where
DataCoolie's or dlt's table has other columns than ours, the line says so: they did other work.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from dataset import KEY, target


def keep_output(root: Path, scenario: str, impl: str) -> None:
    """Move the table a job just wrote out of the way of the next job (a rename: cheap, untimed)."""
    kept = root / "outputs" / scenario / impl
    shutil.rmtree(kept, ignore_errors=True)
    kept.parent.mkdir(parents=True, exist_ok=True)
    target(root, scenario).rename(kept)


def verify(root: Path, scenarios: Sequence[str], impls: Sequence[str]) -> list[str]:
    """One line per scenario and implementation: ``ok`` with what was compared, or what differs."""
    lines = []
    for scenario in scenarios:
        outputs = root / "outputs" / scenario
        for impl in (i for i in impls if i != "bare"):
            problems = compare(outputs / "bare", outputs / impl)
            differs = column_difference(outputs / "ours", outputs / impl) if "ours" in impls and impl != "ours" else ""
            if impl == "plain" and differs:  # plain measures less work than ours: a failed check
                problems.append(differs)
                differs = ""
            line = "; ".join(problems) or "ok: same rows, keys and values in the bare table's columns"
            lines.append(f"{scenario:17} {impl:11} {line}" + (f" ({differs})" if differs else ""))
    return lines


def column_difference(ours: Path, other: Path) -> str:
    """How ``other``'s columns differ from ours (empty when they are the same): plain must write the
    columns ours writes (the seven lineage and system ones included), or it measures less work than
    ours; for DataCoolie and dlt it says which work they leave out."""
    import polars as pl

    ours_columns, other_columns = (set(pl.scan_delta(str(t)).collect_schema().names()) for t in (ours, other))
    lacks, extra = sorted(ours_columns - other_columns), sorted(other_columns - ours_columns)
    if not (lacks or extra):
        return ""
    return f"columns differ from ours: {other.name} lacks {lacks}" + (f", has {extra} more" if extra else "")


def compare(bare: Path, other: Path) -> list[str]:
    """What differs between two Delta tables on the bare table's columns (empty: equal)."""
    import polars as pl

    expected, actual = pl.read_delta(str(bare)), pl.read_delta(str(other))
    problems = []
    if actual.height != expected.height:
        problems.append(f"{actual.height} rows, bare has {expected.height}")
    extra_keys = actual.join(expected, on=KEY, how="anti").height
    missing_keys = expected.join(actual, on=KEY, how="anti").height
    if extra_keys or missing_keys:
        problems.append(f"key set differs: {missing_keys} keys missing, {extra_keys} extra")
    missing = [c for c in expected.columns if c not in actual.columns]
    if missing:
        problems.append(f"columns missing: {missing}")
    if problems:
        return problems
    shared = [c for c in expected.columns if not c.startswith("__")]  # system columns hold each run's own values
    for column in shared:
        if actual.schema[column] != expected.schema[column]:
            problems.append(f"{column}: dtype {actual.schema[column]}, bare {expected.schema[column]}")
    joined = expected.sort(KEY).select(shared).hstack(actual.sort(KEY).select(shared).rename(lambda c: f"{c}~"))
    for column in shared:
        differing = joined.select(pl.col(column).cast(pl.String).ne_missing(pl.col(f"{column}~").cast(pl.String)).sum())
        if count := differing.item():
            problems.append(f"{column}: {count} values differ")
    return problems
