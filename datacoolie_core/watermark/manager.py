"""The watermark manager: the only component that knows how watermarks are encoded.

Providers (files, a metadata database, ...) store opaque text per dataflow; the manager turns it
into values, merges new candidates so a watermark never moves backward, and writes the result
under the provider's lock.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

from datacoolie_core.errors import WatermarkError
from datacoolie_core.watermark.merge import merge_watermarks
from datacoolie_core.watermark.serializer import (
    deserialize_watermark,
    is_watermark_empty,
    serialize_watermark,
)

_T = TypeVar("_T")


@runtime_checkable
class WatermarkStorage(Protocol):
    """Where watermarks live (DataCoolie ADR-0004, "raw JSON provider contract").

    A provider stores and returns the serialized text exactly as given, keyed by dataflow id. It
    never parses, validates or rewrites it: only :class:`WatermarkManager` knows the encoding, so
    every provider reads every other provider's data the same way.

    * ``get_watermark`` returns the stored text, or ``None`` when nothing is stored yet.
    * ``update_watermark`` replaces the stored text atomically (readers see the old or the new
      text, never a mix); ``job_id`` / ``dataflow_run_id`` are for the provider's audit trail.
    * ``watermark_lock`` excludes every other ``watermark_lock`` holder for the same dataflow
      id, across threads and processes, for one read-merge-write; it need not be re-entrant.
    """

    def get_watermark(self, dataflow_id: str) -> str | None: ...

    def update_watermark(
        self,
        dataflow_id: str,
        value: str,
        *,
        job_id: str | None = None,
        dataflow_run_id: str | None = None,
    ) -> None: ...

    def watermark_lock(self, dataflow_id: str) -> contextlib.AbstractContextManager[None]: ...


class WatermarkManager:
    """Reads, merges and saves watermarks through a :class:`WatermarkStorage` provider."""

    def __init__(self, provider: WatermarkStorage) -> None:
        self._provider = provider

    def get_watermark(self, dataflow_id: str) -> dict[str, Any] | None:
        """Stored watermark of ``dataflow_id``; ``None`` when there is none (first run).

        A corrupt or unreadable stored value raises :class:`WatermarkError` naming the dataflow.
        """
        text = _with_dataflow(dataflow_id, self._provider.get_watermark, dataflow_id)
        try:
            return deserialize_watermark(text)
        except WatermarkError as e:  # name the file only when it is damaged (looking it up costs)
            raise WatermarkError(e.message, dataflow_id=dataflow_id, path=self.location(dataflow_id)) from e

    def location(self, dataflow_id: str) -> str | None:
        """Where the provider keeps the watermark (a file path, a table and key), for messages; ``None`` if unknown."""
        where = getattr(self._provider, "watermark_location", None) or getattr(self._provider, "watermark_path", None)
        return str(where(dataflow_id)) if callable(where) else None

    def replace_watermark(self, dataflow_id: str, value: Mapping[str, Any] | None) -> None:
        """Store ``value`` as is, even backward, or remove it (``None``): for a deliberate repair only.

        Raises:
            WatermarkError: the provider cannot remove a watermark (it has no ``delete_watermark``).
        """
        if value is not None:
            text = _with_dataflow(dataflow_id, serialize_watermark, value)
            with self._provider.watermark_lock(dataflow_id):
                _with_dataflow(dataflow_id, self._provider.update_watermark, dataflow_id, text)
            return
        delete = getattr(self._provider, "delete_watermark", None)
        if delete is None:
            raise WatermarkError(
                f"{type(self._provider).__name__} cannot remove a watermark; remove it in the provider's storage",
                dataflow_id=dataflow_id,
            )
        with self._provider.watermark_lock(dataflow_id):
            _with_dataflow(dataflow_id, delete, dataflow_id)

    def save_watermark(
        self,
        dataflow_id: str,
        candidate: Mapping[str, Any],
        *,
        job_id: str | None = None,
        dataflow_run_id: str | None = None,
    ) -> dict[str, Any]:
        """Merge ``candidate`` into the stored watermark and return the merged value.

        The candidate is validated (serialized) before anything is touched, so an unserializable
        value never leaves a partial write. The read-merge-write happens under the provider's
        lock and writes only when the merged value differs from the stored one. An empty
        candidate (nothing read) writes nothing and returns the stored value, or ``{}``.
        """
        candidate = dict(candidate)
        _with_dataflow(dataflow_id, serialize_watermark, candidate)
        if is_watermark_empty(candidate):
            return self.get_watermark(dataflow_id) or {}
        with self._provider.watermark_lock(dataflow_id):
            stored = self.get_watermark(dataflow_id)
            merged = _with_dataflow(dataflow_id, merge_watermarks, stored, candidate)
            merged_text = _with_dataflow(dataflow_id, serialize_watermark, merged)
            # Compare canonical text, not dicts: 1 == True == 1.0 in Python, yet they are
            # different watermarks.
            if stored is None or merged_text != serialize_watermark(stored):
                update = functools.partial(
                    self._provider.update_watermark, job_id=job_id, dataflow_run_id=dataflow_run_id
                )
                _with_dataflow(dataflow_id, update, dataflow_id, merged_text)
        return merged


def _with_dataflow(dataflow_id: str, func: Callable[..., _T], *args: Any) -> _T:
    """Call ``func``; a :class:`WatermarkError` that names no dataflow is re-raised naming it."""
    try:
        return func(*args)
    except WatermarkError as e:
        if e.dataflow_id:
            raise
        raise WatermarkError(e.message, dataflow_id=dataflow_id, path=e.path) from e
