"""``datacoolie state show | repair | reset``: look at, and deliberately fix, one dataflow's state.

What each action does is the command's help (``datacoolie state --help``, written in
:mod:`datacoolie_core.cli.parsers`) and ``docs/state.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Any

from datacoolie_core.cli.common import EXIT_DATAFLOW_FAILED, EXIT_OK, EXIT_USAGE, state_location
from datacoolie_core.destinations import get_writer
from datacoolie_core.destinations.base import CommitLog
from datacoolie_core.errors import DataCoolieError, MetadataError, WatermarkError
from datacoolie_core.metadata.addresses import is_metadata_url, url_provider
from datacoolie_core.metadata.file_provider import FileProvider
from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.orchestration.state_check import (
    app_id_of,
    check_state,
    read_app_commits,
    read_log_state,
)
from datacoolie_core.orchestration.wiring import metadata_file_in
from datacoolie_core.suggestions import did_you_mean
from datacoolie_core.watermark.integrity import merge_recorded
from datacoolie_core.watermark.journal import CommitJournal, PendingCommit
from datacoolie_core.watermark.manager import WatermarkManager
from datacoolie_core.watermark.migrate import migrate_state, open_state_location
from datacoolie_core.watermark.serializer import serialize_watermark


@dataclass
class _Target:
    provider: FileProvider
    dataflow: DataFlow
    watermarks: WatermarkManager
    journal: CommitJournal

    @property
    def dataflow_id(self) -> str:
        return str(self.dataflow.dataflow_id)


def state_command(args: argparse.Namespace) -> int:
    if args.action == "migrate":
        return _migrate(args)
    try:
        target = _target(args)
        if args.action == "show":
            return _show(target, as_json=args.json)
        with target.provider.destination_lock(target.dataflow.destination.destination_key):
            plan = _repair_plan(target) if args.action == "repair" else _reset_plan(target)
            return _carry_out(target, plan, confirm=args.confirm)
    except MetadataError as e:
        print(str(e), file=sys.stderr)
        return EXIT_USAGE
    except DataCoolieError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_DATAFLOW_FAILED if isinstance(e, WatermarkError) else EXIT_USAGE


def _target(args: argparse.Namespace) -> _Target:
    state_path, state_url = state_location(args)
    provider = (
        url_provider(args.metadata, state_path, state_url)  # watermarks in a metadata database or API
        if is_metadata_url(args.metadata)
        else FileProvider(metadata_file_in(args.metadata), state_base_path=state_path, state_url=state_url)
    )
    by_name = {str(d.name): d for d in provider.get_dataflows(active_only=False)}  # names are unique
    if args.dataflow not in by_name:
        raise DataCoolieError(f"no dataflow named {args.dataflow!r}{did_you_mean(args.dataflow, by_name)}")
    watermarks = WatermarkManager(provider)
    return _Target(provider, by_name[args.dataflow], watermarks, CommitJournal(provider, watermarks))


# --- show -----------------------------------------------------------------------------------


def _show(target: _Target, *, as_json: bool) -> int:
    facts = _facts(target)
    try:
        check = check_state(target.dataflow, target.watermarks, target.journal, apply=False)
        facts["verdict"] = "ok" + "".join(f"; the next run settles: {n}" for n in check.notes)
    except WatermarkError as e:
        facts["verdict"] = f"damaged: {e}"
    if as_json:
        json.dump(facts, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        for key, value in facts.items():
            print(f"{key}: {value}")
    return EXIT_OK if facts["verdict"].startswith("ok") else EXIT_DATAFLOW_FAILED


def _facts(target: _Target) -> dict[str, Any]:
    provider, dataflow_id = target.provider, target.dataflow_id
    writer = get_writer(target.dataflow.destination.connection.format or "")
    log = read_log_state(writer, target.dataflow)
    commits = read_app_commits(writer, target.dataflow)
    return {
        "dataflow": f"{target.dataflow.name} [{dataflow_id}]",
        "watermark_file": provider.watermark_location(dataflow_id),
        "watermark": _text(provider.get_watermark(dataflow_id)),
        "journal_file": target.journal.location(dataflow_id),
        "journal": _text(provider.get_pending_commit(dataflow_id)),
        "destination": target.dataflow.destination.path,
        "destination_exists": log.exists,
        "destination_sequence": log.sequence,
        "destination_commits": [
            {"sequence": c.sequence, "version": c.version, "watermark": c.watermark} for c in commits[:5]
        ],
    }


def _text(text: str | None) -> str:
    return "(absent)" if text is None else repr(text) if not text.strip() else text


# --- repair / reset ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    watermark: dict[str, Any] | None
    record: PendingCommit | None
    says: str


def _repair_plan(target: _Target) -> _Plan:
    """The state the destination's log supports: its furthest recorded watermark, its last sequence."""
    writer = get_writer(target.dataflow.destination.connection.format or "")
    log = read_log_state(writer, target.dataflow)
    if log.sequence is None:
        return _Plan(
            None, None, "clear the state (the destination holds no write of this dataflow): the next run is a first run"
        )
    if not isinstance(writer, CommitLog):  # flat files record sequences, not watermarks
        stored = target.watermarks.get_watermark(target.dataflow_id)
        record = PendingCommit(app_id_of(target.dataflow), log.sequence, "state-repair", stored, settled=True)
        return _Plan(stored, record, f"take the stored watermark as right for write {log.sequence}")
    recorded = merge_recorded(c.watermark for c in read_app_commits(writer, target.dataflow))
    if recorded is None:
        raise WatermarkError(
            f"the destination's log records no watermark for this dataflow's writes (up to {log.sequence}), "
            "so repair cannot rebuild it; use `datacoolie state reset` to reload everything, or write the "
            "watermark file by hand",
            dataflow_id=target.dataflow_id,
        )
    record = PendingCommit(app_id_of(target.dataflow), log.sequence, "state-repair", recorded, settled=True)
    says = f"set the watermark to {serialize_watermark(recorded)} and the journal to write {log.sequence}"
    return _Plan(recorded, record, says + " (what the destination's log holds; rows after it are read again)")


def _reset_plan(target: _Target) -> _Plan:
    writer = get_writer(target.dataflow.destination.connection.format or "")
    log = read_log_state(writer, target.dataflow)
    record = None
    if log.sequence is not None:
        record = PendingCommit(app_id_of(target.dataflow), log.sequence, "state-reset", None, settled=True)
    says = "remove the watermark: the next run reads the whole source again"
    if target.dataflow.destination.load_type == "append":
        says += " (load_type append: every row is appended again unless the table is emptied first)"
    return _Plan(None, record, says)


def _carry_out(target: _Target, plan: _Plan, *, confirm: bool) -> int:
    if not confirm:
        print(f"would {plan.says}; add --confirm to do it")
        return EXIT_OK
    target.watermarks.replace_watermark(target.dataflow_id, plan.watermark)
    target.journal.settle(target.dataflow_id, plan.record)
    print(f"done: {plan.says}")
    return EXIT_OK


# --- migrate ----------------------------------------------------------------------------------


def _migrate(args: argparse.Namespace) -> int:
    try:
        source = open_state_location(args.source)
        target = open_state_location(args.target)
        try:
            result = migrate_state(source, target)
        finally:
            source.close()
            target.close()
    except DataCoolieError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_DATAFLOW_FAILED if isinstance(e, WatermarkError) else EXIT_USAGE
    print(f"copied {result.copied} record(s), {result.unchanged} already in place")
    return EXIT_OK
