"""Bounds on what metadata may make the engine parse or plan: file size, nesting, YAML aliases, replay chunks.

A 1 KB YAML file with nested aliases stands for billions of nodes, and a JSON document nested
100,000 deep exhausts Python's recursion. The limits are far above any real metadata (a thousand
dataflows is a few MB, nesting rarely passes 10) and are checked *before* anything recursive or
expanding runs, so a violating document fails with a clear error in well under a second.
This module imports nothing of the package, so models and loaders alike can use it.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_FILE_BYTES = 50 * 1024 * 1024
"""Largest metadata file read (50 MiB)."""
MAX_DEPTH = 64
"""Deepest nesting of objects/lists (the document root is depth 1)."""
MAX_NODES = 1_000_000
"""Most YAML nodes once aliases are expanded (each use of an alias counts its whole subtree)."""
MAX_REPLAY_CHUNKS = 100_000
"""Most chunks one replay may cut its range into (each chunk is a run of the dataflow); a one-minute
chunk over years would otherwise list billions of windows before the first one runs."""

_JSON_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]')
"""A JSON string (skipped whole, so brackets inside strings do not count) or a bracket."""


def json_depth_excess(text: str, limit: int = MAX_DEPTH) -> tuple[int, int] | None:
    """``(line, column)`` where ``text`` first nests deeper than ``limit``; ``None`` when it never does.

    A flat scan of strings and brackets, no recursion: it runs before ``json.loads``, whose C
    decoder recurses once per level.
    """
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            if depth > limit:
                return _line_column(text, match.start())
        elif char in "]}":
            depth -= 1
    return None


def loads_bounded(text: str) -> Any:
    """``json.loads`` for JSON text embedded in metadata (``configure`` as text, list strings).

    Raises:
        ValueError: the text nests deeper than ``MAX_DEPTH`` (checked first), or does not parse.
    """
    excess = json_depth_excess(text)
    if excess is not None:
        raise ValueError(f"the JSON text nests deeper than {MAX_DEPTH} levels (at column {excess[1]})")
    return json.loads(text)


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1
