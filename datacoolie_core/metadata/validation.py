"""Validate a whole metadata document and report every problem with its JSON path.

Connections, dataflows and shared schema-hint groups are validated one object at a time, so one bad
dataflow neither hides the problems of another nor stops ``validate`` from listing the good ones.
Pydantic's errors are translated here, once, into :class:`MetadataIssue` s that name the JSON path
(``dataflows[3].source.watermark_column``), the object (``dataflow 'orders'``) and the fix.
Sections of ``configure`` that an installed plug-in reads (``configure.dagster``) are checked by that
plug-in (:mod:`datacoolie_core.metadata.sections`); an error there makes the dataflow invalid.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from datacoolie_core.columns import DATE_FOLDER_PARTITION
from datacoolie_core.errors import MetadataError, MetadataIssue
from datacoolie_core.metadata.confinement import connection_problems, dataflow_problems
from datacoolie_core.metadata.lineage import lineage_problems
from datacoolie_core.metadata.sections import (
    ConfigureSection,
    Owner,
    SectionRegistry,
    check_sections,
    discovered_sections,
)
from datacoolie_core.models.base import OpenConfigure
from datacoolie_core.models.coerce import describe
from datacoolie_core.models.connection import SECRET_KEYS, Connection
from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.models.date_pattern import parse_pattern
from datacoolie_core.models.transform import SharedSchemaHint
from datacoolie_core.platform.paths import shown
from datacoolie_core.sources.db_kinds import database_problems
from datacoolie_core.suggestions import closest, did_you_mean

TOP_LEVEL_KEYS = ("$schema", "connections", "dataflows", "schema_hints", "extensions")

_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "bool_type": "a boolean",
    "float_type": "a number",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "list_type": "a list",
}


@dataclass(frozen=True)
class ValidatedDocument:
    """The valid objects of a document plus every issue found in it."""

    connections: tuple[Connection, ...]
    dataflows: tuple[DataFlow, ...]
    schema_hints: tuple[SharedSchemaHint, ...]
    issues: tuple[MetadataIssue, ...] = ()
    file: str | None = None
    invalid_dataflows: tuple[str, ...] = field(default=())
    """``dataflows[i] (name)`` of every dataflow that failed validation."""

    @property
    def errors(self) -> list[MetadataIssue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[MetadataIssue]:
        return [i for i in self.issues if i.severity == "warning"]

    def raise_on_errors(self) -> None:
        """Raise one :class:`MetadataError` listing every error, if there is any."""
        if self.errors:
            raise MetadataError(self.errors, file=self.file)


def validate_document(
    raw: Any, *, file: str | None = None, sections: Mapping[str, ConfigureSection] | None = None
) -> ValidatedDocument:
    """Validate a parsed metadata document (the JSON/YAML root object).

    ``configure.<name>`` sections are checked by the installed ``datacoolie.configure_sections``
    plug-ins, plus ``sections`` (which win on a name). Never raises for bad input: everything
    wrong is an issue of the result.
    """
    registry = discovered_sections()
    report = _Report(file, registry.with_sections(sections) if sections else registry)
    if not isinstance(raw, dict):
        report.error("$", f"the document must be an object with connections and/or dataflows, got {describe(raw)}")
        return report.result((), (), ())
    for key in raw:
        if key not in TOP_LEVEL_KEYS:
            report.error(
                _join("", (key,)), f"unknown top-level key {shown(key)}{did_you_mean(str(key), TOP_LEVEL_KEYS)}"
            )
    if "connections" not in raw and "dataflows" not in raw:
        report.error("$", "the document needs 'connections' and/or 'dataflows'")
    connections = _validate_connections(raw, report)
    by_name: dict[str, Connection | None] = {name: conn for name, (_, conn) in connections.items()}
    dataflows = _validate_dataflows(raw, report, by_name, connections)
    hints = _validate_schema_hints(raw, report, connections)
    valid_connections = tuple(conn for _, conn in connections.values() if conn is not None)
    return report.result(valid_connections, dataflows, hints)


class _Report:
    def __init__(self, file: str | None, sections: SectionRegistry) -> None:
        self.file = file
        self.sections = sections
        self.issues: list[MetadataIssue] = []
        self.invalid_dataflows: list[str] = []

    def error(self, path: str, message: str, subject: str | None = None) -> None:
        self.issues.append(MetadataIssue(path, message, "error", self.file, subject))

    def warning(self, path: str, message: str, subject: str | None = None) -> None:
        self.issues.append(MetadataIssue(path, message, "warning", self.file, subject))

    def check_sections(self, configure: Mapping[str, Any], owner: Owner, prefix: str, subject: str | None) -> bool:
        """Add the plug-in checks' issues of ``configure``'s sections; whether any is an error."""
        found = check_sections(configure, owner=owner, path=f"{prefix}.configure", registry=self.sections)
        self.issues += [MetadataIssue(i.path, i.message, i.severity, self.file, subject) for i in found]
        return any(i.severity == "error" for i in found)

    def add(self, error: ValidationError, prefix: str, model: type[BaseModel], subject: str | None) -> None:
        for issue in issues_from_validation_error(error, prefix=prefix, model=model, file=self.file, subject=subject):
            self.issues.append(issue)

    def result(
        self, connections: Sequence[Connection], dataflows: Sequence[DataFlow], hints: Sequence[SharedSchemaHint]
    ) -> ValidatedDocument:
        return ValidatedDocument(
            tuple(connections),
            tuple(dataflows),
            tuple(hints),
            tuple(self.issues),
            self.file,
            tuple(self.invalid_dataflows),
        )


def _items(raw: dict[str, Any], key: str, report: _Report) -> list[Any]:
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        report.error(key, f"expected a list, got {describe(value)}")
        return []
    return value


def _subject(kind: str, item: Any) -> str | None:
    name = item.get("name") or item.get(f"{kind}_id") if isinstance(item, dict) else None
    return f"{kind} {shown(name)}" if isinstance(name, str) and name else None


def _validate_connections(raw: dict[str, Any], report: _Report) -> dict[str, tuple[int, Connection | None]]:
    """Connections by name -> (index, model or None when invalid)."""
    found: dict[str, tuple[int, Connection | None]] = {}
    ids: dict[str, int] = {}
    for index, item in enumerate(_items(raw, "connections", report)):
        prefix, subject = f"connections[{index}]", _subject("connection", item)
        try:
            conn: Connection | None = Connection.model_validate(item)
        except ValidationError as e:
            report.add(e, prefix, Connection, subject)
            conn = None
        name = conn.name if conn else (item.get("name") if isinstance(item, dict) else None)
        if not isinstance(name, str):
            continue
        if conn is not None and (confined := connection_problems(conn) + database_problems(conn)):
            for path, message in confined:
                report.error(f"{prefix}.{path}", message, subject)
            conn = None
        if name in found:
            report.error(
                f"{prefix}.name", f"connection name '{name}' is already used by connections[{found[name][0]}]", subject
            )
            continue
        if conn is not None and conn.connection_id in ids:
            report.error(
                f"{prefix}.connection_id",
                f"connection_id '{conn.connection_id}' is already used by connections[{ids[conn.connection_id]}]",
                subject,
            )
            conn = None
        found[name] = (index, conn)
        if conn is not None:
            ids[str(conn.connection_id)] = index
            _warn_configure_typos(conn, prefix, report, subject)
            report.check_sections(conn.configure.extras, "connection", prefix, subject)
    return found


def _validate_dataflows(
    raw: dict[str, Any],
    report: _Report,
    by_name: dict[str, Connection | None],
    connections: dict[str, tuple[int, Connection | None]],
) -> tuple[DataFlow, ...]:
    valid: list[tuple[int, DataFlow]] = []
    ids: dict[str, int] = {}
    context = {"connections": by_name}
    for index, item in enumerate(_items(raw, "dataflows", report)):
        prefix, subject = f"dataflows[{index}]", _subject("dataflow", item)
        try:
            dataflow = DataFlow.model_validate(item, context=context)
        except ValidationError as e:
            report.add(e, prefix, DataFlow, subject)
            report.invalid_dataflows.append(f"{prefix}" + (f" ({subject})" if subject else ""))
            continue
        problems = [
            (
                f"{prefix}.{side}.connection_name",
                f"connection '{ref.connection_name}' is itself invalid; see connections[{connections[ref.connection_name][0]}]",
            )
            for side, ref in (("source", dataflow.source), ("destination", dataflow.destination))
            if ref.inline_connection is None
            and ref.connection_name is not None
            and by_name.get(ref.connection_name) is None
        ]
        if not problems:  # confinement needs both connections resolved
            problems += [(f"{prefix}.{path}", message) for path, message in dataflow_problems(dataflow)]
            problems += _date_folder_problems(dataflow, prefix, connections)
        if dataflow.dataflow_id in ids:
            problems.append(
                (
                    f"{prefix}.name",
                    f"dataflow id '{dataflow.dataflow_id}' is already used by dataflows[{ids[str(dataflow.dataflow_id)]}]; names and ids must be unique",
                )
            )
        for path, message in problems:
            report.error(path, message, subject)
        if problems:
            report.invalid_dataflows.append(f"{prefix} ({subject})" if subject else prefix)
            continue
        ids[str(dataflow.dataflow_id)] = index
        if dataflow.processing_mode != "batch":
            report.warning(
                f"{prefix}.processing_mode",
                f"processing_mode '{dataflow.processing_mode}' is not implemented (as in DataCoolie); the dataflow runs as batch",
                subject,
            )
        _warn_configure_typos(dataflow, prefix, report, subject)
        if report.check_sections(dataflow.configure, "dataflow", prefix, subject):
            report.invalid_dataflows.append(f"{prefix} ({subject})" if subject else prefix)
            continue
        valid.append((index, dataflow))
    return _without_lineage_problems(valid, report)


def _without_lineage_problems(valid: list[tuple[int, DataFlow]], report: _Report) -> tuple[DataFlow, ...]:
    """``valid`` less the dataflows in self-reads, lineage cycles or overwrites of shared tables (errors)."""
    refused: dict[int, DataFlow] = {}
    for problem in lineage_problems(valid):
        dataflow = next(d for i, d in valid if i == problem.index)
        subject = f"dataflow {shown(dataflow.name)}" if dataflow.name else None
        report.error(f"dataflows[{problem.index}].{problem.path}", problem.message, subject)
        refused[problem.index] = dataflow
    for index, dataflow in sorted(refused.items()):
        report.invalid_dataflows.append(
            f"dataflows[{index}]" + (f" (dataflow {shown(dataflow.name)})" if dataflow.name else "")
        )
    return tuple(d for i, d in valid if i not in refused)


def _date_folder_problems(
    dataflow: DataFlow, prefix: str, connections: dict[str, tuple[int, Connection | None]]
) -> list[tuple[str, str]]:
    """A source's date-folder pattern must be readable (S-12), and its folder key needs one."""
    source = dataflow.source
    pattern = source.connection.configure.date_folder_partitions
    if pattern:
        try:
            parse_pattern(pattern)
        except ValueError as e:
            name = source.connection_name
            where = (
                f"connections[{connections[name][0]}].configure"
                if name in connections and source.inline_connection is None
                else f"{prefix}.source.connection.configure"
            )
            return [(f"{where}.date_folder_partitions", f"date_folder_partitions {pattern!r} cannot be read: {e}")]
    elif any(c.lower() == DATE_FOLDER_PARTITION for c in source.watermark_columns):
        return [
            (
                f"{prefix}.source.watermark_columns",
                f"{DATE_FOLDER_PARTITION} needs the source connection's configure.date_folder_partitions "
                "(e.g. '{year}/{month}/{day}'); set it or remove the column",
            )
        ]
    return []


def _validate_schema_hints(
    raw: dict[str, Any], report: _Report, connections: dict[str, tuple[int, Connection | None]]
) -> tuple[SharedSchemaHint, ...]:
    valid: list[SharedSchemaHint] = []
    ids = {str(c.connection_id) for _, c in connections.values() if c is not None}
    for index, item in enumerate(_items(raw, "schema_hints", report)):
        prefix = f"schema_hints[{index}]"
        try:
            group = SharedSchemaHint.model_validate(item)
        except ValidationError as e:
            report.add(e, prefix, SharedSchemaHint, None)
            continue
        if group.connection_name is not None and group.connection_name not in connections:
            report.error(
                f"{prefix}.connection_name",
                f"connection '{group.connection_name}' is not defined{did_you_mean(group.connection_name, connections)}",
            )
        elif group.connection_name is None and group.connection_id not in ids:
            report.error(f"{prefix}.connection_id", f"no connection has connection_id '{group.connection_id}'")
        else:
            valid.append(group)
    return tuple(valid)


# --- pydantic error translation --------------------------------------------------------------

_LOCATED_KEY = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def issues_from_validation_error(
    error: ValidationError,
    *,
    prefix: str,
    model: type[BaseModel],
    file: str | None = None,
    subject: str | None = None,
) -> list[MetadataIssue]:
    """One :class:`MetadataIssue` per pydantic error, with a JSON path under ``prefix``."""
    issues: list[MetadataIssue] = []
    for item in error.errors(include_url=False):
        loc: tuple[str | int, ...] = tuple(item["loc"])
        if item["type"] == "located":
            loc += tuple(name or int(index) for name, index in _LOCATED_KEY.findall(item["ctx"]["key"]))
        issue = MetadataIssue(_join(prefix, loc), _message(item, model, loc), "error", file, subject)
        if issue not in issues:
            issues.append(issue)
    return issues


def _join(prefix: str, loc: Sequence[str | int]) -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_$][\w$]*", part):
            path += f".{part}" if path else part
        else:
            path += f"[{part!r}]"
    return path or "$"


def _message(item: Any, model: type[BaseModel], loc: tuple[str | int, ...]) -> str:
    kind, ctx = item["type"], item.get("ctx") or {}
    secret = any(part in SECRET_KEYS for part in loc if isinstance(part, str))
    got = "" if secret else f", got {describe(item['input'])}"
    key = str(loc[-1]) if loc else "$"
    if kind == "extra_forbidden":
        known = _known_keys(model, loc[:-1])
        hint = did_you_mean(key, known)
        if not hint and known and len(known) <= 16:
            hint = f" (allowed here: {', '.join(known)})"
        return f"unknown key {shown(key)}{hint}"
    if kind == "missing":
        return f"required key '{key}' is missing"
    if kind == "located":
        return str(ctx["message"])
    if kind == "value_error":
        return str(ctx.get("error", item["msg"]))
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}{got}"
    if kind in ("string_too_short", "too_short"):
        return "must not be empty"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected')}{got}"
    return f"{item['msg'][0].lower()}{item['msg'][1:]}{got}"


def _known_keys(model: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    """The keys accepted by the object at ``loc`` inside ``model`` (for did-you-mean)."""
    current: Any = model
    for part in loc:
        current = _step(current, part)
        if current is None:
            return []
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [info.alias or name for name, info in current.model_fields.items()]
    return []


def _step(annotation: Any, part: str | int) -> Any:
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        for name, info in annotation.model_fields.items():
            if (info.alias or name) == part:
                return info.annotation
        return None
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is list and isinstance(part, int) and args:
        return args[0]
    if origin is dict and isinstance(part, str) and len(args) == 2:
        return args[1]
    return None


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, UnionType):
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


# --- warnings ---------------------------------------------------------------------------------


def _warn_configure_typos(model: BaseModel, prefix: str, report: _Report, subject: str | None) -> None:
    for path, key, known in _configure_extras(model, prefix):
        match = closest(key, known, cutoff=0.85)
        if match and match != key:
            report.warning(
                f"{path}.{key}",
                f"unknown configure key '{key}' is kept but not used by DataCoolie; did you mean '{match}'?",
                subject,
            )


def _configure_extras(model: BaseModel, path: str) -> Iterator[tuple[str, str, list[str]]]:
    if isinstance(model, OpenConfigure) and model.model_extra:
        known = [info.alias or name for name, info in type(model).model_fields.items()]
        for key in model.extras:
            yield path, key, known
    for name, alias in _nested_model_fields(type(model)):
        value = getattr(model, name)
        child = f"{path}.{alias}"
        if isinstance(value, BaseModel):
            yield from _configure_extras(value, child)
        elif isinstance(value, list):
            for index, element in enumerate(value):
                if isinstance(element, BaseModel):
                    yield from _configure_extras(element, f"{child}[{index}]")


@functools.cache
def _nested_model_fields(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """Fields of ``model`` that can hold other models (the only ones worth walking)."""
    return tuple(
        (name, info.alias or name) for name, info in model.model_fields.items() if _holds_model(info.annotation)
    )


def _holds_model(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return any(_holds_model(arg) for arg in get_args(annotation))
