"""Before a write: the dataflow's state (watermark + commit journal) against the destination's log.

Three durable things must agree: the watermark file, the commit journal (the last sequence this
dataflow wrote, pending or settled) and the destination's commit log (the last sequence it holds
for ``datacoolie:<dataflow_id>``). The normal path costs ONE read of the log
(``DeltaTable.transaction_version``). Disagreements are settled when the log proves what happened,
and stop the dataflow with a :class:`WatermarkError` naming the way out otherwise:

* journal pending N, log has N: the write landed before a crash; its watermark is saved now.
* journal pending N, log has N-1: the write never landed; the same window is read again.
* journal missing or unreadable, log has N: rebuilt from the log (the commits record their
  watermarks) — a crash between commit and save that also lost the journal loses nothing.
* log ahead of the journal: commits the state never settled; their recorded watermarks are merged.
* log behind the journal, or no table although the state wrote to it: a deleted log entry or a
  restored / replaced table. Loading past the gap would lose those rows for good: error.
* watermark missing or behind the last settled commit: error (reading again would duplicate).

Only no watermark, no journal and no commit of ours in the destination is a first run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from datacoolie_core.destinations import get_writer
from datacoolie_core.destinations.base import AppCommit, CommitLog, LogState, Writer
from datacoolie_core.errors import WatermarkError
from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.watermark.integrity import check_watermark_fits, covers, merge_recorded
from datacoolie_core.watermark.journal import CommitJournal, PendingCommit
from datacoolie_core.watermark.manager import WatermarkManager
from datacoolie_core.watermark.merge import merge_watermarks
from datacoolie_core.watermark.serializer import STATE_FIX, serialize_watermark, state_fix

_LOG = logging.getLogger("datacoolie.state")


def app_id_of(dataflow: DataFlow) -> str:
    """The transaction id a dataflow's commits carry: one sequence per dataflow, fan-in safe."""
    return f"datacoolie:{dataflow.dataflow_id}"


def is_stateful(dataflow: DataFlow) -> bool:
    """Incremental dataflows keep state; a full load each run has nothing to lose or duplicate."""
    return bool(dataflow.source.watermark_columns)


@dataclass(frozen=True)
class StateCheck:
    """The agreed state of a dataflow before its write."""

    watermark: dict[str, Any] | None
    """The stored watermark to read after (``None``: read everything)."""
    sequence: int | None = None
    """The destination's last sequence of this dataflow (the write takes the next); ``None``: none."""
    checked: bool = False
    """The log was cross-checked (``sequence`` is meaningful)."""
    notes: tuple[str, ...] = field(default=())
    """What was settled or repaired, in words (also logged as warnings)."""


@dataclass
class _Check:
    dataflow: DataFlow
    watermarks: WatermarkManager
    journal: CommitJournal
    writer: Writer
    apply: bool
    notes: list[str] = field(default_factory=list)

    @property
    def dataflow_id(self) -> str:
        return str(self.dataflow.dataflow_id)

    @property
    def app_id(self) -> str:
        return app_id_of(self.dataflow)

    def note(self, text: str) -> None:
        self.notes.append(text)
        if self.apply:
            _LOG.warning("state.repaired dataflow '%s': %s", self.dataflow.name, text)

    def error(self, text: str) -> WatermarkError:
        return WatermarkError(
            f"dataflow '{self.dataflow.name}', table {self.dataflow.destination.path}: {text}. "
            f"Nothing was read or written. Fix: {state_fix(str(self.dataflow.name))}",
            dataflow_id=self.dataflow_id,
            path=self.watermarks.location(self.dataflow_id),
        )


def read_checked_watermark(dataflow: DataFlow, watermarks: WatermarkManager | None) -> dict[str, Any] | None:
    """The stored watermark, which must parse and fit the dataflow's watermark columns."""
    if watermarks is None:
        return None
    dataflow_id = str(dataflow.dataflow_id)
    try:
        stored = watermarks.get_watermark(dataflow_id)
        if stored is not None:
            check_watermark_fits(stored, dataflow.source.watermark_columns)
    except WatermarkError as e:  # name the dataflow in the repair command
        message = f"dataflow '{dataflow.name}': " + e.message.replace(STATE_FIX, state_fix(str(dataflow.name)))
        raise WatermarkError(message, dataflow_id=dataflow_id, path=e.path or watermarks.location(dataflow_id)) from e
    return stored


def check_state(
    dataflow: DataFlow,
    watermarks: WatermarkManager | None,
    journal: CommitJournal | None,
    *,
    apply: bool = True,
) -> StateCheck:
    """Cross-check the state against the destination; settle what the log proves, raise otherwise.

    Args:
        apply: ``False`` only works out what would be settled (``datacoolie state show``).

    Raises:
        WatermarkError: damaged state the log cannot settle, naming the file and the repair command.
    """
    stored = read_checked_watermark(dataflow, watermarks)
    if watermarks is None or journal is None or not is_stateful(dataflow):
        return StateCheck(stored)
    check = _Check(dataflow, watermarks, journal, get_writer(dataflow.destination.connection.format or ""), apply)
    record = _read_record(check)
    log = read_log_state(check.writer, dataflow)
    if record is not None and not record.settled:
        record, stored = _settle_pending(check, record, stored, log)
    if record is None:
        return _without_journal(check, stored, log)
    return _against_journal(check, stored, record, log)


def read_log_state(writer: Writer, dataflow: DataFlow) -> LogState:
    """One read of the destination's log (writers without one: their committed sequence)."""
    if isinstance(writer, CommitLog):
        return writer.log_state(dataflow.destination, app_id_of(dataflow))
    sequence = writer.committed_sequence(dataflow.destination, app_id_of(dataflow))
    return LogState(exists=True, sequence=sequence)  # existence unknown: never reported as missing


def read_app_commits(writer: Writer, dataflow: DataFlow) -> list[AppCommit]:
    """This dataflow's commits, newest first ([] when the writer keeps no readable history)."""
    return writer.app_commits(dataflow.destination, app_id_of(dataflow)) if isinstance(writer, CommitLog) else []


def _read_record(check: _Check) -> PendingCommit | None:
    try:
        record = check.journal.record(check.dataflow_id)
    except WatermarkError as e:
        # The log is the authority on what landed; an unreadable journal is rebuilt from it.
        check.note(f"the commit journal {check.journal.location(check.dataflow_id)} is unreadable ({e.message})")
        return None
    if record is not None and record.app_id != check.app_id:  # e.g. copied from another dataflow's folder
        check.note(f"the commit journal belongs to {record.app_id}, not {check.app_id}")
        return None
    return record


def _settle_pending(
    check: _Check, pending: PendingCommit, stored: dict[str, Any] | None, log: LogState
) -> tuple[PendingCommit | None, dict[str, Any] | None]:
    """A write announced by a run that did not finish: did its commit land? (record, watermark)."""
    if (log.sequence or 0) >= pending.sequence:
        check.note(f"write {pending.sequence} of run {pending.dataflow_run_id} had landed; its watermark is saved")
        if pending.watermark:
            stored = (
                check.watermarks.save_watermark(
                    check.dataflow_id, pending.watermark, dataflow_run_id=pending.dataflow_run_id
                )
                if check.apply
                else merge_watermarks(stored, pending.watermark)
            )
        settled: PendingCommit | None = pending.as_settled(stored)
    elif pending.sequence == 1:
        settled = None  # the first write never landed: nothing was ever committed
    else:
        settled = PendingCommit(pending.app_id, pending.sequence - 1, pending.dataflow_run_id, stored, settled=True)
    if check.apply:
        check.journal.settle(check.dataflow_id, settled)
    return settled, stored


def _against_journal(check: _Check, stored: dict[str, Any] | None, record: PendingCommit, log: LogState) -> StateCheck:
    if log.sequence is None or log.sequence < record.sequence:
        raise check.error(_gap(record, log))
    if log.sequence > record.sequence:
        return _catch_up(check, stored, log.sequence, since=record.sequence)
    if record.watermark and not covers(stored, record.watermark):
        found = "missing" if stored is None else f"at {serialize_watermark(stored)}"
        raise check.error(
            f"the watermark is {found}, but the last settled write ({record.sequence}) saved "
            f"{serialize_watermark(record.watermark)}; reading from there again would duplicate rows"
        )
    return StateCheck(stored, log.sequence, checked=True, notes=tuple(check.notes))


def _gap(record: PendingCommit, log: LogState) -> str:
    if not log.exists:
        return (
            f"the destination table does not exist, but this dataflow's state recorded {record.sequence} "
            "write(s) to it (was the table deleted or moved?); loading on would lose every row before the watermark"
        )
    held = "no commit of this dataflow" if log.sequence is None else f"its commits only up to {log.sequence}"
    return (
        f"the destination's log holds {held}, but the state recorded write {record.sequence} (a deleted "
        "_delta_log entry, or a table restored or replaced by an older copy); loading past the gap would "
        "lose the rows of the missing write(s) for good"
    )


def _catch_up(check: _Check, stored: dict[str, Any] | None, sequence: int, *, since: int) -> StateCheck:
    """Commits the state never settled (a lost journal, a replay): merge their recorded watermarks."""
    commits = [c for c in read_app_commits(check.writer, check.dataflow) if c.sequence > since]
    if not commits:
        raise check.error(
            f"the destination holds writes {since + 1}..{sequence} of this dataflow that the state never "
            "settled, and they record no watermark to settle them from"
        )
    recorded = merge_recorded(c.watermark for c in commits)
    check.note(f"writes {since + 1}..{sequence} found in the destination's log were settled from it")
    return _settle_from_log(check, stored, recorded, sequence)


def _without_journal(check: _Check, stored: dict[str, Any] | None, log: LogState) -> StateCheck:
    if log.sequence is None:
        # No journal and no commit of ours: a first run, or a watermark carried over from DataCoolie
        # (whose tables hold no app transaction of ours) or seeded on purpose. Nothing says we wrote.
        return StateCheck(stored, None, checked=True, notes=tuple(check.notes))
    if not isinstance(check.writer, CommitLog):
        raise check.error(
            f"there is no commit journal, and the destination holds this dataflow's writes up to {log.sequence} "
            "but records no watermark to check the stored one against (a crash between a write and its "
            "watermark save would read those rows again); if the stored watermark is right, "
            "`datacoolie state repair --confirm` accepts it"
        )
    recorded = merge_recorded(c.watermark for c in read_app_commits(check.writer, check.dataflow))
    if stored is None and recorded is not None:
        loaded = f" (watermark {serialize_watermark(recorded)})" if recorded else ""
        raise check.error(
            f"the watermark is missing, but the destination holds this dataflow's writes up to "
            f"{log.sequence}{loaded}; reading everything again would duplicate rows"
        )
    check.note(f"no commit journal: rebuilt from the destination's log (write {log.sequence})")
    return _settle_from_log(check, stored, recorded, log.sequence)


def _settle_from_log(
    check: _Check, stored: dict[str, Any] | None, recorded: dict[str, Any] | None, sequence: int
) -> StateCheck:
    watermark = stored
    if recorded is not None:
        watermark = (
            check.watermarks.save_watermark(check.dataflow_id, recorded, dataflow_run_id="state-check")
            if check.apply
            else merge_watermarks(stored, recorded)
        )
    if check.apply:
        record = PendingCommit(check.app_id, sequence, "state-check", watermark, settled=True)
        check.journal.settle(check.dataflow_id, record)
    return StateCheck(watermark, sequence, checked=True, notes=tuple(check.notes))
