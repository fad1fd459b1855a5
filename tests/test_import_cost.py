"""What a fresh process loads for the light entry points: no speed asserted, only ``sys.modules``.

``import datacoolie_core`` and ``datacoolie --help`` start every command, Dagster step subprocess and
code server; they must not pay for Dagster, Polars, sqlglot (and its optimizer), deltalake, pyarrow or
the pydantic models. The heavy pieces load on first use (``datacoolie_core/lazy.py``).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import datacoolie_core
from datacoolie_core.lazy import LazyRegistry

HEAVY = ("dagster", "polars", "sqlglot", "sqlglot.optimizer", "deltalake", "pyarrow", "pandas", "pydantic", "yaml")
"""Modules none of the light entry points may load."""

CORE = Path(datacoolie_core.__file__).parent
PACKAGES = sorted(
    ".".join(("datacoolie_core", *init.parent.relative_to(CORE).parts)) for init in CORE.rglob("__init__.py")
)


def loaded_after(code: str, *, cwd: Path | None = None) -> list[str]:
    """The :data:`HEAVY` modules in ``sys.modules`` after a fresh interpreter runs ``code`` (no ``DAGSTER_HOME``)."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}  # else the run observer loads Dagster
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd, env=env, check=True)
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def console_entry(*argv: str, exit_code: int) -> str:
    """Code running the ``datacoolie`` console script as installed (its entry point) and checking its exit."""
    return (
        "from importlib.metadata import entry_points\n"
        "main = entry_points(group='console_scripts')['datacoolie'].load()\n"
        "try:\n"
        f"    code = main({list(argv)!r})\n"
        "except SystemExit as e:\n"
        "    code = e.code\n"
        f"assert code == {exit_code}, code\n"
    )


def write_metadata(folder: Path, *dataflows: dict[str, Any]) -> None:
    """``folder/metadata.json`` with ``dataflows`` over two connections.

    Connections: ``landing`` (parquet files under ``./landing``) and ``lake`` (Delta tables under ``./lake``).
    """
    connections = [
        {"name": "landing", "format": "parquet", "configure": {"base_path": "./landing"}},
        {"name": "lake", "format": "delta", "configure": {"base_path": "./lake"}},
    ]
    (folder / "metadata.json").write_text(json.dumps({"connections": connections, "dataflows": list(dataflows)}))


def dataflow(
    source: dict[str, Any], destination: dict[str, Any], name: str = "orders", **fields: Any
) -> dict[str, Any]:
    return {"name": name, "source": source, "destination": destination, **fields}


def test_import_datacoolie_core_loads_nothing_heavy() -> None:
    assert loaded_after("import datacoolie_core") == []


@pytest.mark.parametrize(
    ("argv", "exit_code"),
    [(["--help"], 0), (["run", "--help"], 0), (["replay", "--help"], 0), (["maintenance", "--help"], 0),
     (["state", "--help"], 0), (["validate", "--help"], 0), (["bogus"], 2), (["run"], 2)],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)  # fmt: skip
def test_datacoolie_help_and_usage_errors_load_nothing_heavy(argv: list[str], exit_code: int) -> None:
    assert loaded_after(console_entry(*argv, exit_code=exit_code)) == []


def test_the_models_load_pydantic_only() -> None:
    assert loaded_after("from datacoolie_core import DataFlow, DataCoolieRunConfig") == ["pydantic"]


def test_validate_without_sql_loads_no_engine(tmp_path: Path) -> None:
    # a metadata file without SQL expressions or queries: validating it needs no Polars or sqlglot
    write_metadata(
        tmp_path,
        dataflow(
            {"connection_name": "landing", "table": "orders"},
            {"connection_name": "lake", "table": "orders", "load_type": "append"},
        ),
    )
    code = console_entry("validate", "metadata.json", exit_code=0)
    assert loaded_after(code, cwd=tmp_path) == ["pydantic"]  # PyYAML only for a YAML file


def test_a_yaml_metadata_file_loads_pyyaml(tmp_path: Path) -> None:
    (tmp_path / "metadata.yaml").write_text("connections: []\ndataflows: []\n")
    code = "from datacoolie_core.metadata.loader import read_metadata_file\nread_metadata_file('metadata.yaml')"
    assert loaded_after(code, cwd=tmp_path) == ["yaml"]


def test_an_append_run_loads_no_sql_parser_no_yaml_no_dagster_no_pyarrow(tmp_path: Path) -> None:
    # parquet -> a new Delta table: sqlglot only for SQL the metadata holds; the run observer plug-in
    # stays light when no Dagster instance is configured; delta-rs takes the Polars frame as an Arrow
    # C stream, so pyarrow (~50 ms) is never loaded
    import polars as pl

    (tmp_path / "landing" / "sales" / "orders").mkdir(parents=True)
    pl.DataFrame({"id": [1, 2]}).write_parquet(tmp_path / "landing" / "sales" / "orders" / "part-0.parquet")
    write_metadata(
        tmp_path,
        dataflow(
            {"connection_name": "landing", "schema_name": "sales", "table": "orders"},
            {"connection_name": "lake", "table": "orders", "load_type": "append"},
        ),
    )
    code = console_entry("run", "--metadata", "metadata.json", "--state-path", "state", exit_code=0)
    loaded = loaded_after(code, cwd=tmp_path)
    assert {"polars", "deltalake"} <= set(loaded)  # the run did run
    assert [m for m in loaded if m in ("dagster", "sqlglot", "sqlglot.optimizer", "yaml", "pyarrow")] == []
    assert sorted(pl.read_delta(str(tmp_path / "lake" / "orders"))["id"].to_list()) == [1, 2]  # no row order


@pytest.mark.parametrize("load_type", ["merge_upsert", "merge_overwrite"])
def test_a_merge_run_loads_no_sql_parser(tmp_path: Path, load_type: str) -> None:
    # MERGE predicates are printed by destinations/predicates.py: sqlglot costs a process 80-110 ms
    # (scd2 needs it: its scd2_effective_column is a SQL expression)
    import polars as pl

    (tmp_path / "landing" / "orders").mkdir(parents=True)
    pl.DataFrame({"id": [1, 2], "v": ["a", "b"]}).write_parquet(tmp_path / "landing" / "orders" / "part-0.parquet")
    write_metadata(
        tmp_path,
        dataflow(
            {"connection_name": "landing", "table": "orders"},
            {"connection_name": "lake", "table": "orders", "load_type": load_type, "merge_keys": ["id"]},
        ),
    )
    run = console_entry("run", "--metadata", "metadata.json", "--state-path", "state", exit_code=0)
    assert "sqlglot" not in loaded_after(run, cwd=tmp_path)  # creates the table
    pl.DataFrame({"id": [2, 3], "v": ["B", "c"]}).write_parquet(tmp_path / "landing" / "orders" / "part-0.parquet")
    assert "sqlglot" not in loaded_after(run, cwd=tmp_path)  # merges into it
    table = pl.read_delta(str(tmp_path / "lake" / "orders"))
    assert sorted(table.select("id", "v").iter_rows()) == [(1, "a"), (2, "B"), (3, "c")]


def test_reading_a_delta_table_past_a_watermark_loads_no_sql_parser(tmp_path: Path) -> None:
    # the watermark window is a Polars expression; sqlglot is for query-mode sources and Delta predicates
    import polars as pl

    pl.DataFrame({"id": [1, 2, 3], "ts": [1, 2, 3]}).write_delta(str(tmp_path / "lake" / "orders"))
    write_metadata(
        tmp_path,
        dataflow(
            {"connection_name": "lake", "table": "orders", "watermark_columns": ["ts"]},
            {"connection_name": "lake", "table": "orders_copy", "load_type": "append"},
        ),
    )
    run = console_entry("run", "--metadata", "metadata.json", "--state-path", "state", exit_code=0)
    assert "sqlglot" not in loaded_after(run, cwd=tmp_path)  # the first run: no watermark yet
    assert "sqlglot" not in loaded_after(run, cwd=tmp_path)  # the second: a window past the stored one
    assert sorted(pl.read_delta(str(tmp_path / "lake" / "orders_copy"))["id"].to_list()) == [1, 2, 3]


def test_the_csv_tokenizer_loads_for_csv_files_only(tmp_path: Path) -> None:
    # a parquet or JSON-lines read has no use for the CSV tokenizer's modules (~5 ms a process)
    import polars as pl

    pl.DataFrame({"id": [1, 2]}).write_parquet(tmp_path / "a.parquet")
    (tmp_path / "a.csv").write_text("id\n1\n")
    probe = (
        "import sys\n"
        "from datacoolie_core.sources.file import scan_file\n"
        "def tokenizer():\n"
        "    return sorted(m for m in ('datacoolie_core.sources.csv_text', 'datacoolie_core.sources.csv_native')"
        " if m in sys.modules)\n"
        f"rows = scan_file({str(tmp_path / 'a.parquet')!r}, 'parquet', {{}}, hive=False, label='t').collect().height\n"
        "print(rows, tokenizer())\n"
        f"rows = scan_file({str(tmp_path / 'a.csv')!r}, 'csv', {{'header': 'true'}}, hive=False, label='t').collect().height\n"
        "print(rows, tokenizer())\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    parquet, csv = done.stdout.strip().splitlines()
    assert parquet == "2 []"
    assert csv == "1 ['datacoolie_core.sources.csv_native', 'datacoolie_core.sources.csv_text']"


def test_datacoolie_dagster_and_its_metadata_check_load_no_dagster() -> None:
    # core's validator loads the configure.dagster check (an entry point) for every metadata file
    assert loaded_after("import datacoolie_dagster") == []
    assert loaded_after("import datacoolie_dagster.location.dataflow_settings") == ["pydantic"]


def test_the_table_analysis_of_a_code_location_loads_sqlglot_only_for_a_query() -> None:
    assert loaded_after("import datacoolie_dagster.location.tables") == ["pydantic"]
    code = "from datacoolie_dagster.location.tables import query_tables\nassert query_tables('SELECT a FROM s.t')"
    assert "sqlglot" in loaded_after(code)


def test_unknown_reader_and_writer_list_formats_without_loading_them() -> None:
    code = (
        "from datacoolie_core.sources import get_reader\n"
        "from datacoolie_core.destinations import get_writer\n"
        "for get in (get_reader, get_writer):\n"
        "    try:\n"
        "        get('nope')\n"
        "    except Exception as e:\n"
        "        assert 'parquet' in str(e), e\n"
    )
    assert loaded_after(code) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_of_a_package_resolves(package: str) -> None:
    module = importlib.import_module(package)
    missing = [name for name in getattr(module, "__all__", []) if not hasattr(module, name)]
    assert missing == []
    assert set(getattr(module, "__all__", [])) <= set(dir(module))


def test_an_unknown_package_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"module 'datacoolie_core\.models' has no attribute 'DataFlo'"):
        importlib.import_module("datacoolie_core.models").DataFlo  # noqa: B018


def test_registry_builds_each_entry_once_and_shares_equal_entries() -> None:
    registry: LazyRegistry[object] = LazyRegistry(
        {"a": "collections:OrderedDict", "b": "collections:OrderedDict", "c": ("fractions:Fraction", "3/4")}
    )
    assert list(registry) == ["a", "b", "c"]
    assert len(registry) == 3
    assert "a" in registry
    assert registry["a"] is registry["b"] is registry["a"]
    assert str(registry["c"]) == "3/4"
    with pytest.raises(KeyError):
        registry["d"]


def test_a_code_location_of_copies_loads_no_engine(tmp_path: Path) -> None:
    # a code server that serves the UI never reads or writes a table: Polars, deltalake, pyarrow and
    # sqlglot load with the first sensor tick, run or check (~0.3 CPU s of every code-server start)
    write_metadata(
        tmp_path,
        dataflow(
            {"connection_name": "landing", "table": "orders", "watermark_columns": ["ts"]},
            {"connection_name": "lake", "table": "orders", "load_type": "append"},
            stage="bronze",
        ),
        dataflow(
            {"connection_name": "lake", "table": "orders"},
            {"connection_name": "lake", "table": "orders_merged", "load_type": "merge_upsert", "merge_keys": ["id"],
             "partition_columns": [{"column": "day"}]},
            name="orders_merged",
            stage="silver",
            configure={"dagster": {"partitions": {"start": "2026-01-01", "chunk_interval": {"days": 1}}}},
        ),
    )  # fmt: skip
    code = (
        "import dagster\n"
        "from datacoolie_dagster import build_definitions\n"
        "defs = build_definitions('metadata.json', state_base_path='state')\n"
        "assert len(list(defs.get_repository_def().asset_graph.get_all_asset_keys())) == 3\n"
    )
    loaded = loaded_after(code, cwd=tmp_path)
    assert [
        m for m in loaded if m in ("polars", "sqlglot", "sqlglot.optimizer", "deltalake", "pyarrow", "pandas")
    ] == []


def test_the_file_formats_known_without_polars_are_the_file_readers() -> None:
    from datacoolie_core.sources import FILE_FORMATS
    from datacoolie_core.sources.file import EXTENSIONS

    assert set(FILE_FORMATS) == set(EXTENSIONS)
