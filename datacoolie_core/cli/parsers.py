"""The ``datacoolie`` commands' arguments, apart from what the commands do.

Each command names its handler as ``"module:function"``, imported only when that command runs:
``datacoolie --help`` and a usage error load argparse, not Polars, sqlglot, deltalake or the
pydantic models (``tests/test_import_cost.py``).
"""

from __future__ import annotations

import argparse

from datacoolie_core.cli.common import STATE_URL_HELP

HANDLERS = {
    "validate": "datacoolie_core.cli.validate:validate_command",
    "run": "datacoolie_core.cli.run:run_command",
    "replay": "datacoolie_core.cli.run:replay_command",
    "maintenance": "datacoolie_core.cli.run:maintenance_command",
    "state": "datacoolie_core.cli.state:state_command",
}
"""Command -> its handler, ``handler(args) -> exit code``."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="datacoolie",
        description="Metadata-driven ETL on Polars + Delta Lake, compatible with DataCoolie metadata.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_validate(commands)
    _add_run_replay_maintenance(commands)
    _add_state(commands)
    return parser


def _add_validate(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    validate = commands.add_parser(
        "validate",
        help="check a metadata file and list its dataflows",
        description="Check DataCoolie metadata: a JSON, YAML or Excel file, a metadata API or database URL. "
        "Every error is reported with its JSON path (a workbook: sheet, row, column; a database: table, "
        "id, column); exit 2 if there is any.",
    )
    validate.add_argument(
        "path", help="metadata file (.json, .yaml, .yml, .xlsx), API URL or sqlite:///…|postgresql://…?workspace_id=…"
    )
    validate.add_argument("--json", action="store_true", help="print the report as JSON")
    validate.add_argument("--strict", action="store_true", help="treat warnings as errors")


def _add_run_replay_maintenance(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser("run", help="run the dataflows of a stage (or all)", description=_RUN_HELP)
    _common(run)
    run.add_argument("--stage", default=None, help="stage name, comma list; default: every stage")
    run.add_argument("--job-num", type=int, default=1, help="number of shards launched (default 1)")
    run.add_argument("--job-index", type=int, default=0, help="this shard, 0..job-num-1")
    run.add_argument("--dry-run", action="store_true", help="validate only: no data, watermark or secret is touched")

    replay = commands.add_parser("replay", help="re-process a bounded range in chunks", description=_REPLAY_HELP)
    _common(replay)
    replay.add_argument("--stage", required=True, help="stage to replay (comma list allowed)")
    replay.add_argument("--start", required=True, help="inclusive lower bound (integer, date or datetime)")
    replay.add_argument("--end", required=True, help="exclusive upper bound")
    replay.add_argument("--chunk-interval-json", default=None, help="e.g. '{\"months\": 1}' or '{\"step\": 100000}'")
    replay.add_argument("--chunk-column", default=None, help="column to select on (default: first watermark column)")
    replay.add_argument("--save-watermark", action="store_true", help="save the observed watermark after each chunk")
    replay.add_argument("--confirm-save-watermark", action="store_true", help="required with --save-watermark")
    replay.add_argument("--dry-run", action="store_true", help="validate the replay without running it")

    maintenance = commands.add_parser("maintenance", help="OPTIMIZE and VACUUM the Delta destinations")
    _common(maintenance)
    maintenance.add_argument("--connection", default=None, help="destination connection name(s); default: all")
    maintenance.add_argument("--no-compact", action="store_true", help="skip OPTIMIZE (file compaction)")
    maintenance.add_argument("--no-cleanup", action="store_true", help="skip VACUUM (deleting unreferenced files)")
    maintenance.add_argument("--retention-hours", type=float, default=168.0, help="VACUUM retention (default 168)")


_RUN_HELP = "Run dataflows: load the stage from metadata, keep this shard's share, run them in parallel."
_REPLAY_HELP = (
    "Replay [start, end) chunk by chunk. Integer text is an integer bound; anything else is parsed as a "
    "date or datetime. The stored watermark is untouched unless --save-watermark --confirm-save-watermark."
)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metadata",
        required=True,
        help="metadata file, a folder holding metadata.json, a metadata API workspace URL or a database URL "
        "(sqlite:///…|postgresql://…?workspace_id=…; URLs need --state-path)",
    )
    # no defaults here: an option left out keeps DataCoolieRunConfig's (4 workers, 1 retry, 5 s)
    parser.add_argument("--max-workers", type=int, default=None, help="global cap on concurrent dataflows (default 4)")
    parser.add_argument("--retry-count", type=int, default=None, help="retries after the first attempt (default 1)")
    parser.add_argument(
        "--retry-delay", type=float, default=None, help="base retry delay in seconds, doubling, max 60 (default 5)"
    )
    parser.add_argument("--stop-on-error", action="store_true", help="admit nothing new after the first failure")
    parser.add_argument(
        "--log-path", default=None, help="write execution and system logs under this folder ('-': to standard output)"
    )
    parser.add_argument("--state-path", default=None, help="state root (watermarks); default: beside the metadata")
    parser.add_argument("--state-url", default=None, help=STATE_URL_HELP)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    if parser.prog.split()[-1] != "maintenance":
        parser.add_argument("--dataflow", default=None, help="only these dataflows of the stage (names, comma list)")
        parser.add_argument(
            "--observer", action="append", default=[], metavar="NAME=TARGET",
            help="record what was built with this run observer, e.g. dagster=/path/to/dagster_home "
            "(installed observers start on their own when configured, e.g. with DAGSTER_HOME)",
        )  # fmt: skip
        parser.add_argument("--no-observers", action="store_true", help="record the run with no run observer")


STATE_ACTIONS = ("show", "repair", "reset", "migrate")
_STATE_HELP = """\
``datacoolie state show | repair | reset | migrate``: look at, deliberately fix, or move state.

The engine refuses to run on damaged state (see ``docs/state.md``); these commands are the way out.
``show`` prints the watermark, the commit journal and what the destination's Delta log holds, and
the verdict of the pre-write check. ``repair`` makes the state agree with the destination: the
watermark becomes the furthest one its commits recorded, so rows of a lost commit are read again
and nothing is read twice. ``reset`` removes the watermark: the next run reads everything again.
Both only print their plan unless ``--confirm`` is given. ``migrate`` copies every watermark and
commit record from one store to another (a state folder or a ``postgresql://`` URL; see
``docs/state-store.md``).
"""
_DATAFLOW_ACTIONS = {
    "show": "inspect one dataflow's state",
    "repair": "rebuild one dataflow's state from its destination's log",
    "reset": "remove one dataflow's watermark: the next run reloads",
}
_MIGRATE_HELP = (
    "Copy every watermark and commit record from one state store to another, byte for byte: "
    "a state root folder (as --state-path) or a postgresql:// URL (as --state-url). Every record "
    "is read and checked first: a damaged one stops the copy before anything is written. A record "
    "the target already holds with a different value stops it too. Stop the runs using either store first."
)


def _add_state(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    state = commands.add_parser("state", help="show, repair, reset or migrate state", description=_STATE_HELP)
    actions = state.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, summary in _DATAFLOW_ACTIONS.items():
        sub = actions.add_parser(action, help=summary, description=summary)
        sub.add_argument(
            "--metadata", required=True, help="metadata file, a folder holding metadata.json, or an API or database URL"
        )
        sub.add_argument("--dataflow", required=True, help="the dataflow's name")
        sub.add_argument("--state-path", default=None, help="state root (watermarks); default: beside the metadata")
        sub.add_argument("--state-url", default=None, help=STATE_URL_HELP)
        sub.add_argument("--confirm", action="store_true", help="repair/reset: do it (without: print the plan)")
        sub.add_argument("--json", action="store_true", help="show: print the facts as JSON")
    migrate = actions.add_parser("migrate", help="copy all state between stores", description=_MIGRATE_HELP)
    migrate.add_argument("--from", dest="source", required=True, help="state root folder or postgresql:// URL")
    migrate.add_argument("--to", dest="target", required=True, help="state root folder or postgresql:// URL")
