"""The one lineage order: tables, stages, the all-stages job and ``rebuild`` all call :func:`ordered_levels`.

Built on :class:`graphlib.TopologicalSorter`; Dagster's asset graph orders the same deps (a test
checks that the two agree), and a cycle is an error naming it rather than a silent guess.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from graphlib import CycleError, TopologicalSorter
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


class LineageCycleError(ValueError):
    """Nodes that read each other in a cycle, so no order runs each after what it reads."""

    def __init__(self, cycle: Sequence[Hashable]) -> None:
        self.cycle = list(cycle)
        """The cycle as graphlib reports it: first node repeated last (``a -> b -> a``)."""
        path = " -> ".join(_name(node) for node in self.cycle)
        super().__init__(
            f"lineage cycle: {path} (each is read by the next), so none of them can run first. "
            "Break the cycle: make one of these dataflows read a source outside it"
        )


def ordered_levels(graph: Mapping[K, Iterable[K]]) -> list[list[K]]:
    """The lineage order every layer uses: ``graph`` maps a node to the nodes it reads.

    Level ``n`` holds the nodes whose longest chain of reads within ``graph`` has length ``n``, so
    each node comes after everything it reads; nodes read but not in ``graph`` and self-reads are
    ignored. Within a level, nodes keep ``graph``'s order.

    Raises:
        LineageCycleError: naming a cycle of the graph.
    """
    position = {node: index for index, node in enumerate(graph)}
    sorter = TopologicalSorter({n: [u for u in reads if u in position and u != n] for n, reads in graph.items()})
    try:
        sorter.prepare()
    except CycleError as error:
        raise LineageCycleError(error.args[1]) from None
    levels: list[list[K]] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=position.__getitem__)
        levels.append(ready)
        sorter.done(*ready)
    return levels


def _name(node: Hashable) -> str:
    to_user_string = getattr(node, "to_user_string", None)  # an asset key
    return to_user_string() if callable(to_user_string) else str(node)


__all__ = ["LineageCycleError", "ordered_levels"]
