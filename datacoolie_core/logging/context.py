"""The dataflow a log record belongs to, carried by a context variable.

The driver wraps each dataflow execution in :func:`dataflow_context` (inside the worker thread:
a thread pool does not copy the submitting thread's context), and the system logger stamps every
record emitted meanwhile with that id.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

current_dataflow_id: ContextVar[str | None] = ContextVar("datacoolie_dataflow_id", default=None)
"""Id of the dataflow being executed in this context; ``None`` outside any dataflow."""


@contextmanager
def dataflow_context(dataflow_id: str | None) -> Iterator[None]:
    """Attribute log records emitted inside the block to ``dataflow_id``; restores the outer value."""
    token = current_dataflow_id.set(dataflow_id)
    try:
        yield
    finally:
        current_dataflow_id.reset(token)
