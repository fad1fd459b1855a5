"""One builder for the sensing sensors, and the compact cursor they share.

The source, partition and watermark sensors differ in what they read, not in how they talk to
Dagster: each evaluation returns a :class:`SensorOutcome` (run requests, the next cursor, a skip
reason a person can read, log lines) and :func:`build_sensing_sensor` turns it into a
``SensorResult`` the same way for all three.

Cursors are JSON documents packed with zlib and base64 (:func:`pack_cursor`): at 10,000
dataflows they stay far below the 128 KiB one command-line argument may hold, so
``dagster sensor cursor NAME --set <cursor>`` can put back a cursor copied from the UI.
:func:`unpack_cursor` reads both the packed form and the plain JSON cursors written before.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

PACKED_PREFIX = "z:"
"""Marks a packed cursor (plain JSON cursors start with ``{``)."""


@dataclass(frozen=True)
class SensorOutcome:
    """What one evaluation of a sensing sensor decided."""

    run_requests: Sequence[dg.RunRequest]
    cursor: str
    skip_reason: str
    """Shown on a tick that requests nothing; it names what was unreadable or held."""
    notes: Sequence[str] = ()
    """Logged (info) on a tick that requests runs: what the skip reason would have said."""
    warnings: Sequence[str] = ()
    """Logged (warning) on a tick that requests runs: sources that could not be read."""
    asset_events: Sequence[dg.AssetObservation] = ()


def build_sensing_sensor(
    *,
    name: str,
    description: str,
    selection: Iterable[dg.AssetKey],
    asset_job: str | None,
    minimum_interval_seconds: int,
    default_status: dg.DefaultSensorStatus,
    evaluate: Callable[[dg.SensorEvaluationContext], SensorOutcome],
) -> dg.SensorDefinition:
    """A sensor whose ticks are ``evaluate``'s outcomes.

    ``asset_job``: the NAME of an asset job holding every table in ``selection`` for the runs to
    launch under (the code location passes ``__ASSET_JOB``, Dagster's implicit one); without it the
    sensor targets ``selection`` directly and Dagster builds an anonymous job over those tables,
    as costly to load as the implicit job over the same tables.
    """
    target: dict[str, Any] = {"job_name": asset_job} if asset_job else {"target": dg.AssetSelection.assets(*selection)}

    @dg.sensor(
        name=name,
        **target,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=description,
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        outcome = evaluate(context)
        events = list(outcome.asset_events)
        if not outcome.run_requests:
            return dg.SensorResult(skip_reason=outcome.skip_reason, cursor=outcome.cursor, asset_events=events)
        for note in outcome.notes:
            context.log.info(note)
        for warning in outcome.warnings:
            context.log.warning(warning)
        return dg.SensorResult(run_requests=list(outcome.run_requests), cursor=outcome.cursor, asset_events=events)

    return _sensor


def pack_cursor(document: Any) -> str:
    """``document`` as compact JSON, zlib-compressed and base64-encoded behind :data:`PACKED_PREFIX`."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return PACKED_PREFIX + base64.b64encode(zlib.compress(text.encode(), 9)).decode("ascii")


def unpack_cursor(cursor: str) -> Any:
    """The JSON document of a packed cursor, or of a plain JSON one.

    Raises:
        ValueError: neither (the caller names the sensor and the fix).
    """
    if not cursor.startswith(PACKED_PREFIX):
        return json.loads(cursor)
    try:
        text = zlib.decompress(base64.b64decode(cursor[len(PACKED_PREFIX) :].strip(), validate=True))
    except (binascii.Error, zlib.error) as e:
        raise ValueError(f"not a packed cursor: {e}") from e
    return json.loads(text)
