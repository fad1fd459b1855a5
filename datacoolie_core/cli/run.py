"""``datacoolie run | replay | maintenance``: drive dataflows from a metadata file."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from datacoolie_core.cli.common import EXIT_DATAFLOW_FAILED, EXIT_OK, EXIT_USAGE, state_location
from datacoolie_core.cli.progress import Progress
from datacoolie_core.cli.signals import exit_code_of
from datacoolie_core.errors import DataCoolieError, MetadataError
from datacoolie_core.metadata.selection import normalize_names
from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.models.run_config import DataCoolieRunConfig, ReplayConfig
from datacoolie_core.models.runtime import ExecutionResult
from datacoolie_core.observers import ObserverError, Observers, RunContext, parse_targets, start_observers
from datacoolie_core.orchestration.driver import DataCoolieDriver
from datacoolie_core.platform.paths import printable
from datacoolie_core.suggestions import did_you_mean


def _config(args: argparse.Namespace, **extra: Any) -> DataCoolieRunConfig:
    # an option left out keeps the run config's default: the defaults are written once, there
    given = {name: getattr(args, name) for name in ("max_workers", "retry_count", "retry_delay")}
    return DataCoolieRunConfig(
        **{k: v for k, v in given.items() if v is not None}, stop_on_error=args.stop_on_error, **extra
    )


def run_command(args: argparse.Namespace) -> int:
    observers = _observers(args, RunContext("run", args.metadata))
    if observers is None:
        return EXIT_USAGE
    extra = {"job_num": args.job_num, "job_index": args.job_index, "dry_run": args.dry_run}
    extra["touched_windows"] = observers.windows()

    def operation(driver: DataCoolieDriver, progress: Progress) -> ExecutionResult:
        if args.dataflow is None:
            return driver.run(stage=args.stage, on_complete=progress.update)
        return driver.run(dataflows=_pick(driver, args), on_complete=progress.update)

    return _drive(args, _config_or_exit(args, **extra), operation, observers)


def replay_command(args: argparse.Namespace) -> int:
    if args.save_watermark and not args.confirm_save_watermark:
        print("error: --save-watermark moves the production watermark; add --confirm-save-watermark", file=sys.stderr)
        return EXIT_USAGE
    try:
        interval = json.loads(args.chunk_interval_json) if args.chunk_interval_json else None
        if interval is not None and not isinstance(interval, dict):
            raise ValueError("--chunk-interval-json must be a JSON object")
        replay = ReplayConfig(
            start=args.start, end=args.end, chunk_interval=interval,
            save_watermark=args.save_watermark, chunk_column=args.chunk_column,
        )  # fmt: skip
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE

    def operation(driver: DataCoolieDriver, progress: Progress) -> ExecutionResult:
        return driver.run_replay(_pick(driver, args), replay, on_complete=progress.update)

    observers = _observers(args, RunContext("replay", args.metadata, replay=replay))
    if observers is None:
        return EXIT_USAGE
    config = _config_or_exit(args, dry_run=args.dry_run, touched_windows=observers.windows())
    return _drive(args, config, operation, observers)


def _observers(args: argparse.Namespace, context: RunContext) -> Observers | None:
    """The run observers that record this run (none for a dry run or ``--no-observers``)."""
    try:
        targets = parse_targets(args.observer)
    except ObserverError as e:
        print(f"error: {e}", file=sys.stderr)
        return None
    if args.dry_run or args.no_observers:
        return Observers()
    observers = start_observers(context, targets)
    for warning in observers.warnings:
        print(printable(warning), file=sys.stderr)
    observers.warnings.clear()
    return observers


def maintenance_command(args: argparse.Namespace) -> int:
    config = _config_or_exit(args, retention_hours=args.retention_hours)
    return _drive(args, config, lambda driver, progress: driver.run_maintenance(
        connection=args.connection, do_compact=not args.no_compact, do_cleanup=not args.no_cleanup,
        on_complete=progress.update,
    ))  # fmt: skip


def _pick(driver: DataCoolieDriver, args: argparse.Namespace) -> list[DataFlow]:
    """The stage's dataflows, narrowed to ``--dataflow`` names when given."""
    loaded = driver.load_dataflows(stage=args.stage)
    if args.dataflow is None:
        return loaded
    wanted = normalize_names(args.dataflow)
    by_name = {str(d.name): d for d in loaded}
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        raise DataCoolieError(
            f"no dataflow named {unknown[0]!r} in stage {args.stage or '(all)'} of this shard"
            f"{did_you_mean(unknown[0], by_name)}"
        )
    return [by_name[n] for n in wanted]


def _config_or_exit(args: argparse.Namespace, **extra: Any) -> DataCoolieRunConfig | None:
    try:
        return _config(args, **extra)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return None


def _drive(
    args: argparse.Namespace,
    config: DataCoolieRunConfig | None,
    operation: Callable[[DataCoolieDriver, Progress], ExecutionResult],
    observers: Observers | None = None,
) -> int:
    if config is None:
        return EXIT_USAGE
    try:
        state_path, state_url = state_location(args)
        with DataCoolieDriver(
            metadata_base_path=args.metadata, state_base_path=state_path, state_url=state_url,
            log_base_path=args.log_path, config=config,
        ) as driver:  # fmt: skip
            progress = Progress(sys.stderr, enabled=not args.json)
            result = operation(driver, progress)
            progress.finish(result)
    except MetadataError as e:
        print(printable(str(e)), file=sys.stderr)
        return EXIT_USAGE
    except DataCoolieError as e:
        print(printable(f"error: {e}"), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as e:
        print(
            f"interrupted ({e or 'SIGINT'}): the driver was closed; dataflows in flight are settled on the next run",
            file=sys.stderr,
        )
        return exit_code_of(e)
    if observers is not None:  # after the driver closed: every commit and watermark is settled
        for line in [*observers.record(result), *observers.warnings]:
            print(printable(line), file=sys.stderr)
    if args.json:
        json.dump(_report(result), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    return EXIT_DATAFLOW_FAILED if result.failed else EXIT_OK


def _report(result: ExecutionResult) -> dict[str, Any]:
    """The JSON report: the result, with each replay chunk as a record of its own."""
    report = result.to_dict()
    for row, runtime in zip(report["dataflows"], result.runtimes, strict=True):
        # to_dict copies chunk records as objects, which JSON would print as their repr
        row["chunks"] = [chunk.to_dict() for chunk in runtime.chunks]
    return report
