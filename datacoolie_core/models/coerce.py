"""DataCoolie's input coercions, as pure functions.

DataCoolie metadata is written by hand, in Excel and by generators, so several fields accept more
than one spelling: lists as comma strings or JSON strings, booleans as ``"yes"``, objects as JSON
text. These functions accept exactly those spellings and raise ``ValueError`` (which pydantic turns
into a located validation error) for anything else, never ``TypeError``.
"""

from __future__ import annotations

import functools
import json
import re
import reprlib
import uuid
from collections.abc import Iterable
from typing import Any

from datacoolie_core.input_bounds import loads_bounded
from datacoolie_core.suggestions import did_you_mean

NAMESPACE = uuid.UUID("da7ac001-e000-4000-8000-000000000000")
"""Namespace of DataCoolie's deterministic ids: ``uuid5(NAMESPACE, name)``."""

_TRUE = frozenset({"true", "yes", "1", "on", "t", "y"})
_FALSE = frozenset({"false", "no", "0", "off", "f", "n", ""})


def name_to_uuid(name: str) -> str:
    """Deterministic id of a connection or dataflow name (DataCoolie M-03)."""
    return str(uuid.uuid5(NAMESPACE, name))


_SHORT = reprlib.Repr()
"""A repr that stops after a few items and two levels: a huge (alias-expanded) value stays cheap."""
_SHORT.maxlevel, _SHORT.maxdict, _SHORT.maxlist, _SHORT.maxstring, _SHORT.maxother = 2, 4, 4, 60, 60


def describe(value: Any) -> str:
    """A short description of a value for error messages: ``int 5``, ``str 'x'``.

    Never walks more than a few items of a container, so describing a huge value costs nothing.
    """
    text = _SHORT.repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def ensure_list(value: Any) -> list[Any]:
    """DataCoolie's ``ensure_list`` (M-04).

    ``None`` -> ``[]``; a list stays; a string is trimmed, ``""`` -> ``[]``, ``"[...]"`` is parsed as
    a JSON array, anything else is split on ``,`` with items stripped and empties dropped; any other
    scalar becomes a one-item list.
    """
    if value is None:
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        if text.startswith("["):
            try:
                parsed = loads_bounded(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"looks like a JSON array but does not parse: {e.msg}") from None
            if not isinstance(parsed, list):
                raise ValueError("expected a JSON array")
            return parsed
        return [item.strip() for item in text.split(",") if item.strip()]
    if isinstance(value, (dict, tuple, set)):
        raise ValueError(f"expected a list or a comma-separated string, got {describe(value)}")
    return [value]


def to_bool(value: Any) -> bool:
    """DataCoolie's ``convert_to_bool`` (M-05), except that ``None`` is not silently false.

    Accepts a bool, the ints 0/1, and (case-insensitive, trimmed) ``true/yes/1/on/t/y`` or
    ``false/no/0/off/f/n/""``.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    raise ValueError(f"expected a boolean (true/false, yes/no, 1/0), got {describe(value)}")


def parse_json_object(value: Any) -> dict[str, Any]:
    """An object field that may also be written as JSON text (M-06): ``None``/blank -> ``{}``."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            parsed = loads_bounded(value)
        except json.JSONDecodeError as e:
            raise ValueError(f"expected an object or JSON object text; the text does not parse: {e.msg}") from None
        if not isinstance(parsed, dict):
            raise ValueError(f"expected a JSON object, the text holds {describe(parsed)}")
        return parsed
    raise ValueError(f"expected an object, got {describe(value)}")


def ensure_choice(value: Any, choices: Iterable[str], what: str) -> str:
    """Lower-case and strip ``value`` and check it is one of ``choices``, suggesting the closest."""
    options = list(choices)
    if not isinstance(value, str):
        raise ValueError(f"expected one of {', '.join(options)}; got {describe(value)}")
    text = value.strip().lower()
    if text not in options:
        raise ValueError(f"unknown {what} '{value}'{did_you_mean(text, options)} (known: {', '.join(options)})")
    return text


def strip_or_none(value: Any) -> Any:
    """Strip a string; blank becomes ``None``. Other values pass through to type validation."""
    if isinstance(value, str):
        return value.strip() or None
    return value


_PATH_CACHE = 1 << 16
"""Paths remembered by :func:`build_path` and :func:`normalize_path`: a few per dataflow."""

_PROTOCOL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)(.*)$")


@functools.lru_cache(maxsize=_PATH_CACHE)
def normalize_path(path: str) -> str:
    """DataCoolie's ``normalize_path`` (M-07): ``\\`` -> ``/``, collapse ``//``, strip trailing ``/``.

    A protocol prefix (``s3://``) keeps its double slash. Cached, as :func:`build_path`.
    """
    text = path.replace("\\", "/")
    match = _PROTOCOL.match(text)
    prefix, rest = (match.group(1), match.group(2)) if match else ("", text)
    rest = re.sub("/{2,}", "/", rest)
    if len(rest) > 1:
        rest = rest.rstrip("/")
    return prefix + rest


@functools.lru_cache(maxsize=_PATH_CACHE)
def build_path(*parts: str | None) -> str:
    """DataCoolie's ``build_path``: skip empty parts, keep the first part's leading ``/``.

    Cached (a pure function of its strings): a destination's path is derived from its parts each
    time it is asked for, about ten times per dataflow while a code location loads.
    """
    kept = [p for p in parts if p]
    if not kept:
        return ""
    head, *tail = kept
    pieces = [head.rstrip("/") or head] + [p.strip("/") for p in tail if p.strip("/")]
    return normalize_path("/".join(pieces))
