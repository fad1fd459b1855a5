"""Secrets never reach Dagster: the boundary between our step bodies and Dagster's storage.

Dagster serializes a step's exception (message, stack, every chained cause) into the event log,
the run failure message and the compute logs. :func:`masked_step` wraps a step body:

* an error whose text (chain included) holds a registered secret is replaced by one built from
  masked text only and raised ``from None``, so Dagster never sees the original. A ``dg.Failure``
  stays a ``dg.Failure`` (description and metadata masked); anything else becomes a
  :class:`~datacoolie_core.errors.MaskedError`. Errors without a secret pass untouched;
* ``sys.stdout`` / ``sys.stderr`` are masked while the body runs (the compute logs capture them).

:func:`masked_events` masks the metadata of every event a body yields. Log records are masked at
creation by :mod:`datacoolie_core.redaction` (``context.log`` included).
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import dagster as dg

from datacoolie_core.api import MaskedError, mask, mask_data, masked_streams

Event = TypeVar("Event")


@contextmanager
def masked_step() -> Iterator[None]:
    """Mask the body's output streams; re-raise an error holding a secret as a masked one, ``from None``."""
    try:
        with masked_streams():
            yield
    except Exception as error:
        replacement = masked_replacement(error)
        if replacement is None:
            raise
        raise replacement from None


def masked_replacement(error: Exception) -> Exception | None:
    """The masked stand-in for ``error``, or ``None`` when its whole traceback holds no secret."""
    text = "".join(traceback.format_exception(error))
    if mask(text) == text:
        return None
    if isinstance(error, dg.Failure):
        return dg.Failure(
            description=mask(error.description or ""),
            metadata=mask_metadata(error.metadata),
            allow_retries=error.allow_retries,
        )
    return MaskedError.of(error)


def masked_events(events: Iterable[Event]) -> Iterator[Event]:
    """``events`` with the metadata of each (and of a result's check results) masked."""
    for event in events:
        yield mask_event(event)


def mask_event(event: Any) -> Any:
    """``event`` itself when its metadata holds no secret, else a copy with masked metadata."""
    if isinstance(event, dg.MaterializeResult):
        checks = [mask_event(c) for c in event.check_results or ()]
        metadata = mask_metadata(event.metadata)
        if metadata == event.metadata and all(a is b for a, b in zip(checks, event.check_results or (), strict=True)):
            return event
        return dg.MaterializeResult(
            asset_key=event.asset_key,
            metadata=metadata,
            check_results=checks,
            data_version=event.data_version,
            tags=event.tags,
            value=event.value,
        )
    if isinstance(event, dg.AssetMaterialization | dg.AssetCheckResult | dg.AssetObservation | dg.Output):
        metadata = mask_metadata(event.metadata)
        return event if metadata == event.metadata else event.with_metadata(metadata or {})
    return event


def mask_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A copy of Dagster metadata with every value (and key) masked; ``None`` stays ``None``."""
    if metadata is None:
        return None
    return {mask(key): _mask_value(value) for key, value in metadata.items()}


def _mask_value(value: Any) -> Any:
    if isinstance(value, str | list | dict):  # raw values; a MetadataValue may be a tuple: not here
        return mask_data(value)
    shown = str(value.value if isinstance(value, dg.MetadataValue) else value)
    if mask(shown) == shown:
        return value
    if isinstance(value, dg.JsonMetadataValue):
        return dg.MetadataValue.json(mask_data(value.data))
    return dg.MetadataValue.text(mask(shown))  # a path, URL or table schema holding a secret: text only
