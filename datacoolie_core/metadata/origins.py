"""Where an object of a built metadata document came from: a workbook row, a database row.

Workbooks and databases are turned into the JSON form and validated like a file; their issues then
carry JSON paths (``dataflows[3].destination.load_type``). These helpers map such a path back to the
row and the column (``destination_load_type``) it came from, so the message names what the user edits.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TypeVar

_ITEM = re.compile(r"(connections|dataflows|schema_hints)\[(\d+)\](.*)")
_HINT = re.compile(r"\.hints\[(\d+)\](.*)")
_Row = TypeVar("_Row")


def object_row(path: str, rows: Mapping[str, Sequence[Sequence[_Row]]]) -> tuple[str, _Row, str] | None:
    """``(section, row, rest of the path)`` of an issue path; ``None`` for a path outside the objects.

    ``rows[section][i]`` lists the rows object ``i`` was built from: one, or one per hint of a
    schema-hint group (``schema_hints[2].hints[1]`` is the group's second row).
    """
    match = _ITEM.match(path)
    if not match or int(match[2]) >= len(rows.get(match[1], [])):
        return None
    section, rest = match[1], match[3]
    built_from = rows[section][int(match[2])]
    hint = _HINT.match(rest) if section == "schema_hints" else None
    if hint and int(hint[1]) < len(built_from):
        return section, built_from[int(hint[1])], hint[2]
    return section, built_from[0], rest


def column_of(rest: str, columns: Collection[str], rename: Callable[[str], str] = str) -> tuple[str | None, str]:
    """The column holding the start of ``rest`` (the longest match: ``source_table`` before ``source``),
    and what remains inside it (``value_rules.0.operation`` inside a ``transform`` JSON cell)."""
    parts = [p for p in re.split(r"[.\[\]]", rest) if p]
    for end in range(len(parts), 0, -1):
        if any(p.isdigit() for p in parts[:end]):
            continue
        column = rename("_".join(parts[:end]))
        if column in columns:
            return column, ".".join(parts[end:])
    return None, rest.lstrip(".")
