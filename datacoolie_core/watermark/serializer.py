"""Watermark values <-> the JSON text a watermark provider stores.

The stored form is a flat JSON object ``{column: value}`` with sorted keys. JSON has no temporal,
decimal or binary types, so those values are written as single-key *tag objects*
(``{"__datetime__": "2026-03-02T08:15:00.123456+01:00"}``) and decoded back to the exact Python
value. Plain JSON strings stay strings: a DataCoolie 0.1.7 file such as
``{"changed_at": "2026-03-02T08:15:00"}`` reads back as a ``str`` (the merge and the readers then
treat it as a lexically ordered value until the column gets a schema hint).

A corrupt watermark is never mistaken for "first run": re-reading everything would silently
duplicate data, so every way the text can be damaged raises :class:`WatermarkError`.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Mapping
from datetime import date, datetime, time
from decimal import Decimal, InvalidOperation
from typing import Any

from datacoolie_core.errors import WatermarkError

#: The one reserved-looking key a user watermark may carry (DataCoolie's date-folder readers store
#: their position under it), and only at the root.
DATE_FOLDER_PARTITION_KEY = "__date_folder_partition__"

_DATETIME, _DATE, _TIME, _DECIMAL, _BINARY = (
    "__datetime__",
    "__date__",
    "__time__",
    "__decimal__",
    "__binary__",
)


def state_fix(dataflow: str | None = None) -> str:
    """The way out of damaged state, named by every state error (see ``docs/state.md``)."""
    args = f"--metadata <metadata file> --dataflow {dataflow or '<name>'}"
    return (
        f"inspect it with `datacoolie state show {args}`, then `datacoolie state repair {args} --confirm` "
        f"rebuilds it from the destination's Delta log, or `datacoolie state reset {args} --confirm` "
        "reloads everything on purpose (add --state-path or --state-url if your runs use one)"
    )


STATE_FIX = state_fix()

_CORRUPT_FIX = (
    f"It is NOT treated as a first run, because reading everything again would duplicate data. Fix: {STATE_FIX}."
)


def _is_reserved(key: str) -> bool:
    """A key shaped like a tag (``__name__``); ``__file_modification_time`` is not one."""
    return len(key) > 4 and key.startswith("__") and key.endswith("__")


# --------------------------------------------------------------------------------------------
# serialize


def serialize_watermark(value: Mapping[str, Any]) -> str:
    """Encode a watermark mapping as compact JSON with sorted keys.

    Raises :class:`WatermarkError` for anything that would not round-trip exactly: non-finite
    floats or decimals, tuples, sets and other unknown types, non-string keys, and keys shaped like
    a reserved tag (except ``__date_folder_partition__`` at the root).
    """
    if not isinstance(value, Mapping):
        raise WatermarkError(f"A watermark must be a mapping of column to value, got {type(value).__name__}")
    encoded = _encode_mapping(value, where="", root=True)
    # allow_nan=False is a second guard: _encode already rejected every non-finite float.
    return json.dumps(encoded, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _encode_mapping(value: Mapping[Any, Any], *, where: str, root: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise WatermarkError(
                f"Cannot serialize watermark: key {key!r} at {where or 'root'} is a "
                f"{type(key).__name__}; watermark keys must be strings"
            )
        if _is_reserved(key) and not (root and key == DATE_FOLDER_PARTITION_KEY):
            raise WatermarkError(
                f"Cannot serialize watermark: key {key!r} at {where or 'root'} looks like a reserved "
                "type tag (starts and ends with '__'); rename the column"
            )
        out[key] = _encode(item, f"{where}.{key}" if where else key)
    return out


def _encode(value: Any, where: str) -> Any:
    """Return the JSON-ready form of one value; ``where`` names it in error messages."""
    # bool/int/str/None are native JSON (bool is an int subclass and json keeps it a bool).
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _unserializable(where, value, "non-finite floats cannot be ordered or stored as JSON")
        return value
    # datetime before date: datetime is a subclass of date.
    if isinstance(value, datetime):
        return {_DATETIME: value.isoformat()}
    if isinstance(value, date):
        return {_DATE: value.isoformat()}
    if isinstance(value, time):
        return {_TIME: value.isoformat()}
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise _unserializable(where, value, "non-finite decimals cannot be ordered")
        return {_DECIMAL: str(value)}
    if isinstance(value, bytes):
        return {_BINARY: base64.b64encode(value).decode("ascii")}
    if isinstance(value, Mapping):
        return _encode_mapping(value, where=where, root=False)
    if isinstance(value, list):
        return [_encode(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise _unserializable(where, value, "unsupported type (use a list instead of a tuple or set)")


def _unserializable(where: str, value: Any, why: str) -> WatermarkError:
    return WatermarkError(f"Cannot serialize watermark value {where!r} = {value!r} ({type(value).__name__}): {why}")


# --------------------------------------------------------------------------------------------
# deserialize


def deserialize_watermark(text: str | None) -> dict[str, Any] | None:
    """Decode stored watermark text.

    Only ``None`` (nothing stored) returns ``None``, the first run. Anything else must be a JSON
    object with at least one non-null value and well-formed tags: an empty file, blank text, ``{}``,
    ``null`` or all values null is damage (a truncated or hand-emptied file), never "read
    everything again", so :class:`WatermarkError` says the watermark is corrupt and how to fix it.
    """
    if text is None:
        return None
    if not text.strip():
        raise _corrupt("the file is empty" if not text else "the file is blank (only whitespace)")
    try:
        raw = json.loads(text, parse_constant=_reject_constant, parse_float=_parse_float)
    except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
        raise _corrupt(f"not valid JSON ({e})") from e
    if not isinstance(raw, dict):
        raise _corrupt(f"expected a JSON object of column -> value, got JSON {type(raw).__name__}")
    decoded = {key: _decode_root_item(key, item) for key, item in raw.items()}
    if is_watermark_empty(decoded):
        raise _corrupt(f"it holds no value ({text.strip()[:60]}: no column has a value)")
    return decoded


def is_watermark_empty(value: Mapping[str, Any] | None) -> bool:
    """True when there is nothing to filter on: ``None``, ``{}`` or every value ``None``."""
    return value is None or all(item is None for item in value.values())


def _decode_root_item(key: str, item: Any) -> Any:
    if _is_reserved(key) and key != DATE_FOLDER_PARTITION_KEY:
        raise _corrupt(f"reserved key {key!r} at the root (a tagged value where columns belong)")
    return _decode(item, key)


def _decode(value: Any, where: str) -> Any:
    if isinstance(value, list):
        return [_decode(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if not isinstance(value, dict):
        return value
    tags = [key for key in value if _is_reserved(key)]
    if not tags:
        return {key: _decode(item, f"{where}.{key}") for key, item in value.items()}
    if len(value) != 1:
        raise _corrupt(f"value {where!r} mixes tag {tags[0]!r} with other keys {sorted(value)}")
    tag = tags[0]
    decoder = _DECODERS.get(tag)
    if decoder is None:
        raise _corrupt(f"value {where!r} has unknown tag {tag!r}")
    payload = value[tag]
    if not isinstance(payload, str):
        raise _corrupt(f"value {where!r}: tag {tag!r} needs a string, got JSON {type(payload).__name__}")
    try:
        return decoder(payload)
    except (ValueError, InvalidOperation) as e:
        raise _corrupt(f"value {where!r}: cannot decode {tag} {payload!r} ({e})") from e


def _decode_decimal(text: str) -> Decimal:
    result = Decimal(text)  # raises InvalidOperation on garbage
    if not result.is_finite():
        raise ValueError("non-finite decimal")
    return result


def _decode_binary(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error) as e:
        raise ValueError(f"invalid base64: {e}") from e


_DECODERS: dict[str, Callable[[str], Any]] = {
    _DATETIME: datetime.fromisoformat,
    _DATE: date.fromisoformat,
    _TIME: time.fromisoformat,
    _DECIMAL: _decode_decimal,
    _BINARY: _decode_binary,
}


def _reject_constant(name: str) -> Any:
    # json.loads accepts NaN/Infinity by default; we never write them, so they mean damage.
    raise ValueError(f"non-finite number {name}")


def _parse_float(text: str) -> float:
    result = float(text)
    if not math.isfinite(result):  # e.g. 1e400 overflows to inf
        raise ValueError(f"number {text} overflows a float")
    return result


def _corrupt(detail: str) -> WatermarkError:
    return WatermarkError(f"Watermark is corrupt: {detail}. {_CORRUPT_FIX}")
