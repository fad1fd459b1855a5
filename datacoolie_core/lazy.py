"""Loading on first use: package re-exports (PEP 562) and registries of ``"module:attr"`` entries.

Every ``datacoolie`` command, Dagster step subprocess and code-server start pays for what
``import datacoolie_core`` loads. Polars, sqlglot, deltalake and the pydantic models cost most of
two seconds, so package ``__init__``s and the reader/writer registries name where things live and
import them when first asked for. ``tests/test_import_cost.py`` pins what stays unloaded.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def load(target: str) -> Any:
    """The object ``"module:attr"`` names, importing the module."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for a package whose public names load on first use.

    Args:
        package: the package's ``__name__``.
        exports: public name -> the module defining it (under the same name).

    Example::

        __getattr__, __dir__ = lazy_exports(__name__, {"DataFlow": "datacoolie_core.models.dataflow"})
    """
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value  # once: later lookups are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__


Entry = str | tuple[str, ...]
"""A registry entry: ``"module:Class"``, or ``("module:Class", *args)`` to construct it with arguments."""


class LazyRegistry(Mapping[str, T], Generic[T]):
    """Names -> plugin instances, each built on its first lookup from an :data:`Entry`.

    Iterating, ``in`` and ``len`` read only the names: listing the known formats in an error
    imports nothing. Entries that are equal share one instance (every file format one
    ``FileReader``), as a dict of shared instances would.
    """

    def __init__(self, entries: Mapping[str, Entry]) -> None:
        self._entries = {name: (entry,) if isinstance(entry, str) else entry for name, entry in entries.items()}
        self._made: dict[tuple[str, ...], T] = {}
        self._lock = threading.Lock()  # dataflows run in threads: one instance per entry, however they race

    def __getitem__(self, name: str) -> T:
        entry = self._entries[name]
        with self._lock:
            if entry not in self._made:
                target, *args = entry
                self._made[entry] = load(target)(*args)
            return self._made[entry]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"LazyRegistry({list(self._entries)})"
