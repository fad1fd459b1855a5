"""Read a metadata file (JSON, YAML or an Excel workbook) into plain Python objects, rejecting duplicate keys.

JSON and YAML parsers keep the last of two equal keys without a word; a duplicated ``load_type``
would then silently change what a dataflow does, so duplicates are errors here, with their path.
YAML timestamps stay strings, as in JSON, so a YAML file means the same as its JSON twin.
Size, nesting depth and YAML alias expansion are bounded (:mod:`datacoolie_core.input_bounds`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from datacoolie_core.errors import MetadataError, MetadataIssue
from datacoolie_core.gc_pause import cyclic_gc_paused
from datacoolie_core.input_bounds import MAX_DEPTH, MAX_FILE_BYTES, json_depth_excess

if TYPE_CHECKING:
    from datacoolie_core.metadata.validation import ValidatedDocument

YAML_SUFFIXES = (".yaml", ".yml")
WORKBOOK_SUFFIXES = (".xlsx", ".xlsm", ".xls")


def read_metadata_file(path: str | Path) -> Any:
    """Parse ``path`` as YAML (``.yaml``/``.yml``), an Excel workbook (``.xlsx``) or JSON (anything else).

    Raises:
        MetadataError: the file cannot be read, is over a limit (size, depth, YAML aliases), does not
            parse, or repeats a key in an object.
    """
    path = Path(path)
    if path.suffix.lower() in WORKBOOK_SUFFIXES:
        from datacoolie_core.metadata.excel import read_excel_metadata  # openpyxl only for workbooks

        return read_excel_metadata(path)[0]
    text = _read_bounded(path)
    if path.suffix.lower() in YAML_SUFFIXES:
        return _parse_yaml(text, str(path))
    return _parse_json(text, str(path))


def load_document(path: str | Path) -> ValidatedDocument:
    """Read and validate a metadata file; a workbook's issues name their sheet, row and column.

    Raises:
        MetadataError: the file cannot be read or parsed (validation issues are in the result).
    """
    from datacoolie_core.metadata.validation import validate_document

    path = Path(path)
    if path.suffix.lower() in WORKBOOK_SUFFIXES:
        from datacoolie_core.metadata.excel import load_excel_document

        return load_excel_document(path)
    with cyclic_gc_paused():  # allocation-heavy, frees almost nothing (datacoolie_core.gc_pause)
        return validate_document(read_metadata_file(path), file=str(path))


def _read_bounded(path: Path) -> str:
    """The file's text, refusing more than ``MAX_FILE_BYTES`` (read that far only: FIFOs, /dev/zero)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise MetadataError(f"cannot read the metadata file: {e.strerror or e}", file=str(path)) from e
    if len(data) > MAX_FILE_BYTES:
        raise MetadataError(
            f"the metadata file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; split it or trim it",
            file=str(path),
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MetadataError(f"the metadata file is not UTF-8 text ({e.reason})", file=str(path)) from e


def _parse_json(text: str, file: str) -> Any:
    excess = json_depth_excess(text)
    if excess is not None:
        line, column = excess
        raise MetadataError(
            [
                MetadataIssue(
                    "$", f"the document nests deeper than {MAX_DEPTH} levels at line {line}, column {column}", file=file
                )
            ],
            file=file,
        )
    repeated: list[_Object] = []
    try:
        document = json.loads(text, object_pairs_hook=lambda pairs: _object(pairs, repeated))
    except json.JSONDecodeError as e:
        raise MetadataError(
            [MetadataIssue("$", f"invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}", file=file)], file=file
        ) from e
    if repeated:  # only then walk the tree to name the paths
        _raise_duplicates(document, file)
    return document


class _Object(dict[str, Any]):
    """A JSON object that remembers which of its keys appeared more than once."""

    duplicate_keys: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]], repeated: list[_Object]) -> dict[str, Any]:
    obj = dict(pairs)  # C speed; a repeated key makes the dict shorter than the pairs
    if len(obj) == len(pairs):
        return obj
    marked = _Object(pairs)
    seen: set[str] = set()
    marked.duplicate_keys = tuple(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
    repeated.append(marked)
    return marked


def _raise_duplicates(document: Any, file: str) -> None:
    issues = [
        MetadataIssue(path, f"key '{key}' appears more than once in this object; keep one", file=file)
        for path, key in _find_duplicates(document, "")
    ]
    if issues:
        raise MetadataError(issues, file=file)


def _find_duplicates(node: Any, path: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if isinstance(node, dict):
        found += [(path or "$", key) for key in getattr(node, "duplicate_keys", ())]
        for key, value in node.items():
            found += _find_duplicates(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _find_duplicates(value, f"{path}[{index}]")
    return found


def _parse_yaml(text: str, file: str) -> Any:
    from datacoolie_core.metadata.bounded_yaml import parse_yaml  # PyYAML only for YAML files

    return parse_yaml(text, file)
