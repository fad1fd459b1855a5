"""``datacoolie validate``: check a metadata file and list its dataflows."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from datacoolie_core.cli.common import EXIT_OK, EXIT_USAGE
from datacoolie_core.errors import MetadataError
from datacoolie_core.metadata.addresses import validate_location
from datacoolie_core.metadata.validation import ValidatedDocument
from datacoolie_core.models.dataflow import ConnectionRef, DataFlow
from datacoolie_core.platform.paths import printable


def validate_command(args: argparse.Namespace) -> int:
    try:
        document = validate_location(args.path)
    except MetadataError as e:
        document = ValidatedDocument((), (), (), e.issues, args.path)
    failed = bool(document.errors) or (args.strict and bool(document.warnings))
    if args.json:
        json.dump(_report_json(document, failed), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_report(document, failed, sys.stdout, sys.stderr)
    return EXIT_USAGE if failed else EXIT_OK


def _endpoint(ref: ConnectionRef, table: str | None) -> str:
    conn = ref.connection
    where = getattr(ref, "python_function", None) or ".".join(
        p for p in (getattr(ref, "schema_name", None), table) if p
    )
    if not where and getattr(ref, "query", None):
        where = "(query)"
    return f"{conn.name}:{where} ({conn.format})"


def _dataflow_row(dataflow: DataFlow) -> dict[str, Any]:
    return {
        "name": dataflow.name,
        "dataflow_id": dataflow.dataflow_id,
        "stage": dataflow.stage,
        "is_active": dataflow.is_active,
        "source": _endpoint(dataflow.source, dataflow.source.table),
        "destination": _endpoint(dataflow.destination, dataflow.destination.table),
        "load_type": dataflow.destination.load_type,
    }


def _report_json(document: ValidatedDocument, failed: bool) -> dict[str, Any]:
    return {
        "file": document.file,
        "valid": not failed,
        "connections": [c.name for c in document.connections],
        "dataflows": [_dataflow_row(d) for d in document.dataflows],
        "invalid_dataflows": list(document.invalid_dataflows),
        "errors": [i.to_dict() for i in document.errors],
        "warnings": [i.to_dict() for i in document.warnings],
    }


def _print_report(document: ValidatedDocument, failed: bool, out: TextIO, err: TextIO) -> None:
    rows = [_dataflow_row(d) for d in document.dataflows]
    width = max((len(r["name"]) for r in rows), default=0)
    for row in rows:
        inactive = "  (inactive)" if not row["is_active"] else ""
        out.write(
            printable(
                f"{row['name']:<{width}}  stage={row['stage'] or '-'}  {row['source']} -> {row['destination']}"
                f"  {row['load_type']}{inactive}"
            )
            + "\n"
        )
    for issue in (*document.warnings, *document.errors):  # names from the file never reach the terminal raw
        err.write(printable(str(issue)) + "\n")
    stages = {d.stage for d in document.dataflows if d.stage}
    active = sum(d.is_active for d in document.dataflows)
    summary = (
        f"{len(document.dataflows)} valid dataflow(s) ({active} active) in {len(stages)} stage(s), "
        f"{len(document.connections)} connection(s), {len(document.schema_hints)} schema-hint group(s)"
    )
    if failed:
        invalid = f"; invalid: {', '.join(document.invalid_dataflows)}" if document.invalid_dataflows else ""
        err.write(
            printable(
                f"INVALID: {len(document.errors)} error(s), {len(document.warnings)} warning(s) in {document.file}; "
                f"{summary}{invalid}"
            )
            + "\n"
        )
    else:
        out.write(f"OK: {summary}; {len(document.warnings)} warning(s)\n")
