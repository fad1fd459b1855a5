"""``datacoolie-dagster adopt``: record the tables that exist as they are, so the catalog shows them.

    datacoolie-dagster adopt [--metadata metadata.json] [--instance DAGSTER_HOME]

For every Delta destination of the metadata whose current version the instance has not recorded
(built by DataCoolie on Spark, or by ``datacoolie run`` before an instance was set up), one runless
materialization of the table as it stands: its Delta version, rows and column schema, and for a
partitioned table one per partition holding rows, with that partition's rows. Nothing runs and
no data is written; adopting again records nothing new. ``./make.sh ui`` runs it before the UI
starts. Asset keys are those of the default translator (as for ``datacoolie run``'s recording).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import dagster as dg

from datacoolie_core import DataCoolieError, FileProvider
from datacoolie_dagster.commands.cli_options import instance_home
from datacoolie_dagster.example import METADATA_PATH as EXAMPLE_METADATA
from datacoolie_dagster.location.adoption import adopt_tables
from datacoolie_dagster.location.assets import build_table_assets
from datacoolie_dagster.location.translator import DataCoolieTranslator


def add_adopt_parser(commands: Any) -> None:
    """The ``adopt`` sub-command on the ``datacoolie-dagster`` parser."""
    adopt = commands.add_parser("adopt", help="record existing tables in the instance as they are (no run)")
    adopt.add_argument(
        "--metadata",
        default=os.environ.get("DATACOOLIE_METADATA", str(EXAMPLE_METADATA)),
        help="the metadata file (default: $DATACOOLIE_METADATA, else the bundled example)",
    )
    adopt.add_argument("--instance", help="DAGSTER_HOME (default: $DAGSTER_HOME)")
    adopt.set_defaults(handler=run_adopt)


def run_adopt(args: argparse.Namespace) -> int:
    home = instance_home(args, "adopt")
    if not home:
        return 2
    if not Path(home).is_dir():
        print(f"datacoolie-dagster adopt: Dagster home '{home}' is not a folder; create it first", file=sys.stderr)
        return 2
    try:
        provider = FileProvider(args.metadata)
        try:
            assets, _ = build_table_assets(provider.get_dataflows(), DataCoolieTranslator())
        finally:
            provider.close()
    except DataCoolieError as e:
        print(f"datacoolie-dagster adopt: {e}", file=sys.stderr)
        return 2
    with dg.DagsterInstance.from_config(os.fspath(home)) as instance:
        adopted = adopt_tables(instance, assets)
    for adoption in adopted:
        print(adoption.line())
    recorded = sum(a.recorded for a in adopted)
    tables = sum(a.recorded > 0 for a in adopted)
    print(f"adopted {tables} table(s) ({recorded} materialization(s)) into the instance at {home}")
    return 0
