"""How each driver types a JSON-lines file: over every line (Spark's default), or over its first lines.

    .venv/bin/python benchmarks/jsonl_typing.py [--workdir /tmp/datacoolie-jsonl-typing]

Two 300-line files, run through ours and through DataCoolie 0.2.0 (its own venv, driven through its
documented interface as ``jobs.py`` drives it) with the same metadata file:

- ``late_field``: a field first seen on line 260. Typed over every line, the table has the column;
  typed over the first lines, it has not (the value is lost without an error).
- ``late_float``: line 250 holds ``2.5`` in a column that was an integer until then. Typed over
  every line, the column is a double; typed over the first lines, the read fails.

This is why ``jsonl_append`` is compared with plain (which types every line, as ours does) rather
than read as a like-for-like figure against DataCoolie (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from datacoolie_peer import DEFAULT_VENV, PeerUnavailable, ensure_peer

CASES = {"late_field": (260, "late", "x"), "late_float": (250, "v", 2.5)}
"""Each file: the line that differs, the field it sets and the value."""

RUN = """
import json, sys
from pathlib import Path
import polars as pl
impl, root, stage = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
meta, state = root / "meta", root / "state" / impl
if impl == "ours":
    from datacoolie_core.orchestration.driver import DataCoolieDriver
    driver = DataCoolieDriver(metadata_base_path=meta, state_base_path=state)
else:
    from datacoolie.engines.polars_engine import PolarsEngine
    from datacoolie.orchestration.driver import DataCoolieDriver
    from datacoolie.platforms.local_platform import LocalPlatform
    driver = DataCoolieDriver(engine=PolarsEngine(platform=LocalPlatform()), metadata_base_path=str(meta),
                              state_base_path=str(state))
with driver:
    result = driver.run(stage=stage)
table = root / "work" / "typing" / stage
outcome = {"succeeded": result.succeeded == 1}
if outcome["succeeded"]:
    schema = pl.scan_delta(str(table)).collect_schema()
    outcome["columns"] = {n: str(t) for n, t in schema.items() if not n.startswith("__")}
print(json.dumps(outcome))
"""


def write_case(root: Path, name: str, line: int, field: str, value: object) -> None:
    folder = root / "landing" / "typing" / name
    folder.mkdir(parents=True)
    records = [{"id": i, "v": i} | ({field: value} if i == line else {}) for i in range(1, 301)]
    (folder / "part-00.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def metadata(root: Path) -> dict[str, object]:
    def dataflow(name: str) -> dict[str, object]:
        source = {"connection_name": "landing", "schema_name": "typing", "table": name}
        destination = {"connection_name": "lake", "schema_name": "typing", "table": name, "load_type": "append"}
        return {"name": name, "stage": name, "source": source, "destination": destination}

    return {
        "connections": [
            {"name": "landing", "format": "jsonl", "configure": {"base_path": str(root / "landing")}},
            {"name": "lake", "format": "delta", "configure": {"base_path": str(root / "work")}},
        ],
        "dataflows": [dataflow(name) for name in CASES],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/datacoolie-jsonl-typing"))
    parser.add_argument("--datacoolie-venv", type=Path, default=DEFAULT_VENV)
    args = parser.parse_args()
    root = args.workdir.resolve()
    shutil.rmtree(root, ignore_errors=True)
    for name, case in CASES.items():
        write_case(root, name, *case)
    (root / "meta").mkdir()
    (root / "meta" / "metadata.json").write_text(json.dumps(metadata(root)))
    pythons = {"ours": Path(sys.executable)}
    try:
        pythons["datacoolie"] = ensure_peer(args.datacoolie_venv)
    except PeerUnavailable as error:
        print(f"DataCoolie 0.2.0 skipped: {error}")
    for name in CASES:
        for impl, python in pythons.items():
            shutil.rmtree(root / "work", ignore_errors=True)
            done = subprocess.run(
                [str(python), "-c", RUN, impl, str(root), name], capture_output=True, text=True, check=False
            )
            lines = done.stdout.strip().splitlines()
            print(f"{name:11} {impl:11} {lines[-1] if lines else 'no result: ' + done.stderr.strip()[-300:]}")


if __name__ == "__main__":
    main()
