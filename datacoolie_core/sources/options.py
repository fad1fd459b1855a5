"""``read_options`` from metadata -> keyword arguments of a Polars reader (DataCoolie S-14).

DataCoolie metadata carries Spark-style CSV keys (``sep``, ``header``, ``quote``, ``inferSchema``)
and string booleans (``"true"``); those are translated. Every other key is passed to Polars as
written, but checked first: an unknown key is an error naming the closest valid one, where
DataCoolie would fail deep inside the read (or ignore it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from datacoolie_core.errors import SourceError
from datacoolie_core.models.coerce import did_you_mean, to_bool

CSV_ALIASES = {"sep": "separator", "delimiter": "separator", "header": "has_header", "quote": "quote_char",
               "inferschema": "infer_schema"}  # fmt: skip
"""Spark/DataCoolie CSV option names (matched case-insensitively) -> Polars ``scan_csv`` names."""

_RESERVED = frozenset({"source", "include_file_paths", "hive_partitioning"})
"""Arguments the reader sets itself."""


def polars_options(
    reader: Callable[..., Any], options: Mapping[str, Any], *, aliases: Mapping[str, str] | None = None, label: str
) -> dict[str, Any]:
    """``options`` as keyword arguments of ``reader``: aliases applied, string booleans coerced.

    Raises:
        SourceError: a key ``reader`` does not take, or a boolean option that is not a boolean.
    """
    parameters = {
        name: p for name, p in inspect.signature(reader).parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    valid = [name for name in parameters if not name.startswith("_") and name not in _RESERVED]
    result: dict[str, Any] = {}
    for key, value in options.items():
        name = (aliases or {}).get(key.lower(), key)
        if name not in valid:
            raise SourceError(
                f"{label}: read option '{key}' is not an option of polars.{reader.__name__}"
                f"{did_you_mean(key, [*valid, *(aliases or {})])}; valid options: {', '.join(valid)}"
            )
        result[name] = _coerce(value, parameters[name], key, label)
    return result


def _coerce(value: Any, parameter: inspect.Parameter, key: str, label: str) -> Any:
    if not isinstance(value, str) or not str(parameter.annotation).startswith("bool"):
        return value
    try:
        return to_bool(value)
    except ValueError as e:
        raise SourceError(f"{label}: read option '{key}' must be true or false, got {value!r}") from e
