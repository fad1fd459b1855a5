"""PyYAML loading for metadata files: duplicate keys refused, timestamps kept as text, sizes bounded.

A 1 KB YAML file with nested aliases (a "billion laughs" bomb) stands for billions of nodes once
anything walks it. The composer refuses it while composing, before any construction, validation
or ``repr`` could expand it.
"""

from __future__ import annotations

from typing import Any

import yaml

from datacoolie_core.errors import MetadataError, MetadataIssue
from datacoolie_core.input_bounds import MAX_DEPTH, MAX_NODES


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


class StrictLoader(BoundedComposer, yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys, keeps timestamps as strings and bounds depth and aliases."""


def _construct_mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"key '{key}' appears more than once in this mapping; keep one", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=deep)
    return mapping


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def parse_yaml(text: str, file: str) -> Any:
    """``text`` parsed by :class:`StrictLoader`; a YAML error is a :class:`MetadataError` with its position."""
    try:
        document = yaml.load(text, Loader=StrictLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise MetadataError([MetadataIssue("$", f"invalid YAML{where}: {problem}", file=file)], file=file) from e
    return {} if document is None else document
