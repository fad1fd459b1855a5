"""The cyclic garbage collector paused while a large, long-lived structure is built.

Validating a metadata document allocates a few hundred thousand objects (models, their fields,
validation state) and frees almost none: every full collection meanwhile walks them all for
nothing, and there are more of those the more objects there are, so the cost grows faster than
the document (at 10,000 dataflows about half of ``datacoolie validate``'s CPU time). Reference
counting still frees everything that is not a cycle; cycles left are collected after.

The driver's import is paused for the same reason: the engine's modules leave ~15,000 objects
(models, classes, compiled patterns) that live as long as the process. Collected during the import
they took some forty collections that freed nothing, and left CPython's next full collection (every
object of the process, ~25 ms after Polars and deltalake) due within the caller's first dataflow.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block; restore its previous state, also on error."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
