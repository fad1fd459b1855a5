"""Bounds on a metadata document: file size, nesting depth, YAML alias expansion.

A 1 KB YAML file with nested aliases (a "billion laughs" bomb) stands for billions of nodes once
anything walks it, and a JSON document nested 100,000 deep exhausts Python's recursion. The limits
below are far above any real metadata (a thousand dataflows is a few MB, nesting rarely passes 10)
and are checked *before* anything recursive or expanding runs, so a violating document fails with a
:class:`~datacoolie_core.errors.MetadataError` in well under a second.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

MAX_FILE_BYTES = 50 * 1024 * 1024
"""Largest metadata file read (50 MiB)."""
MAX_DEPTH = 64
"""Deepest nesting of objects/lists (the document root is depth 1)."""
MAX_NODES = 1_000_000
"""Most YAML nodes once aliases are expanded (each use of an alias counts its whole subtree)."""

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


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


class LimitError(yaml.MarkedYAMLError):
    """A YAML document over a bound (depth or alias expansion); carries the position."""


class BoundedComposer:
    """Mixin for a PyYAML loader: refuses documents too deep or too large once aliases expand.

    PyYAML shares one node for every use of an anchor, so the composed graph stays small while the
    document it means grows exponentially. Each node's *expanded* size (itself plus its children's
    expanded sizes) is computed once, bottom-up, as the composer finishes it; an alias costs its
    anchor's size. The total is refused past ``MAX_NODES`` long before any walker would expand it.
    """

    max_depth = MAX_DEPTH
    max_nodes = MAX_NODES

    def compose_document(self) -> Any:
        self._depth = 0
        self._sizes: dict[int, int] = {}
        return super().compose_document()  # type: ignore[misc]

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):  # type: ignore[attr-defined]
            mark = self.peek_event().start_mark  # type: ignore[attr-defined]
            node = super().compose_node(parent, index)  # type: ignore[misc]
            if id(node) not in self._sizes:
                raise LimitError(None, None, "an alias refers to a node that contains it (recursive)", mark)
            return node
        self._depth += 1
        if self._depth > self.max_depth:
            mark = self.peek_event().start_mark  # type: ignore[attr-defined]
            raise LimitError(None, None, f"the document nests deeper than {self.max_depth} levels", mark)
        try:
            node = super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth -= 1
        size = 1 + sum(self._sizes[id(child)] for child in _children(node))
        if size > self.max_nodes:
            raise LimitError(
                None,
                None,
                f"the document expands to more than {self.max_nodes:,} nodes through its aliases "
                "(an alias bomb?); write the values out or use fewer aliases",
                node.start_mark,
            )
        self._sizes[id(node)] = size
        return node


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
