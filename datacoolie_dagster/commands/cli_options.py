"""Options shared by the ``datacoolie-dagster`` commands: which code location, which instance."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING

from datacoolie_dagster import dagster_internal

if TYPE_CHECKING:
    from datacoolie_dagster.dagster_internal import WorkspaceLoadTarget


def add_location_options(parser: argparse.ArgumentParser) -> None:
    """``-w/-m/-f`` (the code location), ``-d`` (its working directory) and ``--instance``."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("-w", "--workspace", help="workspace.yaml (default: ./workspace.yaml)")
    where.add_argument("-m", "--module-name", help="Python module defining the Definitions")
    where.add_argument("-f", "--python-file", help="Python file defining the Definitions")
    parser.add_argument("-d", "--working-directory", help="for -m/-f: the directory imports resolve from")
    parser.add_argument("--instance", help="DAGSTER_HOME (default: $DAGSTER_HOME)")


def load_target(args: argparse.Namespace) -> WorkspaceLoadTarget:
    """The code location the options name."""
    directory = os.path.abspath(args.working_directory or os.getcwd())
    python_file = os.path.abspath(args.python_file) if args.python_file else None
    workspace = os.path.abspath(args.workspace or "workspace.yaml")
    return dagster_internal.load_target(args.module_name, python_file, workspace, directory)


def instance_home(args: argparse.Namespace, command: str) -> str | None:
    """``--instance`` or ``$DAGSTER_HOME``; prints the fix and returns ``None`` when neither is set."""
    home = args.instance or os.environ.get("DAGSTER_HOME")
    if not home:
        print(f"datacoolie-dagster {command}: no instance; pass --instance DIR or set DAGSTER_HOME", file=sys.stderr)
    return home


def quiet_instance_logs() -> None:
    """Keep alembic's INFO lines out of our output: it logs "Context impl SQLiteImpl." and each
    schema stamp every time a SQLite instance is opened, which says nothing to a user. Its warnings
    and errors (a failed migration) still show."""
    logging.getLogger("alembic").setLevel(logging.WARNING)
